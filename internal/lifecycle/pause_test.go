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

// TestRefusedPauseRollsBackAtOnce: a pause the provider refused before
// acting (a 429) rolls the session back to running without asking the
// provider again, so it stays due for the next timer or tick instead of
// waiting in pausing for its lease (which it did when the second look was
// rate limited too). An unrefused failure still asks (the
// OutcomeUnknown case of TestFailedPauseBelievesProviderState).
func TestRefusedPauseRollsBackAtOnce(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	w.fake.SetFault(fake.OpPause, fake.Fault{Rate: 1, Refused: true})
	w.fake.SetFault(fake.OpGet, fake.Fault{Rate: 1}) // asking again would fail
	gets := w.fake.Calls(fake.OpGet)
	_, err := w.svc.PauseNow(t.Context(), acct, sess.ID)
	w.fake.ClearFaults()
	if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
		t.Errorf("snapshot: code %s (%v), want %s", got, err, want)
	}
	w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
	if got := w.fake.Calls(fake.OpGet) - gets; got != 0 {
		t.Errorf("provider asked again %d times, want 0 (a refused call did nothing)", got)
	}
	w.MustHistory(t, sess.ID)

	// The next attempt, no longer refused, pauses.
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("second snapshot: %v", err)
	}
	w.wantStates(t, sess, lifecycle.StatePaused, lifecycle.SandboxPaused)
}

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
