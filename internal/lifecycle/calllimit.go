package lifecycle

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// CallLimit is a provider's call budget in one process: PerSecond calls
// per second on average, at most Burst at once (a token bucket). The zero
// CallLimit is no limit. docs/CAPACITY.md "Provider call limiter" says
// where each provider's default comes from and why a Lambda container's
// share is smaller than the provider's whole limit.
type CallLimit struct {
	// PerSecond is the bucket's fill rate in calls per second; 0 or less:
	// no limit.
	PerSecond float64
	// Burst is the bucket's depth in calls (0: one second's worth,
	// PerSecond rounded up, at least 1).
	Burst int
}

// Off reports whether l limits nothing.
func (l CallLimit) Off() bool { return l.PerSecond <= 0 || math.IsInf(l.PerSecond, 1) }

// burst returns Burst or its default.
func (l CallLimit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return max(1, int(math.Ceil(l.PerSecond)))
}

// String is "<rate>/s burst <n>" or "off".
func (l CallLimit) String() string {
	if l.Off() {
		return "off"
	}
	return fmt.Sprintf("%g/s burst %d", l.PerSecond, l.burst())
}

// LimitConfig configures LimitCalls.
type LimitConfig struct {
	Limit CallLimit
	// Clock is the time the bucket fills on (default SystemClock).
	Clock Clock
	// Sleep waits for a token (default Sleep); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// LimitCalls returns p behind one token bucket (golang.org/x/time/rate):
// every provider call of the returned Provider (Create, Get, List, Pause,
// Resume, SetTimeout, Probe, Kill, and SetTimeoutUntil, StartCommand,
// CommandStatus and PortURL when p offers them) takes a token first,
// waiting for it when the bucket is empty. Build it once per process and
// give that one value to every caller (the Service's creates, resumes,
// guard refreshes, the sweep and the timers all reach the provider through
// the Service), so they share one budget. It keeps p's optional interfaces.
//
// A call whose ctx ends before its token would come does not wait: it
// returns at once a transient *ProviderError (ErrProviderTransient, with
// RetryAfter the wait it would have needed), retried like any transient
// failure. A ctx cancelled while waiting returns promptly, transient too,
// and gives the token back. cfg.Limit.Off() returns p unchanged.
func LimitCalls(p Provider, cfg LimitConfig) Provider {
	if cfg.Limit.Off() {
		return p
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = Sleep
	}
	base := &limitedProvider{p: p, lim: rate.NewLimiter(rate.Limit(cfg.Limit.PerSecond), cfg.Limit.burst()),
		clock: cfg.Clock, sleep: cfg.Sleep}
	var tr TimeoutReporter
	if r, ok := p.(TimeoutReporter); ok {
		tr = limitedTimeout{base, r}
	}
	var cr CommandRunner
	if r, ok := p.(CommandRunner); ok {
		cr = limitedCommands{base, r}
	}
	tc, _ := p.(TemplateChecker)
	return withOptional(base, tr, tc, cr)
}

// limitedProvider is a Provider whose calls each take a token of lim.
type limitedProvider struct {
	p     Provider
	lim   *rate.Limiter
	clock Clock
	sleep func(ctx context.Context, d time.Duration) error
}

var _ Provider = (*limitedProvider)(nil)

// wait takes one token for the call op on sandboxID, waiting for it when
// needed. Errors: transient (see LimitCalls).
func (l *limitedProvider) wait(ctx context.Context, op, sandboxID string) error {
	if err := ctx.Err(); err != nil {
		return NewProviderError(ErrProviderTransient, op, sandboxID, fmt.Errorf("no provider call token: %w", err))
	}
	now := l.clock.Now()
	r := l.lim.ReserveN(now, 1)
	if !r.OK() { // a burst of 0: never (burst is at least 1)
		return Transientf(op, sandboxID, 0, "provider call limit %s admits no call", l.limit())
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	// The deadline is on the wall clock; d is a length, so compare lengths.
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		r.CancelAt(now)
		return Transientf(op, sandboxID, d, "provider call limit %s: the next call token comes in %v, after the call's deadline", l.limit(), d)
	}
	if err := l.sleep(ctx, d); err != nil {
		r.CancelAt(l.clock.Now())
		return NewProviderError(ErrProviderTransient, op, sandboxID, fmt.Errorf("waiting for a provider call token (limit %s): %w", l.limit(), err))
	}
	return nil
}

func (l *limitedProvider) limit() CallLimit {
	return CallLimit{PerSecond: float64(l.lim.Limit()), Burst: l.lim.Burst()}
}

func (l *limitedProvider) Name() string { return l.p.Name() }

func (l *limitedProvider) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	if err := l.wait(ctx, "create", ""); err != nil {
		return Sandbox{}, err
	}
	return l.p.Create(ctx, req)
}

func (l *limitedProvider) Get(ctx context.Context, sandboxID string) (Sandbox, error) {
	if err := l.wait(ctx, "get", sandboxID); err != nil {
		return Sandbox{}, err
	}
	return l.p.Get(ctx, sandboxID)
}

func (l *limitedProvider) List(ctx context.Context, req ListRequest) (SandboxPage, error) {
	if err := l.wait(ctx, "list", ""); err != nil {
		return SandboxPage{}, err
	}
	return l.p.List(ctx, req)
}

func (l *limitedProvider) Pause(ctx context.Context, sandboxID string) error {
	if err := l.wait(ctx, "pause", sandboxID); err != nil {
		return err
	}
	return l.p.Pause(ctx, sandboxID)
}

func (l *limitedProvider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (Sandbox, error) {
	if err := l.wait(ctx, "resume", sandboxID); err != nil {
		return Sandbox{}, err
	}
	return l.p.Resume(ctx, sandboxID, timeout)
}

func (l *limitedProvider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	if err := l.wait(ctx, "set_timeout", sandboxID); err != nil {
		return err
	}
	return l.p.SetTimeout(ctx, sandboxID, timeout)
}

func (l *limitedProvider) Probe(ctx context.Context, sandboxID string) (Probe, error) {
	if err := l.wait(ctx, "probe", sandboxID); err != nil {
		return Probe{}, err
	}
	return l.p.Probe(ctx, sandboxID)
}

func (l *limitedProvider) Kill(ctx context.Context, sandboxID string) error {
	if err := l.wait(ctx, "kill", sandboxID); err != nil {
		return err
	}
	return l.p.Kill(ctx, sandboxID)
}

// limitedTimeout is the limited TimeoutReporter of a limited provider.
type limitedTimeout struct {
	l  *limitedProvider
	tr TimeoutReporter
}

// SetTimeoutUntil takes a token, then calls the provider's.
func (t limitedTimeout) SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error) {
	if err := t.l.wait(ctx, "set_timeout", sandboxID); err != nil {
		return time.Time{}, err
	}
	return t.tr.SetTimeoutUntil(ctx, sandboxID, timeout)
}

// limitedCommands is the limited CommandRunner of a limited provider:
// starting a command, reading it and resolving a port URL are provider
// calls; KeepsProcesses and PortClosed are answered locally.
type limitedCommands struct {
	l  *limitedProvider
	cr CommandRunner
}

func (c limitedCommands) KeepsProcesses() bool { return c.cr.KeepsProcesses() }

func (c limitedCommands) StartCommand(ctx context.Context, sandboxID string, cmd Command) (CommandStatus, error) {
	if err := c.l.wait(ctx, "start_command", sandboxID); err != nil {
		return CommandStatus{}, err
	}
	return c.cr.StartCommand(ctx, sandboxID, cmd)
}

func (c limitedCommands) CommandStatus(ctx context.Context, sandboxID, name string) (CommandStatus, error) {
	if err := c.l.wait(ctx, "command_status", sandboxID); err != nil {
		return CommandStatus{}, err
	}
	return c.cr.CommandStatus(ctx, sandboxID, name)
}

func (c limitedCommands) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	if err := c.l.wait(ctx, "port_url", sandboxID); err != nil {
		return "", err
	}
	return c.cr.PortURL(ctx, sandboxID, port)
}

func (c limitedCommands) PortClosed(status int, header http.Header, body []byte) bool {
	return c.cr.PortClosed(status, header, body)
}
