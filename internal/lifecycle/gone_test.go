package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestGoneConfirmedBeforeExpiry: one spurious "gone" (E2B reports 1-3 % of
// sandboxes not found early) does not expire the session; a second read must
// agree. And the reaper never kills the sandbox of a session expired that way,
// which would lose the user's files.
func TestGoneConfirmedBeforeExpiry(t *testing.T) {
	reconnect := func(t *testing.T, w *world, id string) lifecycle.ReconnectResult {
		t.Helper()
		res, err := w.svc.Reconnect(t.Context(), acct, id)
		if err != nil {
			t.Fatalf("reconnect: %v", err)
		}
		return res
	}

	t.Run("ProbeGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		// Unreachable, not expired: the session keeps its sandbox.
		res := reconnect(t, w, sess.ID)
		if got, want := res.Status, lifecycle.ReconnectUnreachable; got != want {
			t.Errorf("reconnect status %s, want %s", got, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
	})

	t.Run("ProbeAndGetGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		// Gone answers that are not consecutive reads do not expire it.
		res := reconnect(t, w, sess.ID)
		if res.Status == lifecycle.ReconnectExpired {
			t.Errorf("reconnect status %s after gone answers that were not consecutive reads", res.Status)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StateRunning {
			t.Errorf("stored %s, want running", got)
		}
	})

	t.Run("PauseGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpPause, lifecycle.ErrSandboxGone)
		// sandbox_unreachable, not sandbox_expired: the session lives on.
		_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
		if got, want := errorType(err), lifecycle.TypeSandboxUnreachable; got != want {
			t.Errorf("snapshot: error_type %q (%v), want %q", got, err, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("GoneTwice", func(t *testing.T) {
		// A gone sandbox confirmed by consecutive reads still expires the session.
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.Forget(sess.SandboxID)
		res := reconnect(t, w, sess.ID)
		if got, want := res.Status, lifecycle.ReconnectExpired; got != want {
			t.Errorf("reconnect status %s, want %s", got, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.SandboxID != "" {
			t.Errorf("stored %s with sandbox %q, want expired without one", got.State, got.SandboxID)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("ExpiredNotReaped", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		// Three wrong "gone" answers in a row: the session is expired though its
		// sandbox lives on.
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		if res := reconnect(t, w, sess.ID); res.Status != lifecycle.ReconnectExpired {
			t.Fatalf("reconnect status %s, want expired (setup)", res.Status)
		}
		w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute) // old enough to be reaped
		sb, ok := w.fake.Sandbox(sess.SandboxID)
		if !ok {
			t.Fatal("sandbox vanished (setup)")
		}
		// ReapOrphan leaves it alone: killing it would lose the user's files.
		killed, err := w.svc.ReapOrphan(t.Context(), sb)
		if err != nil || killed {
			t.Errorf("reap: killed=%v err=%v, want it left alone", killed, err)
		}
		sum := MustRun(t, w.sweeper)
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
			t.Errorf("after the sweep: provider %s, want running (left for an operator)", st)
		}
		if sum.OrphansKilled != 0 {
			t.Errorf("sweep killed %d orphans, want 0 (%+v)", sum.OrphansKilled, sum)
		}
	})
}
