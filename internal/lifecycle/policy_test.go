package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// guardEnv is an env whose policy has the guard headroom h.
func guardEnv(t *testing.T, h time.Duration) *env {
	t.Helper()
	return newEnv(t, func(c *lifecycle.Config) {
		c.Policy = lifecycle.DefaultPolicy()
		c.Policy.GuardHeadroom = h
	})
}

// heartbeatFor sends a heartbeat every 30 s for span, checking the guard
// after each one: the provider's timeout (the fake's expiry, and the one
// recorded on the session) never falls before the pause deadline + grace,
// never lies more than grace + h past it, and the sandbox keeps running.
func heartbeatFor(t *testing.T, e *env, id string, span, h time.Duration) {
	t.Helper()
	p := e.svc.Policy()
	for end := e.clock.Now().Add(span); e.clock.Now().Before(end); {
		e.clock.Advance(30 * time.Second)
		mustHeartbeat(t, e, id)
		sess := e.mustGet(t, id)
		sb, ok := e.fake.Sandbox(sess.SandboxID)
		if !ok || sb.State != lifecycle.SandboxRunning {
			t.Fatalf("at %v the provider has the sandbox %v (exists %v), want running", e.clock.Now(), sb.State, ok)
		}
		want := sess.PauseDeadline().Add(p.ProviderGrace)
		for name, exp := range map[string]time.Time{"provider": sb.ExpiresAt, "recorded": sess.SandboxExpiresAt} {
			if exp.Before(want) {
				t.Fatalf("at %v the %s timeout %v falls %v before the pause deadline + grace", e.clock.Now(), name, exp, want.Sub(exp))
			}
			if got, bound := exp.Sub(sess.PauseDeadline()), p.ProviderGrace+h; got > bound {
				t.Fatalf("at %v the %s timeout lies %v past the pause deadline, want at most grace + headroom = %v", e.clock.Now(), name, got, bound)
			}
		}
	}
}

// TestGuardRefreshesOncePerHeadroom: with headroom H, an active session
// heartbeating every 30 s for T makes about T / H provider timeout
// refreshes (a refresh comes at the first written heartbeat more than H
// after the guard was last set, so between T / (H + 30 s) and T / H), and
// the guard stays between the pause deadline + grace and grace + H past it.
func TestGuardRefreshesOncePerHeadroom(t *testing.T) {
	const span = 3 * time.Hour
	for _, h := range []time.Duration{5 * time.Minute, 15 * time.Minute, lifecycle.DefaultGuardHeadroom} {
		t.Run(h.String(), func(t *testing.T) {
			e := guardEnv(t, h)
			sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
			heartbeatFor(t, e, sess.ID, span, h)
			got := e.fake.Calls(fake.OpSetTimeout)
			lo, hi := int(span/(h+30*time.Second)), int(span/h)
			if got < lo || got > hi {
				t.Errorf("%d provider timeout refreshes in %v of activity, want %d to %d (one per %v)", got, span, lo, hi, h)
			}
		})
	}
}

// TestCreateAndResumeSetTheGuard: a create and a resume set the provider
// timeout with the headroom themselves, so neither is followed by a
// refresh for a headroom's worth of activity.
func TestCreateAndResumeSetTheGuard(t *testing.T) {
	h := 15 * time.Minute
	e := guardEnv(t, h)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
	heartbeatFor(t, e, sess.ID, h, h)
	if got := e.fake.Calls(fake.OpSetTimeout); got != 0 {
		t.Fatalf("%d refreshes within the headroom after the create, want 0", got)
	}
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if _, err := e.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	heartbeatFor(t, e, sess.ID, h, h)
	if got := e.fake.Calls(fake.OpSetTimeout); got != 0 {
		t.Fatalf("%d refreshes within the headroom after the resume, want 0", got)
	}
	heartbeatFor(t, e, sess.ID, time.Minute, h)
	if got := e.fake.Calls(fake.OpSetTimeout); got != 1 {
		t.Fatalf("%d refreshes a minute past the headroom, want 1", got)
	}
}

// TestGuardUnderThePlanCap: the guard never exceeds MaxProviderTimeout.
// Where idle + granularity + grace + headroom does not fit, the cap eats
// the headroom (refreshes come more often, the bound shrinks to
// MaxProviderTimeout - idle); where even idle + granularity + grace does not
// fit, the capped timeout is refreshed once per headroom (at most half the
// cap) and the provider cannot hold the idle timeout.
func TestGuardUnderThePlanCap(t *testing.T) {
	p := lifecycle.DefaultPolicy() // 1 h cap, 2 min grace, 30 s window
	p.GuardHeadroom = 20 * time.Minute
	for _, tc := range []struct {
		idle, every, bound time.Duration
		holds              bool
	}{
		{10 * time.Minute, 20 * time.Minute, 22*time.Minute + 30*time.Second, true}, // 32:30 fits
		{45 * time.Minute, 12*time.Minute + 30*time.Second, 15 * time.Minute, true}, // 1:07:30 does not
		{2 * time.Hour, 20 * time.Minute, 0, false},                                 // not even the deadline fits
	} {
		if got := p.GuardRefreshInterval(tc.idle); got != tc.every {
			t.Errorf("idle %v: refresh every %v, want %v", tc.idle, got, tc.every)
		}
		if bound, holds := p.GuardBound(tc.idle); bound != tc.bound || holds != tc.holds {
			t.Errorf("idle %v: bound %v (holds %v), want %v (%v)", tc.idle, bound, holds, tc.bound, tc.holds)
		}
	}
	big := p
	big.GuardHeadroom = 2 * time.Hour
	if got, want := big.GuardRefreshInterval(2*time.Hour), 30*time.Minute; got != want {
		t.Errorf("headroom beyond the cap: refresh every %v, want half the cap %v", got, want)
	}

	// The service under the cap: a 45 min idle timeout refreshes once per
	// 12:30 and its guard never passes the cap.
	e := guardEnv(t, 20*time.Minute)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 2700})
	if got := e.mustGet(t, sess.ID).SandboxExpiresAt.Sub(e.clock.Now()); got > p.MaxProviderTimeout {
		t.Fatalf("create set the guard %v ahead, beyond the cap %v", got, p.MaxProviderTimeout)
	}
	every := p.GuardRefreshInterval(45 * time.Minute)
	heartbeatFor(t, e, sess.ID, 3*time.Hour, every)
	if got, lo, hi := e.fake.Calls(fake.OpSetTimeout), int(3*time.Hour/(every+30*time.Second)), int(3*time.Hour/every); got < lo || got > hi {
		t.Errorf("%d refreshes in 3 h under the cap, want %d to %d", got, lo, hi)
	}
}

// TestCheckGuardHeadroom: a headroom that is not positive, or that the
// provider cannot hold for a session with the default idle timeout, is
// refused with the largest one that fits; a default idle timeout the
// provider cannot hold at all leaves the headroom to the capped rule.
func TestCheckGuardHeadroom(t *testing.T) {
	p := lifecycle.DefaultPolicy()
	if err := p.CheckGuardHeadroom(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	p.GuardHeadroom = 47*time.Minute + 30*time.Second // 10 + 0:30 + 2 + 47:30 = 60
	if err := p.CheckGuardHeadroom(); err != nil {
		t.Fatalf("headroom filling the cap exactly: %v", err)
	}
	p.GuardHeadroom += time.Second
	if err := p.CheckGuardHeadroom(); err == nil || !strings.Contains(err.Error(), "set at most 47m30s") {
		t.Fatalf("headroom past the cap: %v, want an error giving 47m30s", err)
	}
	p.GuardHeadroom = 0
	if err := p.CheckGuardHeadroom(); err == nil {
		t.Fatal("zero headroom accepted")
	}
	p.GuardHeadroom, p.DefaultIdleTimeout = time.Hour, 2*time.Hour
	if err := p.CheckGuardHeadroom(); err != nil {
		t.Fatalf("default idle timeout beyond the cap: %v, want the capped rule", err)
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
