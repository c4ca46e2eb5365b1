package dynamo_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// BenchmarkRecordTransition measures RecordTransition on DynamoDB Local:
// one op is one transition of Replay (one TransactWriteItems of 2..6
// items), recorded by parallel goroutines whose sessions all belong to one
// account, so they contend on its day rows as a busy account's shards
// would. Baseline: one conditional PutItem (PutAPIKey) under the same
// load. Run: go test -run '^$' -bench RecordTransition -benchtime 100x -cpu 4 ./internal/dynamo/
func BenchmarkRecordTransition(b *testing.B) {
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(b), Table: dynamotest.MustTable(b)})
	var next atomic.Int64
	b.Run("PutItemBaseline", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				hash := fmt.Sprintf("%064d", next.Add(1))
				if err := store.PutAPIKey(b.Context(), lifecycle.APIKey{Hash: hash, AccountID: "acct-bench"}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("RecordTransition", func(b *testing.B) { recordParallel(b, store, &next) })
}

func recordParallel(b *testing.B, store *dynamo.Store, next *atomic.Int64) {
	b.RunParallel(func(pb *testing.PB) {
		var evs []lifecycle.Event
		for pb.Next() {
			if len(evs) == 0 {
				evs = storetest.Replay(storetest.SessionID(int(next.Add(1))), "acct-bench", "e2b")
			}
			if err := store.RecordTransition(b.Context(), evs[0]); err != nil {
				b.Error(fmt.Errorf("record %s: %w", evs[0].EventID, err))
				return
			}
			evs = evs[1:]
		}
	})
}
