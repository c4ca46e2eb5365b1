package lifecycle_test

import (
	"testing"
	"time"

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
