package dynamo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
)

// TestEnsureIndexesUpgradesAnOldTable: a table kept from a version without
// the indexes (only its keys) gets every index of tabledef.Indexes, items
// already there are found through the new index, and a second call adds
// nothing.
func TestEnsureIndexesUpgradesAnOldTable(t *testing.T) {
	client := dynamotest.MustClient(t)
	ctx := t.Context()
	name := "test-ensure-indexes-" + time.Now().UTC().Format("150405.000000")
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(tabledef.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(tabledef.SortKey), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(tabledef.PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(tabledef.SortKey), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("create old table: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, client, name); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
		tabledef.PartitionKey:    &types.AttributeValueMemberS{Value: "CONN#c1"},
		tabledef.SortKey:         &types.AttributeValueMemberS{Value: "CONN"},
		tabledef.AttrConnSession: &types.AttributeValueMemberS{Value: "ses_1"},
	}})
	if err != nil {
		t.Fatalf("put connection: %v", err)
	}

	added, err := dynamo.EnsureIndexes(ctx, client, name)
	if err != nil {
		t.Fatalf("EnsureIndexes: %v", err)
	}
	var want []string
	for _, ix := range tabledef.Indexes {
		want = append(want, ix.Name)
	}
	if !slices.Equal(added, want) {
		t.Fatalf("added %v, want %v", added, want)
	}
	out, err := client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(name),
		IndexName:                 aws.String(tabledef.IndexByConnSession),
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": tabledef.AttrConnSession},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "ses_1"}},
	})
	if err != nil {
		t.Fatalf("query the new index: %v", err)
	}
	if out.Count != 1 {
		t.Errorf("the new index holds %d items of ses_1, want the 1 written before it existed", out.Count)
	}

	again, err := dynamo.EnsureIndexes(ctx, client, name)
	if err != nil || len(again) != 0 {
		t.Errorf("second EnsureIndexes added %v (err %v), want none", again, err)
	}
}

// TestEnsureIndexesLeavesACurrentTable: a table made by CreateTable needs no
// index.
func TestEnsureIndexesLeavesACurrentTable(t *testing.T) {
	table := dynamotest.MustTable(t)
	added, err := dynamo.EnsureIndexes(t.Context(), dynamotest.MustClient(t), table)
	if err != nil || len(added) != 0 {
		t.Errorf("EnsureIndexes added %v (err %v), want none", added, err)
	}
}
