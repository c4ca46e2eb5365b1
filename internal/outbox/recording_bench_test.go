package outbox_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
)

// BenchmarkStreamBatch publishes stream batches of 100 transitions (50
// sessions paused: running → pausing → paused) as the publisher function
// does: usage recorded on DynamoDB Local (outbox.RecordingWith: one session
// at a time, and RecordConcurrency at once with the sessions spread over 50
// accounts or all on one), then PutEvents to a counting stand-in. It
// reports the transitions per second of one batch at a time (one stream
// shard at parallelization 1) and the PutEvents calls per transition:
//
//	go test -run '^$' -bench StreamBatch -benchtime 5x ./internal/outbox/
func BenchmarkStreamBatch(b *testing.B) {
	client := dynamotest.MustClient(b)
	store := dynamo.New(dynamo.Config{Client: client, Table: dynamotest.MustTable(b)})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ conc, accounts int }{{1, 50}, {outbox.RecordConcurrency, 50}, {outbox.RecordConcurrency, 1}} {
		conc, accounts := c.conc, c.accounts
		b.Run(fmt.Sprintf("concurrency=%d/accounts=%d", conc, accounts), func(b *testing.B) {
			bus := &countingBus{}
			pub := outbox.RecordingWith(store, eventbridge.New(eventbridge.Config{Client: bus, Bus: "b"}), conc)
			transitions := 0
			b.ResetTimer()
			for n := range b.N {
				var evs []lifecycle.Event
				for v := int64(1); v <= 2; v++ {
					for i := range 50 {
						sid := fmt.Sprintf("ses_c%d_a%d_n%d_%02d", conc, accounts, n, i)
						from, to := lifecycle.StateRunning, lifecycle.StatePausing
						if v == 2 {
							from, to = lifecycle.StatePausing, lifecycle.StatePaused
						}
						evs = append(evs, lifecycle.Event{EventID: fmt.Sprintf("%s:%d", sid, v), SessionID: sid,
							AccountID: fmt.Sprintf("acct_%d", i%accounts), Provider: "e2b", From: from, To: to, Version: v,
							Reason: lifecycle.ReasonIdle, Time: t0, Since: t0.Add(-time.Minute)})
					}
				}
				done, err := outbox.Publish(b.Context(), pub, changesOf(b, evs))
				if err != nil || done != len(evs) {
					b.Fatalf("publish = %d, %v", done, err)
				}
				transitions += len(evs)
			}
			b.ReportMetric(float64(transitions)/b.Elapsed().Seconds(), "transitions/s")
			b.ReportMetric(float64(len(bus.calls))/float64(transitions), "PutEvents/transition")
		})
	}
}
