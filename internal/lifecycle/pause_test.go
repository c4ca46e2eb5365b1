package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestFailedPauseBelievesProviderState: a pause whose outcome is unknown asks
// the provider before rolling back, so a sandbox that did pause is recorded
// paused, not running.
func TestFailedPauseBelievesProviderState(t *testing.T) {
	t.Run("AnswerLost", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetFault(fake.OpPause, fake.Fault{Rate: 1, Applied: true})
		// The provider paused but its answer was lost: the table says paused.
		_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
		w.fake.ClearFaults()
		if err != nil {
			t.Errorf("snapshot: %v, want success (the provider paused)", err)
		}
		w.wantStates(t, sess, lifecycle.StatePaused, lifecycle.SandboxPaused)
		w.MustHistory(t, sess.ID)
	})

	t.Run("PausedMeanwhile", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetOnCall(func(op fake.Op, id string) {
			if op == fake.OpPause {
				w.fake.SetState(id, lifecycle.SandboxPaused) // it paused itself (timeout) as we asked
				w.fake.FailNext(fake.OpPause, nil)           // and our call timed out
			}
		})
		// The sandbox paused: no rollback to running (503).
		_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
		w.fake.SetOnCall(nil)
		if err != nil {
			t.Errorf("snapshot: %v, want success (the sandbox is paused)", err)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePaused {
			t.Errorf("table %s, want paused", got)
		}
	})

	t.Run("StillRunning", func(t *testing.T) {
		// A failed pause whose sandbox still runs is rolled back: not every failure is believed.
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpPause, nil)
		_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
			t.Errorf("snapshot: code %s (%v), want %s", got, err, want)
		}
		if got, want := errorType(err), lifecycle.TypeSandboxUnreachable; got != want {
			t.Errorf("snapshot: error_type %q, want %q", got, want)
		}
		// The table rolled back.
		w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
		w.MustHistory(t, sess.ID)
	})

	t.Run("OutcomeUnknown", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetFault(fake.OpPause, fake.Fault{Rate: 1, Applied: true})
		w.fake.SetFault(fake.OpGet, fake.Fault{Rate: 1})
		// The provider is asked before any rollback to running.
		_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
		w.fake.ClearFaults()
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
			t.Errorf("snapshot: code %s (%v), want %s", got, err, want)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePausing {
			t.Fatalf("table %s, want pausing until the lease runs out", got)
		}
		w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute)
		sum := MustRun(t, w.sweeper)
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePaused {
			t.Errorf("after the sweep: table %s, want paused (the provider paused)", got)
		}
		if sum.Reconciled != 1 {
			t.Errorf("sweep reconciled %d sessions, want 1 (%+v)", sum.Reconciled, sum)
		}
		w.MustHistory(t, sess.ID)
	})
}
