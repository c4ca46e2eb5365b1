package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultPerEndpoint is how many attempts to one endpoint Local runs at
// once: a slow endpoint holds at most this many of its own attempts and
// none of another endpoint's.
const DefaultPerEndpoint = 4

// localRetryWait is how long Local waits before running a job again whose
// attempt failed in the store (not at the endpoint).
const localRetryWait = 2 * time.Second

// LocalConfig is what a Local is built from; zero fields mean the defaults
// named on them.
type LocalConfig struct {
	// PerEndpoint bounds concurrent attempts per endpoint. Default
	// DefaultPerEndpoint.
	PerEndpoint int
	// Clock tells the time a job is due against. Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Log receives failed jobs. Default slog.Default().
	Log *slog.Logger
}

// Local is the in-process Dispatcher of the local stack: each job waits for
// its time on its own timer, then runs in its endpoint's lane (at most
// PerEndpoint at once per endpoint), so one slow or dead endpoint never
// delays another's deliveries. Jobs live in memory: after a restart,
// Recover dispatches the deliveries that were pending.
type Local struct {
	per   int
	clock lifecycle.Clock
	log   *slog.Logger

	mu      sync.Mutex
	lanes   map[string]chan struct{}
	run     func(context.Context, Job) error
	ctx     context.Context
	wg      sync.WaitGroup
	pending int
	idle    *sync.Cond
}

// NewLocal returns a Local; Start gives it the engine to run jobs with.
func NewLocal(cfg LocalConfig) *Local {
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = DefaultPerEndpoint
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	l := &Local{per: cfg.PerEndpoint, clock: cfg.Clock, log: cfg.Log, lanes: map[string]chan struct{}{}}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// Start runs jobs with e.Attempt until ctx ends.
func (l *Local) Start(ctx context.Context, e *Engine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.run, l.ctx = e.Attempt, ctx
}

// Dispatch runs job's attempt at at (now if past), in the background.
// Errors: Start was not called, or its context ended.
func (l *Local) Dispatch(_ context.Context, job Job, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil {
		return errors.New("delivery: local dispatcher not started")
	}
	if l.ctx.Err() != nil {
		return l.ctx.Err()
	}
	lane, ok := l.lanes[job.EndpointID]
	if !ok {
		lane = make(chan struct{}, l.per)
		l.lanes[job.EndpointID] = lane
	}
	l.pending++
	l.wg.Add(1)
	go l.runJob(l.ctx, l.run, lane, job, at)
	return nil
}

func (l *Local) runJob(ctx context.Context, run func(context.Context, Job) error, lane chan struct{}, job Job, at time.Time) {
	defer func() {
		l.mu.Lock()
		l.pending--
		if l.pending == 0 {
			l.idle.Broadcast()
		}
		l.mu.Unlock()
		l.wg.Done()
	}()
	for {
		if d := at.Sub(l.clock.Now()); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case lane <- struct{}{}:
		}
		err := run(ctx, job)
		<-lane
		if err == nil || ctx.Err() != nil {
			return
		}
		l.log.WarnContext(ctx, "delivery: attempt failed; trying again", "delivery_id", job.DeliveryID, "err", err)
		at = l.clock.Now().Add(localRetryWait)
	}
}

// PendingLister lists every pending delivery. The local stack's stores
// implement it (dynamostore with a Scan, which only DynamoDB Local's small
// tables can afford; memstore); AWS needs none, its jobs live in SQS.
type PendingLister interface {
	PendingDeliveries(ctx context.Context) ([]*Delivery, error)
}

// Recover dispatches every pending delivery of store at its next attempt
// time, and the watch of each of their endpoints that has one recorded
// (Store.StartWatch) at once: jobs live in memory, so after a restart (a
// crash included) the deliveries that were waiting, parked ones included,
// are picked up again. It returns how many deliveries. Call it after Start.
func (l *Local) Recover(ctx context.Context, store PendingLister) (int, error) {
	ds, err := store.PendingDeliveries(ctx)
	if err != nil {
		return 0, fmt.Errorf("list pending deliveries: %w", err)
	}
	watches, _ := store.(interface {
		Watching(ctx context.Context, endpointID string) (time.Time, error)
	})
	seen := map[string]bool{}
	for _, d := range ds {
		job := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, DeliveryID: d.ID, Seq: len(d.Attempts)}
		if err := l.Dispatch(ctx, job, d.NextAttemptAt); err != nil {
			return 0, err
		}
		if watches == nil || seen[d.EndpointID] {
			continue
		}
		seen[d.EndpointID] = true
		since, err := watches.Watching(ctx, d.EndpointID)
		if err != nil {
			return 0, fmt.Errorf("look up the watch of endpoint %s: %w", d.EndpointID, err)
		}
		if !since.IsZero() {
			watch := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, Watch: since}
			if err := l.Dispatch(ctx, watch, l.clock.Now()); err != nil {
				return 0, err
			}
		}
	}
	return len(ds), nil
}

// Idle blocks until no job is waiting or running (tests and benchmarks).
func (l *Local) Idle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.pending > 0 {
		l.idle.Wait()
	}
}

// Wait blocks until every job has returned (after Start's context ended).
func (l *Local) Wait() { l.wg.Wait() }
