package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestRunningSlotDelta: a write takes a slot when it enters a state that
// holds one (provisioning, running, pausing, resuming, restoring) from one that does
// not, releases it on the way out, and leaves the counter alone otherwise.
func TestRunningSlotDelta(t *testing.T) {
	holds := map[lifecycle.State]bool{lifecycle.StateProvisioning: true, lifecycle.StateRunning: true,
		lifecycle.StatePausing: true, lifecycle.StateResuming: true, lifecycle.StateRestoring: true}
	for _, to := range lifecycle.States {
		if got := to.HoldsRunningSlot(); got != holds[to] {
			t.Errorf("%s.HoldsRunningSlot() = %v, want %v", to, got, holds[to])
		}
		want := 0
		if holds[to] {
			want = 1
		}
		if got := lifecycle.RunningSlotDelta("", to); got != want {
			t.Errorf("RunningSlotDelta(create, %s) = %d, want %d", to, got, want)
		}
		for _, from := range lifecycle.States {
			want := 0
			switch {
			case !holds[from] && holds[to]:
				want = 1
			case holds[from] && !holds[to]:
				want = -1
			}
			if got := lifecycle.RunningSlotDelta(from, to); got != want {
				t.Errorf("RunningSlotDelta(%s, %s) = %d, want %d", from, to, got, want)
			}
		}
	}
}

// TestQuotaRefusesTheCreateBeyondTheLimit: with MaxRunning 1 a second
// create is refused quota_exceeded, naming the account and the limit;
// pausing the first releases its slot, so the create then goes through.
func TestQuotaRefusesTheCreateBeyondTheLimit(t *testing.T) {
	e := newEnv(t, func(c *lifecycle.Config) { c.MaxRunning = 1 })
	first := e.mustCreate(t, lifecycle.CreateInput{})
	_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base"})
	if !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
		t.Fatalf("second create: %v, want quota_exceeded", err)
	}
	if msg := err.Error(); !strings.Contains(msg, acct) || !strings.Contains(msg, "1 running sandbox,") {
		t.Errorf("error %q does not name the account and its limit of 1", msg)
	}
	if n, err := e.store.RunningSlots(t.Context(), acct); err != nil || n != 1 {
		t.Errorf("RunningSlots = %d, %v; want 1", n, err)
	}
	if _, err := e.svc.PauseNow(t.Context(), acct, first.ID); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if n, err := e.store.RunningSlots(t.Context(), acct); err != nil || n != 0 {
		t.Errorf("RunningSlots after the pause = %d, %v; want 0", n, err)
	}
	e.mustCreate(t, lifecycle.CreateInput{})
}

// TestWithMaxRunningOverridesOnlyALimitedDeployment: a key's override is
// the account's limit for its creates when the deployment keeps a counter
// (MaxRunning > 0), and is ignored when it keeps none.
func TestWithMaxRunningOverridesOnlyALimitedDeployment(t *testing.T) {
	t.Run("Limited", func(t *testing.T) {
		e := newEnv(t, func(c *lifecycle.Config) { c.MaxRunning = 1 })
		ctx := lifecycle.WithMaxRunning(t.Context(), 2)
		for i := range 2 {
			if _, _, err := e.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"}); err != nil {
				t.Fatalf("create %d with an override of 2: %v", i+1, err)
			}
		}
		if _, _, err := e.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"}); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
			t.Fatalf("third create with an override of 2: %v, want quota_exceeded", err)
		}
	})
	t.Run("Unlimited", func(t *testing.T) {
		e := newEnv(t)
		ctx := lifecycle.WithMaxRunning(t.Context(), 1)
		for i := range 2 {
			if _, _, err := e.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"}); err != nil {
				t.Fatalf("create %d on a deployment without a limit: %v", i+1, err)
			}
		}
		if got := e.svc.MaxRunning(); got != 0 {
			t.Errorf("MaxRunning = %d, want 0", got)
		}
	})
}
