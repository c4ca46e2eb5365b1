package calllimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Limit is a provider's call budget in one process: PerSecond calls
// per second on average, at most Burst at once (a token bucket). The zero
// Limit is no limit. docs/CAPACITY.md "Provider call limiter" says
// where each provider's default comes from and why a Lambda container's
// share is smaller than the provider's whole limit.
type Limit struct {
	// PerSecond is the bucket's fill rate in calls per second; 0 or less:
	// no limit.
	PerSecond float64
	// Burst is the bucket's depth in calls (0: one second's worth,
	// PerSecond rounded up, at least 1).
	Burst int
}

// Off reports whether l limits nothing.
func (l Limit) Off() bool { return l.PerSecond <= 0 || math.IsInf(l.PerSecond, 1) }

// burst returns Burst or its default.
func (l Limit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return max(1, int(math.Ceil(l.PerSecond)))
}

// String is "<rate>/s burst <n>" or "off".
func (l Limit) String() string {
	if l.Off() {
		return "off"
	}
	return fmt.Sprintf("%g/s burst %d", l.PerSecond, l.burst())
}

// Config configures Wrap.
type Config struct {
	Limit Limit
	// Clock is the time the bucket fills on (default lifecycle.SystemClock).
	Clock lifecycle.Clock
	// Sleep waits for a token (default lifecycle.Sleep); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Metrics receives every call's grant or refusal (nil: none). The
	// Lambda mains pass internal/metrics' Emitter (docs/OPERATIONS.md
	// "Provider call limiter").
	Metrics Metrics
}

// Metrics receives what a provider's call limiter (Wrap) did,
// for operators: how many calls each class got through, how long they
// waited for their tokens and how many were refused. internal/metrics'
// Emitter implements it; implementations must be safe for concurrent
// use and must not block.
type Metrics interface {
	// CallGranted counts one call let through to the provider named
	// provider (lifecycle.Provider.Name), in class class, after waiting wait for its
	// token: from its arrival to the time its token was due, on
	// Config.Clock (0: it went at once). Never negative.
	CallGranted(provider string, class lifecycle.CallPriority, wait time.Duration)
	// CallRefused counts one call the limiter refused (a transient,
	// Refused ProviderError: its token would have come after its ctx's
	// deadline, or its ctx ended while it waited); the provider was not
	// asked.
	CallRefused(provider string, class lifecycle.CallPriority)
}

// noMetrics is the Metrics of a limiter built without one.
type noMetrics struct{}

func (noMetrics) CallGranted(string, lifecycle.CallPriority, time.Duration) {}
func (noMetrics) CallRefused(string, lifecycle.CallPriority)                {}

// Wrap returns p behind one token bucket (golang.org/x/time/rate)
// that serves calls by class (lifecycle.CallPriority): every provider call of the
// returned Provider (its Provider methods and those of every optional
// interface p offers: lifecycle.Wrap) takes a token first, waiting for it
// when the bucket is empty. Build it once per process and give that one value to every caller
// (the Service's creates, resumes, guard refreshes, the sweep and the
// timers all reach the provider through the Service), so they share one
// budget. It carries exactly p's optional interfaces (lifecycle.As).
//
// Each call has its class (lifecycle.Op.Class: user for Create, Resume,
// Probe, the readiness commands, a restore's calls and the identity
// marker's; refresh for SetTimeout and SetTimeoutUntil; background for the
// rest, pauses, reads, kills and checkpoints), which
// lifecycle.WithCallPriority on the call's ctx overrides. A token goes to the oldest waiting call of the highest class
// that has one; lower classes get tokens only while no higher-class call
// waits (Queue says when a token is given out).
//
// A call granted a token that comes after its ctx's deadline does not wait:
// it returns at once a transient *lifecycle.ProviderError (ErrProviderTransient,
// Refused, with RetryAfter the wait it would have needed), retried like any
// transient failure, and gives the token back. A call waiting in its queue
// cannot know when its turn comes (a higher-class call may arrive first):
// it waits until it is granted or its ctx ends; then it leaves the queue at
// once, transient and Refused too, RetryAfter the time the calls then
// waiting in its class and above take at the rate (Queue.Ahead; at
// least one token interval). Every call is reported to cfg.Metrics,
// granted with its wait or refused, by provider and class.
// cfg.Limit.Off() returns p unchanged (and reports nothing).
func Wrap(p lifecycle.Provider, cfg Config) lifecycle.Provider {
	w, _ := wrap(p, cfg)
	return w
}

// wrap is Wrap, returning its limiter too (nil when cfg.Limit is off).
func wrap(p lifecycle.Provider, cfg Config) (lifecycle.Provider, *limiter) {
	if cfg.Limit.Off() {
		return p, nil
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = lifecycle.Sleep
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	l := &limiter{p: p, q: NewQueue(cfg.Limit), clock: cfg.Clock, sleep: cfg.Sleep, m: cfg.Metrics}
	return lifecycle.Wrap(p, l.around), l
}

// limiter is Wrap's rule: every call of p takes a token of q.
type limiter struct {
	p     lifecycle.Provider
	mu    sync.Mutex // guards q
	q     *Queue
	clock lifecycle.Clock
	sleep func(ctx context.Context, d time.Duration) error
	m     Metrics
}

// around is the lifecycle.Around of Wrap: a token, then the call.
func (l *limiter) around(ctx context.Context, c lifecycle.Call, next func(context.Context, lifecycle.Provider) error) error {
	if err := l.wait(ctx, c.Op, c.SandboxID); err != nil {
		return err
	}
	return next(ctx, l.p)
}

// wait takes one token for the call op on sandboxID, in its class
// (lifecycle.ClassOf), waiting for it when needed, and reports the grant or
// refusal to l.m. Errors: transient and refused (see Wrap).
func (l *limiter) wait(ctx context.Context, op lifecycle.Op, sandboxID string) error {
	class := lifecycle.ClassOf(ctx, op)
	err := l.take(ctx, class, string(op), sandboxID)
	if err != nil {
		l.m.CallRefused(l.p.Name(), class)
	}
	return err
}

// take does wait's work: it reports a grant itself (only it knows the
// wait); wait reports a refusal.
func (l *limiter) take(ctx context.Context, class lifecycle.CallPriority, op, sandboxID string) error {
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
// before (Queue.Ahead).
func (l *limiter) leave(t *Ticket) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ahead := l.q.Ahead(t.Priority)
	l.wake(l.q.Leave(t, l.clock.Now()))
	return ahead
}

// wake tells the granted waiting callers; l.mu held.
func (l *limiter) wake(granted []*Ticket) {
	for _, g := range granted {
		if g.wake != nil {
			close(g.wake)
		}
	}
}

// interval is the time between two tokens.
func (l *limiter) interval() time.Duration {
	return time.Duration(float64(time.Second) / l.q.Limit().PerSecond)
}

// refused is the limiter's transient error: the provider was not asked, so
// the sandbox is as it was (ProviderError.Refused).
func refused(op, sandboxID string, retryAfter time.Duration, cause error) *lifecycle.ProviderError {
	return &lifecycle.ProviderError{Kind: lifecycle.ErrProviderTransient, Op: op, SandboxID: sandboxID, RetryAfter: retryAfter,
		Refused: true, Err: cause}
}
