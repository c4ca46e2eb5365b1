package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestHeartbeatOnSelfPausedSandbox: a heartbeat whose timeout refresh finds
// the sandbox paused (E2B answers 404 for a paused sandbox) does not treat it
// as gone.
func TestHeartbeatOnSelfPausedSandbox(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	// Past the guard's headroom the provider's timeout must be pushed out.
	now := w.clock.Advance(w.svc.Policy().GuardHeadroom + time.Minute)
	probe := w.mustGet(t, sess.ID)
	probe.RecordActivity(now, 0)
	if !w.svc.Policy().NeedsProviderRefresh(probe, now) {
		t.Fatal("setup: the heartbeat would not refresh the provider timeout")
	}
	w.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused)
	// The fake's SetTimeout on a paused sandbox succeeds; E2B answers 404.
	w.fake.FailNext(fake.OpSetTimeout, lifecycle.ErrSandboxGone)
	// The refresh failure is not only logged: the heartbeat does not answer 204
	// with the table running behind a paused sandbox.
	_, err := w.svc.Heartbeat(t.Context(), acct, sess.ID)
	if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
		t.Errorf("heartbeat: code %s (%v), want %s", got, err, want)
	}
	if got, want := errorType(err), lifecycle.TypeSandboxPaused; got != want {
		t.Errorf("heartbeat: error_type %q, want %q", got, want)
	}
	if got, want := w.fake.Calls(fake.OpSetTimeout), 1; got != want {
		t.Errorf("set_timeout calls = %d, want %d", got, want)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.SandboxID != sess.SandboxID {
		t.Errorf("stored %s with sandbox %q, want paused with %q", got.State, got.SandboxID, sess.SandboxID)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxPaused {
		t.Errorf("provider %s, want paused", st)
	}
	w.MustHistory(t, sess.ID)
}

// TestHeartbeatSurvivesARefreshTheCallLimiterRefuses: a guard refresh the
// provider call limiter refuses (its token would come after the call's
// deadline) does not fail the heartbeat: the activity is recorded, the
// provider's timeout left as it was and the provider not asked; the next
// recorded heartbeat, a token having come, refreshes. The limiter runs on
// a clock of its own, as it runs on the wall clock in a deployment.
func TestHeartbeatSurvivesARefreshTheCallLimiterRefuses(t *testing.T) {
	limiterClock := lifecycle.NewManualClock(svcT0)
	w := MustWorld(t)
	w.rewire(t, func(c *lifecycle.Config) {
		c.Policy.GuardHeadroom = 5 * time.Minute // a refresh comes due 6 min in
		// One call an hour: the create takes the only token.
		c.Provider = calllimit.Wrap(c.Provider, calllimit.Config{
			Limit: calllimit.Limit{PerSecond: 1.0 / 3600, Burst: 1}, Clock: limiterClock})
	})
	sess := w.mustIdle(t, 600)
	now := w.clock.Advance(6 * time.Minute)
	probe := w.mustGet(t, sess.ID)
	probe.RecordActivity(now, 0)
	if !w.svc.Policy().NeedsProviderRefresh(probe, now) {
		t.Fatal("setup: the heartbeat would not refresh the provider timeout")
	}

	wrote, err := w.svc.Heartbeat(t.Context(), acct, sess.ID)
	if err != nil || !wrote {
		t.Fatalf("heartbeat with the refresh refused: wrote %v, err %v; want recorded, no error", wrote, err)
	}
	got := w.mustGet(t, sess.ID)
	if !got.LastActivityAt.Equal(now) || !got.SandboxExpiresAt.Equal(sess.SandboxExpiresAt) {
		t.Errorf("after the refused refresh: activity %v, provider timeout %v; want %v and unchanged %v",
			got.LastActivityAt, got.SandboxExpiresAt, now, sess.SandboxExpiresAt)
	}
	if n := w.fake.Calls(fake.OpSetTimeout); n != 0 {
		t.Errorf("the provider was asked %d times, want 0 (the limiter refused the call)", n)
	}

	limiterClock.Advance(time.Hour)
	now = w.clock.Advance(time.Minute) // past the coalescing window: recorded
	if wrote, err := w.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil || !wrote {
		t.Fatalf("next heartbeat: wrote %v, err %v", wrote, err)
	}
	got = w.mustGet(t, sess.ID)
	if !got.LastActivityAt.Equal(now) {
		t.Errorf("next heartbeat: activity %v, want %v", got.LastActivityAt, now)
	}
	if n := w.fake.Calls(fake.OpSetTimeout); n != 1 || !got.SandboxExpiresAt.After(sess.SandboxExpiresAt) {
		t.Errorf("next heartbeat: %d provider calls, provider timeout %v; want 1 and later than %v", n, got.SandboxExpiresAt, sess.SandboxExpiresAt)
	}
	w.MustHistory(t, sess.ID)
}
