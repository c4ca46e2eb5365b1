package dynamo_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// t0 is the tests' fixed "now", with nanoseconds to prove they survive.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// fixture is a store on a fresh table, with the raw client for looking at
// items and indexes directly.
type fixture struct {
	store  *dynamo.Store
	client *dynamodb.Client
	table  string
}

// MustFixture returns a Store on a fresh table that is deleted after the test.
func MustFixture(tb testing.TB) fixture {
	tb.Helper()
	table := dynamotest.MustTable(tb)
	client := dynamotest.MustClient(tb)
	return fixture{store: dynamo.New(dynamo.Config{Client: client, Table: table}), client: client, table: table}
}

// runningSession and sessionID are the store contract's fixtures.
var (
	runningSession = storetest.RunningSession
	sessionID      = storetest.SessionID
)

// MustCreate creates s in the fixture's store.
func (f fixture) MustCreate(tb testing.TB, s *lifecycle.Session) {
	tb.Helper()
	if err := f.store.CreateSession(tb.Context(), s); err != nil {
		tb.Fatalf("create session %s: %v", s.ID, err)
	}
}

// MustGet reads session id from the fixture's store.
func (f fixture) MustGet(tb testing.TB, id string) *lifecycle.Session {
	tb.Helper()
	s, err := f.store.GetSession(tb.Context(), id)
	if err != nil {
		tb.Fatalf("get session %s: %v", id, err)
	}
	return s
}

// MustTransition moves s to state to at now and writes it.
func (f fixture) MustTransition(tb testing.TB, s *lifecycle.Session, to lifecycle.State, now time.Time) {
	tb.Helper()
	from := s.State
	if err := s.Transition(to, lifecycle.ReasonRequest, now, lifecycle.DefaultPolicy()); err != nil {
		tb.Fatalf("transition %s %s -> %s: %v", s.ID, from, to, err)
	}
	if err := f.store.UpdateSession(tb.Context(), s, from, lifecycle.Guard{}); err != nil {
		tb.Fatalf("update %s %s -> %s: %v", s.ID, from, to, err)
	}
}

// rawItem returns the stored item of session id as DynamoDB holds it.
func (f fixture) rawItem(tb testing.TB, id string) map[string]types.AttributeValue {
	tb.Helper()
	out, err := f.client.GetItem(tb.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{
			tabledef.PartitionKey: &types.AttributeValueMemberS{Value: "SESSION#" + id},
			tabledef.SortKey:      &types.AttributeValueMemberS{Value: "SESSION"},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		tb.Fatalf("get raw item %s: %v", id, err)
	}
	return out.Item
}

// dueEntry is one item as a due index holds it.
type dueEntry struct {
	shard int
	dueMS int64
}

// indexEntries queries a due index directly (every shard, no bound on the
// due time) and returns its entries by session id.
func (f fixture) indexEntries(tb testing.TB, index, shardAttr, dueAttr string) map[string]dueEntry {
	tb.Helper()
	entries := map[string]dueEntry{}
	for shard := range tabledef.Shards {
		expr, err := expression.NewBuilder().WithKeyCondition(expression.Key(shardAttr).Equal(expression.Value(shard))).Build()
		if err != nil {
			tb.Fatalf("build key condition: %v", err)
		}
		p := dynamodb.NewQueryPaginator(f.client, &dynamodb.QueryInput{
			TableName:                 aws.String(f.table),
			IndexName:                 aws.String(index),
			KeyConditionExpression:    expr.KeyCondition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
		for p.HasMorePages() {
			out, err := p.NextPage(tb.Context())
			if err != nil {
				tb.Fatalf("query %s shard %d: %v", index, shard, err)
			}
			for _, it := range out.Items {
				id := it["id"].(*types.AttributeValueMemberS).Value
				entries[id] = dueEntry{shard: mustNumber(tb, it[shardAttr]), dueMS: int64(mustNumber(tb, it[dueAttr]))}
			}
		}
	}
	return entries
}

func mustNumber(tb testing.TB, av types.AttributeValue) int {
	tb.Helper()
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		tb.Fatalf("attribute %#v is not a number", av)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		tb.Fatalf("attribute %q: %v", n.Value, err)
	}
	return int(v)
}

// collectDue reads every page of q and returns the session ids found, failing
// on duplicates and on pages larger than q.Limit.
func collectDue(tb testing.TB, store *dynamo.Store, q lifecycle.DueQuery) (ids map[string]bool, pages int) {
	tb.Helper()
	ids = map[string]bool{}
	for {
		page, err := store.FindDue(tb.Context(), q)
		if err != nil {
			tb.Fatalf("find due %s page %d: %v", q.Index, pages+1, err)
		}
		pages++
		if len(page.Sessions) > q.Limit {
			tb.Fatalf("page %d holds %d sessions, limit %d", pages, len(page.Sessions), q.Limit)
		}
		for _, s := range page.Sessions {
			if ids[s.ID] {
				tb.Fatalf("session %s returned twice", s.ID)
			}
			ids[s.ID] = true
		}
		if page.Cursor == "" {
			return ids, pages
		}
		if pages > 1000 {
			tb.Fatalf("find due %s never ends", q.Index)
		}
		q.Cursor = page.Cursor
	}
}
