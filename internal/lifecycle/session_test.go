package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestFinalSessionAdvertisesNoURL: a session that becomes killed, failed or
// expired shows no preview URL and no provider-side expiry, in the session
// and in its lifecycle envelope.
func TestFinalSessionAdvertisesNoURL(t *testing.T) {
	for _, tc := range []struct{ from, to lifecycle.State }{
		{lifecycle.StateRunning, lifecycle.StateKilled},
		{lifecycle.StatePaused, lifecycle.StateKilled},
		{lifecycle.StateProvisioning, lifecycle.StateFailed},
		{lifecycle.StateRunning, lifecycle.StateExpired},
	} {
		t.Run(string(tc.from)+"To"+string(tc.to), func(t *testing.T) {
			s := &lifecycle.Session{State: tc.from, SandboxID: "sb_1", PreviewURL: "https://3000-sb_1.example",
				SandboxExpiresAt: t0.Add(time.Hour), IdleTimeout: 10 * time.Minute}
			if err := s.Transition(tc.to, lifecycle.ReasonRequest, t0, lifecycle.DefaultPolicy()); err != nil {
				t.Fatal(err)
			}
			if s.PreviewURL != "" || !s.SandboxExpiresAt.IsZero() {
				t.Errorf("%s session shows preview_url %q and sandbox_expires_at %v, want neither", tc.to, s.PreviewURL, s.SandboxExpiresAt)
			}
			if env := lifecycle.NewEnvelope(s, t0); !env.SandboxExpiresAt.IsZero() {
				t.Errorf("envelope sandbox_expires_at = %v, want none", env.SandboxExpiresAt)
			}
		})
	}
}

func TestRecordActivity(t *testing.T) {
	s := &lifecycle.Session{IdleTimeout: 10 * time.Minute}
	if !s.RecordActivity(t0, 30*time.Second) {
		t.Fatal("first activity not recorded")
	}
	// The coalescing window counts into the deadline: a heartbeat coalesced
	// within it must not leave the session due before its real activity.
	if got, want := s.IdleDeadline, t0.Add(10*time.Minute+30*time.Second); !got.Equal(want) {
		t.Fatalf("IdleDeadline = %v, want %v", got, want)
	}
	t.Run("Coalesced", func(t *testing.T) {
		if s.RecordActivity(t0.Add(29*time.Second), 30*time.Second) {
			t.Fatal("heartbeat within the granularity was recorded")
		}
		if got, want := s.LastActivityAt, t0; !got.Equal(want) {
			t.Fatalf("LastActivityAt = %v, want %v", got, want)
		}
	})
	t.Run("Recorded", func(t *testing.T) {
		if !s.RecordActivity(t0.Add(30*time.Second), 30*time.Second) {
			t.Fatal("heartbeat at the granularity was not recorded")
		}
		if got, want := s.IdleDeadline, t0.Add(30*time.Second+10*time.Minute+30*time.Second); !got.Equal(want) {
			t.Fatalf("IdleDeadline = %v, want %v", got, want)
		}
	})
	t.Run("NeverBackwards", func(t *testing.T) {
		before := s.IdleDeadline
		s.IdleTimeout = time.Minute // a shorter timeout must not pull the deadline in
		s.RecordActivity(t0.Add(2*time.Minute), 0)
		if got := s.IdleDeadline; got.Before(before) {
			t.Fatalf("IdleDeadline moved back from %v to %v", before, got)
		}
	})
}

func TestPauseDeadline(t *testing.T) {
	s := &lifecycle.Session{State: lifecycle.StateRunning, IdleTimeout: 10 * time.Minute, MaxLifetime: 5 * time.Minute, RunningSince: t0}
	s.RecordActivity(t0, 0)
	if got, want := s.PauseDeadline(), t0.Add(5*time.Minute); !got.Equal(want) {
		t.Fatalf("PauseDeadline = %v, want the lifetime end %v", got, want)
	}
	if s.Due(t0.Add(4 * time.Minute)) {
		t.Fatal("due before its deadline")
	}
	if !s.Due(t0.Add(5 * time.Minute)) {
		t.Fatal("not due at its deadline")
	}
	s.MaxLifetime = 0
	if got, want := s.PauseDeadline(), t0.Add(10*time.Minute); !got.Equal(want) {
		t.Fatalf("PauseDeadline = %v, want the idle deadline %v", got, want)
	}
}

func TestSessionTransition(t *testing.T) {
	p := lifecycle.DefaultPolicy()
	s := &lifecycle.Session{State: lifecycle.StateRunning, SandboxID: "sb", PreviewURL: "u", RunningSince: t0}
	if err := s.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, t0.Add(time.Minute), p); err != nil {
		t.Fatal(err)
	}
	if got, want := s.LeaseExpiresAt, t0.Add(time.Minute+p.LeaseDuration); !got.Equal(want) {
		t.Fatalf("LeaseExpiresAt = %v, want %v", got, want)
	}
	if err := s.Transition(lifecycle.StateRunning, lifecycle.ReasonIdle, t0.Add(2*time.Minute), p); err != nil {
		t.Fatal(err)
	}
	if got, want := s.RunningSince, t0; !got.Equal(want) {
		t.Fatalf("rollback moved RunningSince to %v, want %v", got, want)
	}
	if !s.LeaseExpiresAt.IsZero() {
		t.Fatal("running session kept a lease")
	}
	if err := s.Transition(lifecycle.StateResuming, "", t0, p); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Fatalf("running → resuming: err = %v, want conflict", err)
	}
	if err := s.Transition(lifecycle.StateExpired, lifecycle.ReasonReconcile, t0.Add(3*time.Minute), p); err != nil {
		t.Fatal(err)
	}
	if s.SandboxID != "" || s.PreviewURL != "" {
		t.Fatalf("expired session kept sandbox fields: %q %q", s.SandboxID, s.PreviewURL)
	}
}

// TestRestoringKeepsWhatARollbackNeeds: a restore keeps the state's times
// (a paused session put back is paused since when it was) and carries a
// lease; it holds a running slot.
func TestRestoringKeepsWhatARollbackNeeds(t *testing.T) {
	s := &lifecycle.Session{State: lifecycle.StatePaused, SandboxID: "sb_1", PausedAt: t0.Add(-time.Hour)}
	if err := s.Transition(lifecycle.StateRestoring, lifecycle.ReasonRestore, t0, lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if !s.PausedAt.Equal(t0.Add(-time.Hour)) || !s.LeaseExpiresAt.Equal(t0.Add(lifecycle.DefaultPolicy().LeaseDuration)) ||
		!s.State.Transitional() || !s.State.HoldsRunningSlot() || s.SandboxID != "sb_1" {
		t.Errorf("restoring = %+v, want the old sandbox, paused_at kept, a lease", s)
	}
	if err := s.Transition(lifecycle.StatePaused, lifecycle.ReasonRestoreFailed, t0.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if !s.PausedAt.Equal(t0.Add(-time.Hour)) || !s.LeaseExpiresAt.IsZero() {
		t.Errorf("put back = paused_at %v, lease %v; want the old paused_at and no lease", s.PausedAt, s.LeaseExpiresAt)
	}
}

// TestScheduledCheckpointIsInTheLeaseIndex: a running session with
// checkpoint_every has its next checkpoint due a period after it became
// running, and is in the lease index at the earlier of that and a
// readiness requeue; a pause takes it out.
func TestScheduledCheckpointIsInTheLeaseIndex(t *testing.T) {
	s := &lifecycle.Session{State: lifecycle.StateProvisioning, CheckpointEvery: 10 * time.Minute}
	if err := s.Transition(lifecycle.StateRunning, lifecycle.ReasonRequest, t0, lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if due, ok := s.LeaseDue(); !ok || !due.Equal(t0.Add(10*time.Minute)) || !s.NextCheckpointAt.Equal(due) {
		t.Errorf("LeaseDue = %v, %v (next %v); want the next checkpoint at %v", due, ok, s.NextCheckpointAt, t0.Add(10*time.Minute))
	}
	s.App, s.Readiness = &lifecycle.AppSpec{Port: 3000}, lifecycle.ReadinessStarting
	if due, _ := s.LeaseDue(); !due.Equal(t0.Add(lifecycle.ReadinessRequeueAfter)) {
		t.Errorf("LeaseDue while starting = %v, want the readiness requeue first", due)
	}
	s.App, s.Readiness = nil, ""
	if err := s.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, t0, lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if !s.NextCheckpointAt.IsZero() {
		t.Errorf("pausing keeps next checkpoint %v", s.NextCheckpointAt)
	}
}
