// Package localtimer is the local stack's lifecycle.Timers: in-process
// one-shot timers (docs/DESIGN.md "Precise pausing", "locally an in-process timer
// behind the same interface"). AWS uses an SQS queue instead
// (internal/timer/sqstimer).
//
// A session has at most one pending timer: arming again for a later time
// keeps the earlier timer (it fires, finds the deadline moved and re-arms
// through lifecycle.Service.FireTimer), arming for an earlier time replaces
// it. A fired timer waits for one of Config.Concurrency slots and a token of
// a rate limiter (Config.Rate fires per second, each at most one provider
// pause) before calling the fire function, so a burst of deadlines never
// exceeds the provider's rate. A fire that fails is logged and left to the
// sweep, the backstop. Timers live in memory only: a restart loses them and
// the first sweep tick arms them again.
package localtimer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of Config.
const (
	DefaultConcurrency = 8
	DefaultRate        = rate.Limit(20) // fires per second, the sweep's provider rate
)

// Config is what Timers are built from (New); every zero field means the
// default named on it, filled in once by New.
type Config struct {
	// Concurrency is how many fires run at once (default 8).
	Concurrency int
	// Rate is how many fires start per second at most (default 20), with a
	// burst of Concurrency.
	Rate rate.Limit
	// Clock is the wall clock (default lifecycle.SystemClock).
	Clock lifecycle.Clock
	// AfterFunc runs f after d and returns a stop function reporting whether
	// it stopped f from running (default time.AfterFunc's Stop). Tests
	// replace it to fire timers by hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
	// Log receives failed fires (default slog.Default()).
	Log *slog.Logger
}

// FireFunc is what a fired timer calls: in the local stack,
// lifecycle.Service.FireTimer.
type FireFunc func(ctx context.Context, sessionID string) error

// Timers is an in-process lifecycle.Timers. Build it with New, give it to
// lifecycle.Config.Timers, then Start it with the service's FireTimer. It is
// safe for concurrent use.
type Timers struct {
	opts    Config
	limiter *rate.Limiter
	slots   chan struct{}

	mu      sync.Mutex
	fire    FireFunc
	ctx     context.Context // set by Start; fires use it
	pending map[string]*entry
	closed  bool
	wg      sync.WaitGroup
}

type entry struct {
	at   time.Time
	stop func() bool
}

var _ lifecycle.Timers = (*Timers)(nil)

// New returns Timers with the defaults of Config filled in. Timers armed
// before Start are kept and fire once started.
func New(opts Config) *Timers {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Rate <= 0 {
		opts.Rate = DefaultRate
	}
	if opts.Clock == nil {
		opts.Clock = lifecycle.SystemClock{}
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Timers{
		opts:    opts,
		limiter: rate.NewLimiter(opts.Rate, opts.Concurrency),
		slots:   make(chan struct{}, opts.Concurrency),
		pending: map[string]*entry{},
	}
}

// Start lets timers fire: each calls fire with ctx (ended by the caller to
// stop; Close then waits for the fires under way).
func (t *Timers) Start(ctx context.Context, fire FireFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ctx, t.fire = ctx, fire
}

// Arm schedules a fire for sessionID at at (see the package doc for how it
// merges with a pending one). It never fails, except after Close
// (unavailable).
func (t *Timers) Arm(_ context.Context, sessionID string, at time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return lifecycle.Errorf(lifecycle.CodeUnavailable, "local timers are closed")
	}
	if old, ok := t.pending[sessionID]; ok {
		if !at.Before(old.at) {
			return nil
		}
		if !old.stop() {
			// It is firing now; the fire re-reads the session.
			return nil
		}
	}
	e := &entry{at: at}
	e.stop = t.opts.AfterFunc(max(at.Sub(t.opts.Clock.Now()), 0), func() { t.fired(sessionID, e) })
	t.pending[sessionID] = e
	return nil
}

// Pending returns how many sessions have a timer armed.
func (t *Timers) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// fired runs one timer: it drops the pending entry, then waits for a slot
// and a rate token and calls the fire function.
func (t *Timers) fired(sessionID string, e *entry) {
	t.mu.Lock()
	if t.pending[sessionID] == e {
		delete(t.pending, sessionID)
	}
	ctx, fire, closed := t.ctx, t.fire, t.closed
	if closed || fire == nil {
		t.mu.Unlock()
		if !closed {
			t.opts.Log.Warn("pause timer fired before the timers started; the sweep covers it", "session_id", sessionID)
		}
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	defer t.wg.Done()
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-t.slots }()
	if err := t.limiter.Wait(ctx); err != nil {
		return
	}
	if err := fire(ctx, sessionID); err != nil {
		t.opts.Log.Warn("pause timer failed; the sweep retries", "session_id", sessionID, "err", err)
	}
}

// Close stops every pending timer and waits for the fires under way (end
// the context given to Start first to cut them short). Arm fails afterwards.
func (t *Timers) Close() {
	t.mu.Lock()
	t.closed = true
	for id, e := range t.pending {
		e.stop()
		delete(t.pending, id)
	}
	t.mu.Unlock()
	t.wg.Wait()
}
