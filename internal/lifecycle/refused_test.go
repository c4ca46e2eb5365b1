package lifecycle_test

import (
	"errors"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

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

// TestSettleRefused: a retried call's last 429 stays a refusal only when
// every attempt before it was refused too; the last error is not changed.
func TestSettleRefused(t *testing.T) {
	refused := func() *lifecycle.ProviderError {
		e := lifecycle.Transientf("pause", "sbx", 0, "429")
		e.Refused = true
		return e
	}
	unknown := lifecycle.Transientf("pause", "sbx", 0, "timeout")
	tests := []struct {
		name    string
		earlier []error
		want    bool
	}{
		{"OnlyAttempt", nil, true},
		{"AllRefused", []error{refused(), refused()}, true},
		{"TimeoutBefore", []error{unknown, refused()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := refused()
			got := lifecycle.SettleRefused(last, tt.earlier)
			if lifecycle.Refused(got) != tt.want {
				t.Errorf("Refused = %v, want %v", lifecycle.Refused(got), tt.want)
			}
			if !last.Refused {
				t.Error("SettleRefused changed the last error")
			}
			if !errors.Is(got, lifecycle.ErrProviderTransient) {
				t.Errorf("%v is no longer transient", got)
			}
		})
	}
	if plain := errors.New("x"); lifecycle.SettleRefused(plain, []error{unknown}) != plain {
		t.Error("a plain error was changed")
	}
}
