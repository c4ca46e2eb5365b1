package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestReplaysNeverTakeADeliveryPastItsAttemptLimit: a replay is allowed
// while a delivery has fewer than MaxAttemptsPerDelivery attempts, and it
// starts a whole new run of the schedule; the run must still stop at the
// limit (docs/WEBHOOKS.md "Retries, failure, disabling": at most 100
// attempts in all), not add its whole schedule past it.
func TestReplaysNeverTakeADeliveryPastItsAttemptLimit(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	// Eight attempts a run, a second apart (the endpoint is never failing
	// long enough to be disabled).
	sched, _ := delivery.ParseSchedule("0s,1s,1s,1s,1s,1s,1s,1s")
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock, Schedule: sched})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	ep, err := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := pausedEvent("acct", "ses_a", 3)
	if err := engine.Accept(ctx, ev); err != nil {
		t.Fatal(err)
	}
	id := delivery.DeliveryID(ev.Time, ep.ID, ev.EventID)
	run := func() {
		for {
			job, at, ok := rec.take()
			if !ok {
				return
			}
			if at.After(clock.Now()) {
				clock.Set(at)
			}
			if err := engine.Attempt(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	for range 2 * delivery.MaxAttemptsPerDelivery {
		if _, err := svc.Retry(ctx, "acct", ep.ID, id); lifecycle.ErrorCode(err) == lifecycle.CodeConflict {
			break // the limit: no more replays
		} else if err != nil {
			t.Fatal(err)
		}
		run()
	}
	d, err := store.GetDelivery(ctx, ep.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Attempts) != delivery.MaxAttemptsPerDelivery || d.Status != delivery.StatusFailed {
		t.Errorf("after every replay allowed: %d attempts, %s; want %d, failed", len(d.Attempts), d.Status, delivery.MaxAttemptsPerDelivery)
	}
	if got := len(rcv.requests()); got != delivery.MaxAttemptsPerDelivery {
		t.Errorf("the receiver got %d requests, want %d", got, delivery.MaxAttemptsPerDelivery)
	}
}
