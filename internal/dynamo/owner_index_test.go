package dynamo_test

import (
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
)

// TestOwnerIndexIsKeysOnly: the account index projects only the keys, so
// a write that keeps a session's owner keys (a heartbeat moving its idle
// deadline) consumes nothing on it, while the list still answers whole,
// current sessions (read back from the table, strongly consistent).
func TestOwnerIndexIsKeysOnly(t *testing.T) {
	f := MustFixture(t)
	ctx := t.Context()
	desc, err := f.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.table)})
	if err != nil {
		t.Fatal(err)
	}
	var projection types.ProjectionType
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == tabledef.IndexByOwner {
			projection = g.Projection.ProjectionType
		}
	}
	if got, want := projection, types.ProjectionTypeKeysOnly; got != want {
		t.Fatalf("%s projection = %q, want %q", tabledef.IndexByOwner, got, want)
	}

	s := runningSession("ses_owner", "acct_owner", t0)
	f.MustCreate(t, s)
	// A heartbeat's write, as the store makes it (PutItem of the whole
	// item), moving the idle deadline, replayed raw to read its consumed
	// capacity per index.
	item := f.rawItem(t, s.ID)
	due := mustNumber(t, item[tabledef.AttrIdleDue])
	item[tabledef.AttrIdleDue] = &types.AttributeValueMemberN{Value: strconv.Itoa(due + 60_000)}
	out, err := f.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: item,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		t.Fatal(err)
	}
	if out.ConsumedCapacity == nil {
		t.Fatal("no consumed capacity reported")
	}
	if c, ok := out.ConsumedCapacity.GlobalSecondaryIndexes[tabledef.IndexByOwner]; ok && aws.ToFloat64(c.CapacityUnits) > 0 {
		t.Errorf("a write keeping the owner keys consumed %v units on %s, want none", aws.ToFloat64(c.CapacityUnits), tabledef.IndexByOwner)
	}

	page, err := f.store.ListSessions(ctx, "acct_owner", "", 10)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(page.Sessions) != 1 {
		t.Fatalf("listed %d sessions, want 1", len(page.Sessions))
	}
	got := f.MustGet(t, s.ID)
	if l := page.Sessions[0]; l.ID != s.ID || l.Version != got.Version || !l.LastActivityAt.Equal(got.LastActivityAt) {
		t.Errorf("listed %s v%d last activity %v, want the stored %s v%d %v", l.ID, l.Version, l.LastActivityAt,
			got.ID, got.Version, got.LastActivityAt)
	}
}
