package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
)

// tableWait bounds how long CreateTable and DeleteTable wait for the table's
// status to settle. DynamoDB Local settles at once; AWS takes seconds.
const tableWait = 5 * time.Minute

// CreateTable creates the sessions table called name exactly as
// internal/dynamo/tabledef defines it: string keys pk and sk, on-demand billing,
// every index of tabledef.Indexes projecting all attributes, a stream of
// view type tabledef.StreamViewType (the outbox internal/outbox reads), and
// TTL on tabledef.TTLAttribute. It waits until the table is ACTIVE. The CDK stack
// builds the same table from the same definition. Errors: the SDK's, wrapped
// (a ResourceInUseException when the table exists).
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	attrTypes := map[string]types.ScalarAttributeType{
		tabledef.PartitionKey: types.ScalarAttributeTypeS,
		tabledef.SortKey:      types.ScalarAttributeTypeS,
	}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range tabledef.Indexes {
		gsi, keyTypes := indexSpec(ix)
		gsis = append(gsis, gsi)
		maps.Copy(attrTypes, keyTypes)
	}
	var defs []types.AttributeDefinition
	for _, name := range slices.Sorted(maps.Keys(attrTypes)) {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: attrTypes[name]})
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(tabledef.PartitionKey), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(tabledef.SortKey), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(tabledef.StreamViewType),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 500*time.Millisecond, 5*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s: %w", name, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(tabledef.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable ttl on table %s: %w", name, err)
	}
	return nil
}

// indexSpec returns ix as a GSI with its projection, and the types of its
// key attributes.
func indexSpec(ix tabledef.Index) (types.GlobalSecondaryIndex, map[string]types.ScalarAttributeType) {
	keyTypes := map[string]types.ScalarAttributeType{ix.PartitionKey: types.ScalarAttributeType(ix.PartitionType)}
	schema := []types.KeySchemaElement{{AttributeName: aws.String(ix.PartitionKey), KeyType: types.KeyTypeHash}}
	if ix.SortKey != "" {
		schema = append(schema, types.KeySchemaElement{AttributeName: aws.String(ix.SortKey), KeyType: types.KeyTypeRange})
		keyTypes[ix.SortKey] = types.ScalarAttributeType(ix.SortType)
	}
	proj := &types.Projection{ProjectionType: types.ProjectionType(ix.ProjectionType())}
	if len(ix.NonKeyAttributes) > 0 {
		proj.NonKeyAttributes = ix.NonKeyAttributes
	}
	return types.GlobalSecondaryIndex{
		IndexName:  aws.String(ix.Name),
		KeySchema:  schema,
		Projection: proj,
	}, keyTypes
}

// indexPoll is how often EnsureIndexes re-reads a new index's status.
const indexPoll = 250 * time.Millisecond

// EnsureIndexes adds to the existing table called name every index of
// tabledef.Indexes it lacks (a table kept from an older version, such as a
// local stack's data folder from before the by_conn_session index), one
// UpdateTable per index as DynamoDB requires, and waits until each is ACTIVE
// (DynamoDB backfills it from the items already there). It returns the names
// of the indexes it added, in tabledef order; none when the table is up to
// date. An index of the same name with another key schema is left alone.
// Errors: the SDK's, wrapped; an index not ACTIVE within 5 min.
func EnsureIndexes(ctx context.Context, client *dynamodb.Client, name string) ([]string, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	have := map[string]bool{}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = true
	}
	var added []string
	for _, ix := range tabledef.Indexes {
		if have[ix.Name] {
			continue
		}
		gsi, keyTypes := indexSpec(ix)
		var defs []types.AttributeDefinition
		for _, attr := range slices.Sorted(maps.Keys(keyTypes)) {
			defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(attr), AttributeType: keyTypes[attr]})
		}
		_, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: defs,
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName: gsi.IndexName, KeySchema: gsi.KeySchema, Projection: gsi.Projection,
			}}},
		})
		if err != nil {
			return added, fmt.Errorf("add index %s to table %s: %w", ix.Name, name, err)
		}
		if err := waitIndexActive(ctx, client, name, ix.Name); err != nil {
			return added, err
		}
		added = append(added, ix.Name)
	}
	return added, nil
}

// waitIndexActive polls the table until its index called index is ACTIVE,
// for at most tableWait.
func waitIndexActive(ctx context.Context, client *dynamodb.Client, table, index string) error {
	ctx, cancel := context.WithTimeout(ctx, tableWait)
	defer cancel()
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return fmt.Errorf("wait for index %s of table %s: %w", index, table, err)
		}
		for _, g := range out.Table.GlobalSecondaryIndexes {
			if aws.ToString(g.IndexName) == index && g.IndexStatus == types.IndexStatusActive {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for index %s of table %s: %w", index, table, ctx.Err())
		case <-time.After(indexPoll):
		}
	}
}

// DeleteTable deletes the table called name and waits until it is gone. A
// table that does not exist is not an error.
func DeleteTable(ctx context.Context, client *dynamodb.Client, name string) error {
	_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableNotExistsWaiter(client, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 500*time.Millisecond, 5*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableWait); err != nil {
		return fmt.Errorf("wait for table %s to go: %w", name, err)
	}
	return nil
}

// EnableStream returns the ARN of the table's stream, first enabling one of
// view type tabledef.StreamViewType when the table has none (a table made
// before streams were part of its definition, e.g. a local stack's kept
// data). Errors: the SDK's, wrapped; a stream of another view type.
func EnableStream(ctx context.Context, client *dynamodb.Client, name string) (string, error) {
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", name, err)
	}
	if spec := out.Table.StreamSpecification; spec != nil && aws.ToBool(spec.StreamEnabled) {
		if got := string(spec.StreamViewType); got != tabledef.StreamViewType {
			return "", fmt.Errorf("table %s has a %s stream; the outbox needs %s", name, got, tabledef.StreamViewType)
		}
		return aws.ToString(out.Table.LatestStreamArn), nil
	}
	up, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: aws.String(name),
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(tabledef.StreamViewType),
		},
	})
	if err != nil {
		return "", fmt.Errorf("enable stream on table %s: %w", name, err)
	}
	return aws.ToString(up.TableDescription.LatestStreamArn), nil
}
