package lifecycle

import (
	"fmt"
	"time"
)

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
	// GuardHeadroom is how far past the idle deadline + ProviderGrace the
	// provider-side timeout (the guard) is set, so that heartbeats can move
	// the idle deadline that far before the provider must be told again:
	// an active session costs one provider call (a guard refresh) per
	// GuardHeadroom of activity, and a sandbox whose control plane is down
	// pauses itself at most ProviderGrace + GuardHeadroom +
	// ActivityGranularity past its idle timeout (GuardRefreshInterval,
	// GuardBound; docs/DESIGN.md "Belt and braces"). Ours: 27 min 30 s, the
	// largest that keeps that bound within 30 min with the default grace and
	// granularity (docs/CAPACITY.md "Provider calls"). Capped, with the
	// timeout, by MaxProviderTimeout.
	GuardHeadroom time.Duration
	// LeaseDuration is how long a transitional state (provisioning, pausing,
	// resuming) may last before the sweep reconciles it. Ours: 5 min; E2B
	// pauses at about 4 s per GiB of RAM.
	LeaseDuration time.Duration
}

// DefaultGuardHeadroom is Policy.GuardHeadroom's default: with the default
// ProviderGrace (2 min) and ActivityGranularity (30 s), the guard's bound is
// 30 min past the idle timeout (docs/CAPACITY.md "Provider calls").
const DefaultGuardHeadroom = 27*time.Minute + 30*time.Second

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
		GuardHeadroom:       DefaultGuardHeadroom,
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
// session at now (docs/DESIGN.md "Belt and braces"), at least one second and
// at most MaxProviderTimeout. It aims at the idle deadline (held back by a
// busy hold, Session.HeldIdleDeadline) plus ProviderGrace plus
// GuardHeadroom, so that heartbeats can move the idle deadline that far
// before the provider must be told again (see NeedsProviderRefresh); a max
// lifetime deadline, which never moves, gets no headroom. Without the
// headroom every written heartbeat would cost a provider call. Create and
// resume set the guard with it too, so a session just created or resumed
// needs no refresh for a headroom's worth of activity.
func (p Policy) ProviderTimeout(s *Session, now time.Time) time.Duration {
	target := s.HeldIdleDeadline().Add(p.ProviderGrace + p.GuardHeadroom)
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
// ProviderTimeout's headroom that is one provider call per
// GuardRefreshInterval of activity, not one per heartbeat.
//
// When the pause deadline plus grace lies beyond MaxProviderTimeout (an
// idle timeout longer than the provider's plan allows), the provider cannot
// hold it: the timeout is then refreshed once a refresh interval
// (GuardHeadroom, at most half of MaxProviderTimeout) has run since it was
// set to MaxProviderTimeout, and a session idle for longer than
// MaxProviderTimeout minus that interval is paused by the provider before
// its idle timeout.
func (p Policy) NeedsProviderRefresh(s *Session, now time.Time) bool {
	if s.State != StateRunning || s.SandboxID == "" {
		return false
	}
	want := s.PauseDeadline().Add(p.ProviderGrace)
	if lead := want.Sub(now); p.MaxProviderTimeout > 0 && lead > p.MaxProviderTimeout {
		return s.SandboxExpiresAt.Sub(now) < p.MaxProviderTimeout-p.refreshEvery(lead)
	}
	return s.SandboxExpiresAt.Before(want)
}

// GuardRefreshInterval returns how much activity one guard refresh buys a
// running session whose idle timeout is idle (no hold, no max lifetime):
// with lead = idle + ActivityGranularity + ProviderGrace (how far past a
// written heartbeat the guard must reach),
//
//   - GuardHeadroom when lead + GuardHeadroom fits in MaxProviderTimeout;
//   - MaxProviderTimeout - lead when only lead fits: the cap eats the
//     headroom, refreshes come more often;
//   - GuardHeadroom, at most half of MaxProviderTimeout, when lead does not
//     fit (see NeedsProviderRefresh: the provider may then pause early).
//
// An active session makes one provider call per interval:
// refreshes per window = active sessions × window / interval.
func (p Policy) GuardRefreshInterval(idle time.Duration) time.Duration {
	return p.refreshEvery(idle + p.ActivityGranularity + p.ProviderGrace)
}

// GuardRefreshes returns the guard refreshes per window that active
// sessions, each active throughout with idle timeout idle, make: active ×
// window / GuardRefreshInterval(idle), the interval taken as at least one
// ActivityGranularity (a refresh rides on a written heartbeat). At the
// target of docs/CAPACITY.md "Provider calls" (1,000,000 active sessions,
// 10 min idle, default policy): 18,181 per 30 s.
func (p Policy) GuardRefreshes(active int, idle, window time.Duration) float64 {
	every := max(p.GuardRefreshInterval(idle), p.ActivityGranularity, time.Nanosecond)
	return float64(active) * window.Seconds() / every.Seconds()
}

// refreshEvery is GuardRefreshInterval for a guard that must reach lead
// past now.
func (p Policy) refreshEvery(lead time.Duration) time.Duration {
	m := p.MaxProviderTimeout
	switch {
	case m <= 0 || lead+p.GuardHeadroom <= m:
		return p.GuardHeadroom
	case lead <= m:
		return m - lead
	default:
		return min(p.GuardHeadroom, m/2)
	}
}

// GuardBound returns how long past its real idle timeout (the user's last
// heartbeat + idle) a running sandbox with idle timeout idle may run when
// nothing but the provider's own timeout pauses it (the control plane is
// down): ProviderGrace + GuardRefreshInterval(idle) + ActivityGranularity,
// since the recorded idle deadline is at most one coalescing window after
// the real one and the guard at most grace + interval after the recorded
// deadline. holds is false when the provider cannot hold the idle timeout
// at all (idle + granularity + grace beyond MaxProviderTimeout): such a
// sandbox may be paused by the provider before its idle timeout, and the
// bound is then 0.
func (p Policy) GuardBound(idle time.Duration) (bound time.Duration, holds bool) {
	lead := idle + p.ActivityGranularity + p.ProviderGrace
	if p.MaxProviderTimeout > 0 && lead > p.MaxProviderTimeout {
		return 0, false
	}
	return p.ProviderGrace + p.refreshEvery(lead) + p.ActivityGranularity, true
}

// CheckGuardHeadroom reports whether GuardHeadroom can be held for a
// session with the default idle timeout: it must be positive and, when
// DefaultIdleTimeout + ActivityGranularity + ProviderGrace fits in
// MaxProviderTimeout, fit there with it. Errors: plain, giving the largest
// headroom that fits.
func (p Policy) CheckGuardHeadroom() error {
	if p.GuardHeadroom <= 0 {
		return fmt.Errorf("guard headroom %v must be positive", p.GuardHeadroom)
	}
	lead := p.DefaultIdleTimeout + p.ActivityGranularity + p.ProviderGrace
	if m := p.MaxProviderTimeout; m > 0 && lead < m && lead+p.GuardHeadroom > m {
		return fmt.Errorf("guard headroom %v does not fit: the default idle timeout %v + activity granularity %v + provider grace %v + headroom is %v, beyond the max provider timeout %v; set at most %v",
			p.GuardHeadroom, p.DefaultIdleTimeout, p.ActivityGranularity, p.ProviderGrace, lead+p.GuardHeadroom, m, m-lead)
	}
	return nil
}
