package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestLearnedSessionPreResumes follows one clockwork user through the
// rules on an injected clock: the learned deadline, the pause, the
// pre-resume before the predicted return, and the return into the window.
func TestLearnedSessionPreResumes(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	pol := lifecycle.DefaultPolicy()
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	user := histogramOf(10, 29*time.Minute+30*time.Second, 30*time.Minute+10*time.Second)
	s := &lifecycle.Session{ID: "ses_1", AccountID: "acme", Template: "web", State: lifecycle.StateRunning,
		IdleTimeout: 10 * time.Minute, Metadata: map[string]string{"user": "ada"}}
	keys := lifecycle.IdleKeys(s, "user")
	if got, want := keys[0], "user#acme#ada"; got != want {
		t.Fatalf("user key = %q, want %q", got, want)
	}
	p.StartLearning(s, keys[0], user)
	s.MarkActivity(clock.Now(), pol.ActivityGranularity)
	if got, want := s.PauseDeadline(), clock.Now().Add(p.Floor+pol.ActivityGranularity); !got.Equal(want) {
		t.Fatalf("pause deadline %v, want the floor past the activity %v", got, want)
	}
	clock.Advance(2 * time.Minute)
	if !s.Due(clock.Now()) {
		t.Fatal("not due 2 min after the last activity")
	}
	if err := s.Transition(lifecycle.StatePaused, lifecycle.ReasonIdle, clock.Now(), pol); err != nil {
		t.Fatal(err)
	}
	if s.PausedIdle(clock.Now()) {
		t.Fatal("a first pause reported a spent pre-resume")
	}
	at := s.Idle.PreResumeAt
	if want := s.LastActivityAt.Add(29*time.Minute - p.PreResumeLead); !at.Equal(want) {
		t.Fatalf("pre-resume at %v, want %v", at, want)
	}
	if s.PreResumeDue(clock.Now()) {
		t.Fatal("pre-resume due at once")
	}
	clock.Set(at)
	if !s.PreResumeDue(clock.Now()) {
		t.Fatal("pre-resume not due at its time")
	}
	if err := s.Transition(lifecycle.StateRunning, lifecycle.ReasonPredicted, clock.Now(), pol); err != nil {
		t.Fatal(err)
	}
	s.MarkPreResumed(clock.Now())
	if s.Due(clock.Now().Add(2 * time.Minute)) {
		t.Fatal("a pre-resumed session is due before its window ends")
	}
	// The user is back 30 min after the last activity: a hit.
	clock.Set(s.LastActivityAt.Add(30 * time.Minute))
	gap, ok := s.ReturnGap(clock.Now())
	if !ok || gap != 30*time.Minute {
		t.Fatalf("return gap %v %v, want 30 min", gap, ok)
	}
	before := user.Returns()
	if got, want := p.Learn(s, gap, user), lifecycle.OutcomeHit; got != want {
		t.Fatalf("outcome %v, want a hit", got)
	}
	if got, want := user.Returns(), before+1; got != want {
		t.Errorf("returns %d, want %d", got, want)
	}
	if s.Idle.PreResumed || user.RecentMisses(1) != 0 {
		t.Error("the return left the pre-resume standing or recorded a miss")
	}
}

func TestLearnedSessionFalsePreResume(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	pol := lifecycle.DefaultPolicy()
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	user := histogramOf(10, 29*time.Minute+30*time.Second)
	s := &lifecycle.Session{ID: "ses_1", AccountID: "acme", State: lifecycle.StateRunning, IdleTimeout: 10 * time.Minute}
	p.StartLearning(s, "user#acme#ada", user)
	s.MarkActivity(now, pol.ActivityGranularity)
	s.Idle.PreResumed = true // pre-resumed, and nobody came
	if !s.PausedIdle(now.Add(35 * time.Minute)) {
		t.Fatal("the pause after an unused pre-resume was not reported")
	}
	if !s.Idle.PreResumeAt.IsZero() {
		t.Error("a spent gap got a second pre-resume")
	}
}

func TestFixedSessionIgnoresLearning(t *testing.T) {
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	s := &lifecycle.Session{State: lifecycle.StateRunning, IdleTimeout: 10 * time.Minute}
	s.MarkActivity(now, 0)
	if got, want := s.PauseDeadline(), now.Add(10*time.Minute); !got.Equal(want) {
		t.Errorf("pause deadline %v, want %v", got, want)
	}
	if s.PausedIdle(now) || s.PreResumeDue(now) {
		t.Error("a fixed session planned a pre-resume")
	}
	if _, ok := s.ReturnGap(now); ok {
		t.Error("a silence of 0 is a return")
	}
}
