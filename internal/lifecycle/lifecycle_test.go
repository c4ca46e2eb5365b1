package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func TestCanTransition(t *testing.T) {
	allowed := map[[2]lifecycle.State]bool{}
	for _, p := range [][2]lifecycle.State{
		{"provisioning", "running"}, {"provisioning", "failed"},
		{"running", "pausing"}, {"pausing", "paused"}, {"paused", "resuming"}, {"resuming", "running"},
		{"pausing", "running"}, {"resuming", "paused"}, {"running", "paused"}, {"paused", "running"},
		{"expired", "killed"}, {"failed", "killed"},
	} {
		allowed[p] = true
	}
	for _, from := range lifecycle.States {
		if from != lifecycle.StateKilled && from != lifecycle.StateExpired && from != lifecycle.StateFailed {
			allowed[[2]lifecycle.State{from, lifecycle.StateExpired}] = true
		}
		if from != lifecycle.StateKilled {
			allowed[[2]lifecycle.State{from, lifecycle.StateKilled}] = true
		}
	}
	for _, from := range lifecycle.States {
		for _, to := range lifecycle.States {
			want := allowed[[2]lifecycle.State{from, to}]
			if got := lifecycle.CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
			if err := lifecycle.CheckTransition(from, to); (err == nil) != want || (err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict)) {
				t.Errorf("CheckTransition(%s, %s) = %v", from, to, err)
			}
		}
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

func TestPolicy(t *testing.T) {
	p := lifecycle.DefaultPolicy()
	for _, tc := range []struct {
		name    string
		seconds int64
		want    time.Duration
		invalid bool
	}{
		{"Default", 0, 10 * time.Minute, false},
		{"Min", 60, time.Minute, false},
		{"Max", 86400, 24 * time.Hour, false},
		{"TooShort", 59, 0, true},
		{"TooLong", 86401, 0, true},
		{"Negative", -1, 0, true},
		{"Wraps", 18446744134, 0, true}, // × 1e9 ns would wrap around to 60 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.IdleTimeout(tc.seconds)
			if tc.invalid {
				if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
					t.Fatalf("err = %v, want invalid", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("IdleTimeout(%d) = %v, %v; want %v", tc.seconds, got, err, tc.want)
			}
		})
	}
	s := &lifecycle.Session{State: lifecycle.StateRunning, SandboxID: "sb", IdleTimeout: 10 * time.Minute}
	s.RecordActivity(t0, 0)
	h := p.GuardHeadroom
	// deadline 10 min + grace 2 min + headroom
	if got, want := p.ProviderTimeout(s, t0), 12*time.Minute+h; got != want {
		t.Fatalf("ProviderTimeout = %v, want %v", got, want)
	}
	s.SandboxExpiresAt = t0.Add(12*time.Minute + h)
	t.Run("NoRefreshWithinHeadroom", func(t *testing.T) {
		now := t0.Add(h)
		s.RecordActivity(now, 0) // deadline 10 min + h; + grace is the expiry
		if p.NeedsProviderRefresh(s, now) {
			t.Fatal("refresh wanted while the provider timeout still covers deadline + grace")
		}
	})
	t.Run("RefreshPastHeadroom", func(t *testing.T) {
		now := t0.Add(h + time.Second)
		s.RecordActivity(now, 0) // deadline + grace 1 s past the expiry
		if !p.NeedsProviderRefresh(s, now) {
			t.Fatal("no refresh although the provider would pause before deadline + grace")
		}
		if got, want := now.Add(p.ProviderTimeout(s, now)), s.IdleDeadline.Add(p.ProviderGrace+h); !got.Equal(want) {
			t.Fatalf("refreshed expiry = %v, want %v", got, want)
		}
	})
	t.Run("LifetimeGetsNoHeadroom", func(t *testing.T) {
		l := &lifecycle.Session{State: lifecycle.StateRunning, SandboxID: "sb", IdleTimeout: 10 * time.Minute,
			MaxLifetime: 5 * time.Minute, RunningSince: t0}
		l.RecordActivity(t0, 0)
		if got, want := p.ProviderTimeout(l, t0), 7*time.Minute; got != want {
			t.Fatalf("ProviderTimeout = %v, want lifetime + grace %v", got, want)
		}
	})
	t.Run("CappedByPlan", func(t *testing.T) {
		// 24 h idle: the provider cannot hold the deadline; the capped
		// timeout is refreshed once a headroom of it has run.
		long := &lifecycle.Session{State: lifecycle.StateRunning, SandboxID: "sb", IdleTimeout: 24 * time.Hour}
		long.RecordActivity(t0, 0)
		if got, want := p.ProviderTimeout(long, t0), p.MaxProviderTimeout; got != want {
			t.Fatalf("ProviderTimeout = %v, want the cap %v", got, want)
		}
		long.SandboxExpiresAt = t0.Add(p.MaxProviderTimeout)
		now := t0.Add(h - time.Second)
		long.RecordActivity(now, 0)
		if p.NeedsProviderRefresh(long, now) {
			t.Fatalf("refresh wanted %v after the capped timeout was set, headroom %v", h-time.Second, h)
		}
		now = t0.Add(h + time.Second)
		long.RecordActivity(now, 0)
		if !p.NeedsProviderRefresh(long, now) {
			t.Fatalf("no refresh %v after the capped timeout was set, headroom %v", h+time.Second, h)
		}
	})
}

func TestErrors(t *testing.T) {
	err := &lifecycle.Error{Code: lifecycle.CodeUnavailable, Type: lifecycle.TypeSandboxExpired, Message: "gone"}
	wrapped := errors.Join(errors.New("context"), err)
	if got, want := lifecycle.ErrorCode(wrapped), lifecycle.CodeUnavailable; got != want {
		t.Fatalf("ErrorCode = %q, want %q", got, want)
	}
	if got, want := lifecycle.ErrorCode(errors.New("bug")), lifecycle.CodeInternal; got != want {
		t.Fatalf("ErrorCode = %q, want %q", got, want)
	}
	if got, want := err.ErrorType(), "sandbox_expired"; got != want {
		t.Fatalf("ErrorType = %q, want %q", got, want)
	}
	pe := lifecycle.Transientf("pause", "sb1", 3*time.Second, "503")
	if !errors.Is(pe, lifecycle.ErrProviderTransient) || errors.Is(pe, lifecycle.ErrSandboxGone) {
		t.Fatal("ProviderError kind not matched by errors.Is")
	}
	if got, want := lifecycle.RetryAfter(errors.Join(pe)), 3*time.Second; got != want {
		t.Fatalf("RetryAfter = %v, want %v", got, want)
	}
}

func TestEventDetailType(t *testing.T) {
	if got, want := (lifecycle.Event{To: lifecycle.StatePaused}).DetailType(), "Session Paused"; got != want {
		t.Fatalf("DetailType = %q, want %q", got, want)
	}
}
