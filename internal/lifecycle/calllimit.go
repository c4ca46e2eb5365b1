package lifecycle

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"
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
	// Metrics receives every call's grant or refusal (nil: none). The
	// Lambda mains pass internal/metrics' Emitter (docs/OPERATIONS.md
	// "Provider call limiter").
	Metrics CallMetrics
}

// CallMetrics receives what a provider's call limiter (LimitCalls) did,
// for operators: how many calls each class got through, how long they
// waited for their tokens and how many were refused. internal/metrics
// implements it with Metrics; implementations must be safe for concurrent
// use and must not block.
type CallMetrics interface {
	// CallGranted counts one call let through to the provider named
	// provider (Provider.Name), in class class, after waiting wait for its
	// token: from its arrival to the time its token was due, on
	// LimitConfig.Clock (0: it went at once). Never negative.
	CallGranted(provider string, class CallPriority, wait time.Duration)
	// CallRefused counts one call the limiter refused (a transient,
	// Refused ProviderError: its token would have come after its ctx's
	// deadline, or its ctx ended while it waited); the provider was not
	// asked.
	CallRefused(provider string, class CallPriority)
}

// noCallMetrics is the CallMetrics of a limiter built without one.
type noCallMetrics struct{}

func (noCallMetrics) CallGranted(string, CallPriority, time.Duration) {}
func (noCallMetrics) CallRefused(string, CallPriority)                {}

// LimitCalls returns p behind one token bucket (golang.org/x/time/rate)
// that serves calls by class (CallPriority): every provider call of the
// returned Provider (Create, Get, List, Pause, Resume, SetTimeout, Probe,
// Kill, and SetTimeoutUntil, StartCommand, CommandStatus and PortURL when p
// offers them) takes a token first, waiting for it when the bucket is
// empty. Build it once per process and give that one value to every caller
// (the Service's creates, resumes, guard refreshes, the sweep and the
// timers all reach the provider through the Service), so they share one
// budget. It keeps p's optional interfaces.
//
// Each method has a class (user: Create, Resume, Probe, StartCommand,
// CommandStatus, PortURL; background: Pause, Get, List, Kill; refresh:
// SetTimeout, SetTimeoutUntil), which WithCallPriority on the call's ctx
// overrides. A token goes to the oldest waiting call of the highest class
// that has one; lower classes get tokens only while no higher-class call
// waits (CallQueue says when a token is given out).
//
// A call granted a token that comes after its ctx's deadline does not wait:
// it returns at once a transient *ProviderError (ErrProviderTransient,
// Refused, with RetryAfter the wait it would have needed), retried like any
// transient failure, and gives the token back. A call waiting in its queue
// cannot know when its turn comes (a higher-class call may arrive first):
// it waits until it is granted or its ctx ends; then it leaves the queue at
// once, transient and Refused too, RetryAfter the time the calls then
// waiting in its class and above take at the rate (CallQueue.Ahead; at
// least one token interval). Every call is reported to cfg.Metrics,
// granted with its wait or refused, by provider and class.
// cfg.Limit.Off() returns p unchanged (and reports nothing).
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
	if cfg.Metrics == nil {
		cfg.Metrics = noCallMetrics{}
	}
	base := &limitedProvider{p: p, q: NewCallQueue(cfg.Limit), clock: cfg.Clock, sleep: cfg.Sleep, m: cfg.Metrics}
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

// limitedProvider is a Provider whose calls each take a token of q.
type limitedProvider struct {
	p     Provider
	mu    sync.Mutex // guards q
	q     *CallQueue
	clock Clock
	sleep func(ctx context.Context, d time.Duration) error
	m     CallMetrics
}

var _ Provider = (*limitedProvider)(nil)

// wait takes one token for the call op on sandboxID, in class def unless
// ctx sets another, waiting for it when needed, and reports the grant or
// refusal to l.m. Errors: transient and refused (see LimitCalls).
func (l *limitedProvider) wait(ctx context.Context, def CallPriority, op, sandboxID string) error {
	class := callPriority(ctx, def)
	err := l.take(ctx, class, op, sandboxID)
	if err != nil {
		l.m.CallRefused(l.p.Name(), class)
	}
	return err
}

// take does wait's work: it reports a grant itself (only it knows the
// wait); wait reports a refusal.
func (l *limitedProvider) take(ctx context.Context, class CallPriority, op, sandboxID string) error {
	if err := ctx.Err(); err != nil {
		return refused(op, sandboxID, 0, fmt.Errorf("no provider call token: %w", err))
	}
	l.mu.Lock()
	arrived := l.clock.Now()
	t := l.q.Arrive(arrived, class)
	if !t.Granted() {
		t.wake = make(chan struct{})
	}
	l.mu.Unlock()
	if t.wake != nil {
		select {
		case <-t.wake:
		case <-ctx.Done():
			ahead := l.leave(t)
			return refused(op, sandboxID, max(ahead, l.interval()),
				fmt.Errorf("waiting for a provider call token (limit %s, class %s): %w", l.q.Limit(), t.Priority, ctx.Err()))
		}
	}
	if d := t.At.Sub(l.clock.Now()); d > 0 {
		// The deadline is on the wall clock; d is a length, so compare lengths.
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			l.leave(t)
			return refused(op, sandboxID, d, fmt.Errorf("provider call limit %s: the next call token comes in %v, after the call's deadline", l.q.Limit(), d))
		}
		if err := l.sleep(ctx, d); err != nil {
			l.leave(t)
			return refused(op, sandboxID, 0, fmt.Errorf("waiting for a provider call token (limit %s): %w", l.q.Limit(), err))
		}
	}
	l.mu.Lock()
	l.wake(l.q.Release(t, l.clock.Now()))
	l.mu.Unlock()
	l.m.CallGranted(l.p.Name(), t.Priority, max(0, t.At.Sub(arrived)))
	return nil
}

// leave takes t out of the queue and wakes whom that grants. It returns
// how long the calls waiting in t's class and above took at the rate just
// before (CallQueue.Ahead).
func (l *limitedProvider) leave(t *CallTicket) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ahead := l.q.Ahead(t.Priority)
	l.wake(l.q.Leave(t, l.clock.Now()))
	return ahead
}

// wake tells the granted waiting callers; l.mu held.
func (l *limitedProvider) wake(granted []*CallTicket) {
	for _, g := range granted {
		if g.wake != nil {
			close(g.wake)
		}
	}
}

// interval is the time between two tokens.
func (l *limitedProvider) interval() time.Duration {
	return time.Duration(float64(time.Second) / l.q.Limit().PerSecond)
}

// refused is the limiter's transient error: the provider was not asked, so
// the sandbox is as it was (ProviderError.Refused).
func refused(op, sandboxID string, retryAfter time.Duration, cause error) *ProviderError {
	return &ProviderError{Kind: ErrProviderTransient, Op: op, SandboxID: sandboxID, RetryAfter: retryAfter,
		Refused: true, Err: cause}
}

func (l *limitedProvider) Name() string { return l.p.Name() }

func (l *limitedProvider) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	if err := l.wait(ctx, PriorityUser, "create", ""); err != nil {
		return Sandbox{}, err
	}
	return l.p.Create(ctx, req)
}

func (l *limitedProvider) Get(ctx context.Context, sandboxID string) (Sandbox, error) {
	if err := l.wait(ctx, PriorityBackground, "get", sandboxID); err != nil {
		return Sandbox{}, err
	}
	return l.p.Get(ctx, sandboxID)
}

func (l *limitedProvider) List(ctx context.Context, req ListRequest) (SandboxPage, error) {
	if err := l.wait(ctx, PriorityBackground, "list", ""); err != nil {
		return SandboxPage{}, err
	}
	return l.p.List(ctx, req)
}

func (l *limitedProvider) Pause(ctx context.Context, sandboxID string) error {
	if err := l.wait(ctx, PriorityBackground, "pause", sandboxID); err != nil {
		return err
	}
	return l.p.Pause(ctx, sandboxID)
}

func (l *limitedProvider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (Sandbox, error) {
	if err := l.wait(ctx, PriorityUser, "resume", sandboxID); err != nil {
		return Sandbox{}, err
	}
	return l.p.Resume(ctx, sandboxID, timeout)
}

func (l *limitedProvider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	if err := l.wait(ctx, PriorityRefresh, "set_timeout", sandboxID); err != nil {
		return err
	}
	return l.p.SetTimeout(ctx, sandboxID, timeout)
}

func (l *limitedProvider) Probe(ctx context.Context, sandboxID string) (Probe, error) {
	if err := l.wait(ctx, PriorityUser, "probe", sandboxID); err != nil {
		return Probe{}, err
	}
	return l.p.Probe(ctx, sandboxID)
}

func (l *limitedProvider) Kill(ctx context.Context, sandboxID string) error {
	if err := l.wait(ctx, PriorityBackground, "kill", sandboxID); err != nil {
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
	if err := t.l.wait(ctx, PriorityRefresh, "set_timeout", sandboxID); err != nil {
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
	if err := c.l.wait(ctx, PriorityUser, "start_command", sandboxID); err != nil {
		return CommandStatus{}, err
	}
	return c.cr.StartCommand(ctx, sandboxID, cmd)
}

func (c limitedCommands) CommandStatus(ctx context.Context, sandboxID, name string) (CommandStatus, error) {
	if err := c.l.wait(ctx, PriorityUser, "command_status", sandboxID); err != nil {
		return CommandStatus{}, err
	}
	return c.cr.CommandStatus(ctx, sandboxID, name)
}

func (c limitedCommands) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	if err := c.l.wait(ctx, PriorityUser, "port_url", sandboxID); err != nil {
		return "", err
	}
	return c.cr.PortURL(ctx, sandboxID, port)
}

func (c limitedCommands) PortClosed(status int, header http.Header, body []byte) bool {
	return c.cr.PortClosed(status, header, body)
}
