package lifecycle

import "time"

// Policy holds the timers of DESIGN.md ("Activity and idle"). The zero value
// is not useful: start from DefaultPolicy and override what the configuration
// sets.
type Policy struct {
	// DefaultIdleTimeout applies when a create names none. DESIGN.md: 10 min.
	DefaultIdleTimeout time.Duration
	// MinIdleTimeout and MaxIdleTimeout bound a per-session idle timeout.
	// DESIGN.md: 1 min .. 24 h.
	MinIdleTimeout time.Duration
	MaxIdleTimeout time.Duration
	// MaxLifetimeLimit bounds a per-session max lifetime (ours: 30 days).
	MaxLifetimeLimit time.Duration
	// ActivityGranularity coalesces heartbeats: one within this long of the
	// last recorded activity is answered without a write. DESIGN.md: 30 s.
	ActivityGranularity time.Duration
	// ProviderGrace is added to the pause deadline to get the provider-side
	// timeout (pause-on-timeout), so the sandbox pauses itself on time even
	// when the control plane is down. Ours: 2 min, longer than a sweep's lag
	// is expected to be, shorter than the 5 min sweep interval.
	ProviderGrace time.Duration
	// MaxProviderTimeout caps any provider timeout we set. E2B's plan maximum
	// run length is 1 h (Hobby) or 24 h (Pro); a larger timeout gets a 400.
	MaxProviderTimeout time.Duration
	// LeaseDuration is how long a transitional state (provisioning, pausing,
	// resuming) may last before the sweep reconciles it. Ours: 5 min; E2B
	// pauses at about 4 s per GiB of RAM.
	LeaseDuration time.Duration
}

// DefaultPolicy returns the defaults above.
func DefaultPolicy() Policy {
	return Policy{
		DefaultIdleTimeout:  10 * time.Minute,
		MinIdleTimeout:      time.Minute,
		MaxIdleTimeout:      24 * time.Hour,
		MaxLifetimeLimit:    30 * 24 * time.Hour,
		ActivityGranularity: 30 * time.Second,
		ProviderGrace:       2 * time.Minute,
		MaxProviderTimeout:  time.Hour,
		LeaseDuration:       5 * time.Minute,
	}
}

// IdleTimeout validates a requested idle timeout in seconds (0 means the
// default) and returns it. Errors: CodeInvalid naming idle_timeout_seconds.
func (p Policy) IdleTimeout(seconds int64) (time.Duration, error) {
	if seconds == 0 {
		return p.DefaultIdleTimeout, nil
	}
	d := time.Duration(seconds) * time.Second
	if seconds < 0 || d < p.MinIdleTimeout || d > p.MaxIdleTimeout {
		return 0, Errorf(CodeInvalid, "idle_timeout_seconds must be between %d and %d",
			int64(p.MinIdleTimeout/time.Second), int64(p.MaxIdleTimeout/time.Second))
	}
	return d, nil
}

// MaxLifetime validates a requested max lifetime in seconds (0 means none)
// and returns it. Errors: CodeInvalid naming max_lifetime_seconds.
func (p Policy) MaxLifetime(seconds int64) (time.Duration, error) {
	if seconds == 0 {
		return 0, nil
	}
	d := time.Duration(seconds) * time.Second
	if seconds < 0 || d < p.MinIdleTimeout || d > p.MaxLifetimeLimit {
		return 0, Errorf(CodeInvalid, "max_lifetime_seconds must be 0 (no limit) or between %d and %d",
			int64(p.MinIdleTimeout/time.Second), int64(p.MaxLifetimeLimit/time.Second))
	}
	return d, nil
}

// ProviderTimeout returns the timeout to set on the provider for a running
// session at now: its pause deadline plus ProviderGrace, measured from now,
// at least one second and at most MaxProviderTimeout. DESIGN.md ("Belt and
// braces").
func (p Policy) ProviderTimeout(s *Session, now time.Time) time.Duration {
	d := s.PauseDeadline().Add(p.ProviderGrace).Sub(now)
	if d < time.Second {
		d = time.Second
	}
	if p.MaxProviderTimeout > 0 && d > p.MaxProviderTimeout {
		d = p.MaxProviderTimeout
	}
	return d.Truncate(time.Second)
}

// NeedsProviderRefresh reports whether a running session's provider-side
// timeout should be pushed out at now. Ours: when the provider would stop the
// sandbox before the pause deadline plus grace and less than half an idle
// timeout is left on it, so a busy session costs about one provider call per
// half idle timeout rather than one per heartbeat.
func (p Policy) NeedsProviderRefresh(s *Session, now time.Time) bool {
	if s.State != StateRunning || s.SandboxID == "" {
		return false
	}
	want := s.PauseDeadline().Add(p.ProviderGrace)
	if !s.SandboxExpiresAt.Before(want) {
		return false
	}
	return s.SandboxExpiresAt.Sub(now) < s.IdleTimeout/2
}
