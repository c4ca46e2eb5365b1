package lifecycle_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestBusyHoldOutlivesIdleDeadline(t *testing.T) {
	e, timers := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	idle := sess.IdleDeadline
	e.clock.Advance(10 * time.Second)
	if _, err := e.svc.Hold(t.Context(), acct, sess.ID, 300); err != nil {
		t.Fatalf("hold: %v", err)
	}
	held := e.mustGet(t, sess.ID)
	if want := svcT0.Add(310 * time.Second); !held.HoldUntil.Equal(want) || !held.PauseDeadline().Equal(want) {
		t.Fatalf("hold_until %s, pause deadline %s; want both %s", held.HoldUntil, held.PauseDeadline(), want)
	}
	if !held.IdleDeadline.Equal(idle) {
		t.Fatalf("idle deadline moved to %s by a coalesced hold; want %s", held.IdleDeadline, idle)
	}
	// The provider-side guard follows the hold.
	if !held.SandboxExpiresAt.After(held.HoldUntil) {
		t.Fatalf("provider timeout %s is not past the hold %s", held.SandboxExpiresAt, held.HoldUntil)
	}
	// The create's timer fires at the idle deadline: held, it re-arms.
	out := timers.runDue(t, e, idle.Add(time.Minute))
	if got, want := out, []lifecycle.TimerOutcome{lifecycle.TimerRearmed}; !slices.Equal(got, want) {
		t.Fatalf("outcomes at the idle deadline = %v, want %v", got, want)
	}
	if got := e.mustGet(t, sess.ID).State; got != lifecycle.StateRunning {
		t.Fatalf("state past the idle deadline under a hold = %s, want running", got)
	}
	out = timers.runDue(t, e, held.HoldUntil.Add(time.Minute))
	if len(out) == 0 || out[0] != lifecycle.TimerPaused {
		t.Fatalf("outcomes at the hold's end = %v, want paused first", out)
	}
	got := e.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.Reason != lifecycle.ReasonIdle {
		t.Fatalf("state = %s (%s), want paused (idle)", got.State, got.Reason)
	}
	if late := got.PausedAt.Sub(held.HoldUntil); late < 0 || late > time.Second {
		t.Fatalf("paused %s after the hold ended, want within 0..1s", late)
	}
}

func TestBusyHoldNeverShortensNorPostponesLifetime(t *testing.T) {
	e, _ := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60, MaxLifetimeSeconds: 600})
	if _, err := e.svc.Hold(t.Context(), acct, sess.ID, 3600); err != nil {
		t.Fatalf("hold: %v", err)
	}
	if _, err := e.svc.Hold(t.Context(), acct, sess.ID, 120); err != nil {
		t.Fatalf("shorter hold: %v", err)
	}
	got := e.mustGet(t, sess.ID)
	if want := svcT0.Add(time.Hour); !got.HoldUntil.Equal(want) {
		t.Fatalf("hold_until = %s, want %s (a shorter hold never shortens)", got.HoldUntil, want)
	}
	if want := svcT0.Add(10 * time.Minute); !got.PauseDeadline().Equal(want) || got.PauseReason() != lifecycle.ReasonLifetime {
		t.Fatalf("pause deadline %s (%s), want the max lifetime %s", got.PauseDeadline(), got.PauseReason(), want)
	}
}

func TestBusyHoldBounds(t *testing.T) {
	e, _ := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	for _, n := range []int64{0, 59, 86401, -1} {
		if _, err := e.svc.Hold(t.Context(), acct, sess.ID, n); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("hold %d s: err %v, want invalid", n, err)
		}
	}
	if _, err := e.svc.Hold(t.Context(), acct, sess.ID, 86400); err != nil {
		t.Errorf("hold 86400 s: %v", err)
	}
}
