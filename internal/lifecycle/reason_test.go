package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestPauseReason(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		lifetime time.Duration
		want     string
	}{
		"NoLifetime":       {0, lifecycle.ReasonIdle},
		"IdleFirst":        {time.Hour, lifecycle.ReasonIdle},
		"LifetimeFirst":    {5 * time.Minute, lifecycle.ReasonLifetime},
		"SameDeadlineIdle": {10 * time.Minute, lifecycle.ReasonIdle},
	} {
		t.Run(name, func(t *testing.T) {
			s := &lifecycle.Session{State: lifecycle.StateRunning, RunningSince: t0, MaxLifetime: tc.lifetime,
				IdleDeadline: t0.Add(10 * time.Minute)}
			if got := s.PauseReason(); got != tc.want {
				t.Fatalf("PauseReason() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEventID(t *testing.T) {
	s := &lifecycle.Session{ID: "ses_x", Version: 12, State: lifecycle.StatePaused}
	if got, want := lifecycle.NewEvent(s, lifecycle.StatePausing).EventID, "ses_x:12"; got != want {
		t.Fatalf("EventID = %q, want %q", got, want)
	}
}
