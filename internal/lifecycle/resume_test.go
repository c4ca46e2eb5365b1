package lifecycle_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestResumeRacingDeleteKillsSandbox: a resume whose provider call succeeds
// after the session was deleted kills the sandbox it resumed, leaving no
// running sandbox behind a killed session.
func TestResumeRacingDeleteKillsSandbox(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var once sync.Once
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpResume {
			return
		}
		once.Do(func() {
			// The delete's kill is answered as done, yet the sandbox survives it (E2B).
			w.fake.FailNext(fake.OpKill, lifecycle.ErrSandboxGone)
			if _, err := w.svc.Delete(context.Background(), acct, sess.ID); err != nil {
				t.Errorf("delete racing the resume: %v", err)
			}
		})
	})
	// The resume's write loses to the delete; the resumed sandbox must not run on.
	_, err := w.svc.Resume(t.Context(), acct, sess.ID)
	w.fake.SetOnCall(nil)
	if !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("resume: %v, want conflict (deleted meanwhile)", err)
	}
	// Gone: otherwise a running sandbox sits behind a killed session.
	w.wantStates(t, sess, lifecycle.StateKilled, sandboxGone)
	w.MustHistory(t, sess.ID)
}

// TestRefusedResumeRollsBackAtOnce: the same for a resume: back to paused
// at once, the sandbox untouched.
func TestRefusedResumeRollsBackAtOnce(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	w.fake.SetFault(fake.OpResume, fake.Fault{Rate: 1, Refused: true})
	w.fake.SetFault(fake.OpGet, fake.Fault{Rate: 1})
	_, err := w.svc.Resume(t.Context(), acct, sess.ID)
	w.fake.ClearFaults()
	if err == nil {
		t.Fatal("resume succeeded, want the refusal")
	}
	w.wantStates(t, sess, lifecycle.StatePaused, lifecycle.SandboxPaused)
	w.MustHistory(t, sess.ID)
}
