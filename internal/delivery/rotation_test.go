package delivery_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestARetriedRotationKeepsTheFirstSecretSigning: a rotation's answer (the
// new secret, shown once) is lost and the client rotates again. The
// receiver still holds the first secret, which was promised 24 h of
// signing (docs/WEBHOOKS.md "Signatures and rotation"); the second
// rotation must not cut that short. Every secret rotated out keeps
// signing for its own 24 h.
func TestARetriedRotationKeepsTheFirstSecretSigning(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	rcv := newReceiver(t, 200)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	ctx := context.Background()
	first, err := svc.Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := svc.RotateSecret(ctx, "acct", first.ID) // its answer never arrives
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	retried, err := svc.RotateSecret(ctx, "acct", first.ID)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(version int64) received {
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
		got := rcv.requests()
		return got[len(got)-1]
	}
	// The clock is the test's, so the signature is checked, not the
	// timestamp's distance from the wall clock.
	verify := func(t *testing.T, secret string, rq received) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		return wh.VerifyIgnoringTimestamp(rq.body, rq.header)
	}

	rq := deliver(1)
	for name, secret := range map[string]string{"first": first.Secret, "lost": lost.Secret, "retried": retried.Secret} {
		if err := verify(t, secret, rq); err != nil {
			t.Errorf("the %s secret does not verify a minute after the second rotation: %v", name, err)
		}
	}

	// 24 h after the first rotation the first secret stops; the one the
	// second rotation retired signs until 24 h after it.
	clock.Advance(delivery.RotationOverlap - time.Minute)
	rq = deliver(2)
	if err := verify(t, first.Secret, rq); err == nil {
		t.Error("the first secret still verifies 24 h after it was rotated out")
	}
	for name, secret := range map[string]string{"lost": lost.Secret, "retried": retried.Secret} {
		if err := verify(t, secret, rq); err != nil {
			t.Errorf("the %s secret does not verify 24 h after the first rotation: %v", name, err)
		}
	}
	if n := len(strings.Fields(rq.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures, want 2 (the current secret and the one retired a day less a minute ago)", n)
	}
}

// TestRotationsKeepAtMostFourRetiredSecrets: however often an endpoint is
// rotated within a day, a delivery carries the current secret and the
// newest MaxRetiredSecrets retired ones, never more.
func TestRotationsKeepAtMostFourRetiredSecrets(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	e := delivery.Endpoint{Secret: "s0"}
	for i := 1; i <= 10; i++ {
		e.Rotate(fmt.Sprintf("s%d", i), now.Add(time.Duration(i)*time.Minute))
	}
	got := e.Secrets(now.Add(time.Hour))
	if want := []string{"s10", "s9", "s8", "s7", "s6"}; !slices.Equal(got, want) {
		t.Errorf("secrets signing after ten rotations: %v, want %v", got, want)
	}
	if until, want := e.RetiredUntil(now.Add(time.Hour)), now.Add(10*time.Minute+delivery.RotationOverlap); !until.Equal(want) {
		t.Errorf("the retired secrets sign until %s, want %s (a day after the last rotation)", until, want)
	}
}
