package lifecycle

import "time"

// Policy holds the timers of docs/DESIGN.md ("Activity and idle"). The zero value
// is not useful: start from DefaultPolicy and override what the configuration
// sets.
type Policy struct {
	// DefaultIdleTimeout applies when a create names none. docs/DESIGN.md: 10 min.
	DefaultIdleTimeout time.Duration
	// MinIdleTimeout and MaxIdleTimeout bound a per-session idle timeout.
	// docs/DESIGN.md: 1 min .. 24 h.
	MinIdleTimeout time.Duration
	MaxIdleTimeout time.Duration
	// MaxLifetimeLimit bounds a per-session max lifetime (ours: 30 days).
	MaxLifetimeLimit time.Duration
	// ActivityGranularity coalesces heartbeats: one within this long of the
	// last recorded activity is answered without a write. docs/DESIGN.md: 30 s.
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
	// Compared in seconds before converting: a huge value must not wrap.
	if seconds < int64(p.MinIdleTimeout/time.Second) || seconds > int64(p.MaxIdleTimeout/time.Second) {
		return 0, Errorf(CodeInvalid, "idle_timeout_seconds must be between %d and %d",
			int64(p.MinIdleTimeout/time.Second), int64(p.MaxIdleTimeout/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

// HoldDuration validates a busy hold in seconds (POST .../activity
// hold_seconds): within the idle timeout bounds, MinIdleTimeout ..
// MaxIdleTimeout (docs/DESIGN.md "Client channel": N within the idle timeout
// bounds). Errors: CodeInvalid naming hold_seconds.
func (p Policy) HoldDuration(seconds int64) (time.Duration, error) {
	if seconds < int64(p.MinIdleTimeout/time.Second) || seconds > int64(p.MaxIdleTimeout/time.Second) {
		return 0, Errorf(CodeInvalid, "hold_seconds must be between %d and %d",
			int64(p.MinIdleTimeout/time.Second), int64(p.MaxIdleTimeout/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

// MaxLifetime validates a requested max lifetime in seconds (0 means none)
// and returns it. Errors: CodeInvalid naming max_lifetime_seconds.
func (p Policy) MaxLifetime(seconds int64) (time.Duration, error) {
	if seconds == 0 {
		return 0, nil
	}
	if seconds < int64(p.MinIdleTimeout/time.Second) || seconds > int64(p.MaxLifetimeLimit/time.Second) {
		return 0, Errorf(CodeInvalid, "max_lifetime_seconds must be 0 (no limit) or between %d and %d",
			int64(p.MinIdleTimeout/time.Second), int64(p.MaxLifetimeLimit/time.Second))
	}
	return time.Duration(seconds) * time.Second, nil
}

// ProviderTimeout returns the provider-side timeout to set for a running
// session at now (docs/DESIGN.md "Belt and braces"), at least one second and at
// most MaxProviderTimeout. It aims at the idle deadline (held back by a busy
// hold, Session.HeldIdleDeadline) plus ProviderGrace
// plus a headroom of half the idle timeout, so that heartbeats can move the
// idle deadline that far before the provider must be told again (see
// NeedsProviderRefresh); a max lifetime deadline, which never moves, gets no
// headroom. Ours: without the headroom either every heartbeat write costs a
// provider call, or the provider pauses sandboxes before their idle timeout
// (measured with internal/costsim). The price is a looser guard while the
// control plane is down: a sandbox pauses itself at most grace plus half an
// idle timeout after its deadline.
func (p Policy) ProviderTimeout(s *Session, now time.Time) time.Duration {
	target := s.HeldIdleDeadline().Add(p.ProviderGrace + s.IdleTimeout/2)
	if l := s.LifetimeDeadline(); !l.IsZero() && l.Add(p.ProviderGrace).Before(target) {
		target = l.Add(p.ProviderGrace)
	}
	d := target.Sub(now)
	if d < time.Second {
		d = time.Second
	}
	if p.MaxProviderTimeout > 0 && d > p.MaxProviderTimeout {
		d = p.MaxProviderTimeout
	}
	return d.Truncate(time.Second)
}

// NeedsProviderRefresh reports whether a running session's provider-side
// timeout must be pushed out at now: when the provider would stop the
// sandbox before the pause deadline plus ProviderGrace. Thanks to
// ProviderTimeout's headroom that is about one provider call per half idle
// timeout of activity, not one per heartbeat. When the deadline plus grace
// lies beyond MaxProviderTimeout (an idle timeout longer than the provider's
// plan allows), the provider cannot hold it; the timeout is then refreshed
// once less than half of MaxProviderTimeout is left, and a session idle for
// longer than that is paused by the provider before its idle timeout.
func (p Policy) NeedsProviderRefresh(s *Session, now time.Time) bool {
	if s.State != StateRunning || s.SandboxID == "" {
		return false
	}
	want := s.PauseDeadline().Add(p.ProviderGrace)
	if p.MaxProviderTimeout > 0 && want.Sub(now) > p.MaxProviderTimeout {
		return s.SandboxExpiresAt.Sub(now) < p.MaxProviderTimeout/2
	}
	return s.SandboxExpiresAt.Before(want)
}
