package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestANewURLStartsANewFailureStreak: an endpoint is disabled after 5 days
// in which every attempt failed (docs/WEBHOOKS.md "Retries, failure,
// disabling"). A customer who fixes it by pointing it at a new URL must
// not inherit the old URL's streak: one failed attempt at the new URL on
// the fifth day is one failure, not five days of them.
func TestANewURLStartsANewFailureStreak(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	dead, flaky := newReceiver(t, 500), newReceiver(t, 503, 200)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock,
		Schedule: []time.Duration{0}})
	svc := delivery.NewService(store, private, rec, clock)
	ctx := context.Background()
	url := dead.URL
	ep, err := svc.Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	attempt := func(version int64) {
		t.Helper()
		if err := engine.Accept(ctx, pausedEvent("acct", "ses_a", version)); err != nil {
			t.Fatal(err)
		}
		job, _, ok := rec.take()
		if !ok {
			t.Fatal("no job")
		}
		if err := engine.Attempt(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	attempt(1) // the old URL starts failing
	clock.Advance(delivery.DisableAfter - time.Hour)
	attempt(2)

	url = flaky.URL
	if _, err := svc.Update(ctx, "acct", ep.ID, delivery.EndpointInput{URL: &url}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	attempt(3) // the new URL's first answer is a 503
	got, err := svc.Get(ctx, "acct", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Disabled {
		t.Fatalf("one failure at the new URL disabled the endpoint: %s", got.DisabledReason)
	}
	if !got.FailingSince.Equal(clock.Now()) {
		t.Errorf("failing since %s, want the new URL's first failure at %s", got.FailingSince, clock.Now())
	}
}
