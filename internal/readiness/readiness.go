// Package readiness runs readiness jobs (lifecycle.Service.BringUp,
// docs/READINESS.md "Where it runs"; also the resume an open of a stable
// link hands off, docs/WAKE.md "The resume runs in the background"). Worker is the local stack's
// lifecycle.ReadinessJobs: an in-process worker with bounded concurrency.
// The local stack runs two: one for the app bring-ups (Service.BringUp) and
// one for the resumes an open or a return hands off (Service.FinishResume,
// lifecycle.Config.ResumeJobs), so that a user coming back never waits for
// a slot behind slow apps. AWS uses SQS queues consumed by the readiness
// function instead (internal/readiness/sqsjobs).
//
// A job that fails (a provider or store error, or the worker's context
// ended mid-way) is run again after a backoff, up to Config.Attempts times,
// as SQS would redeliver it; BringUp looks for the app command before
// starting it, so a job run twice never starts a second server. A session
// has at most one job under way: a job queued while one runs for the same
// session is folded into it (the running one re-reads the session).
package readiness

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of Config.
const (
	DefaultConcurrency = 16
	DefaultAttempts    = 5
	DefaultBackoff     = time.Second
)

// JobFunc runs one job: in the local stack lifecycle.Service.BringUp.
type JobFunc func(ctx context.Context, sessionID string) (lifecycle.BringUpOutcome, error)

// Config is what a Worker is built from (New); every zero field means the
// default named on it.
type Config struct {
	// Concurrency is how many jobs run at once (default 16); a job waits
	// for a slot.
	Concurrency int
	// Attempts is how many times a failing job runs (default 5), waiting
	// Backoff (default 1 s, doubled each time) in between.
	Attempts int
	Backoff  time.Duration
	// Log receives failed jobs (default slog.Default()).
	Log *slog.Logger
	// Kind names the jobs in the log (default "readiness"; the checkpoint
	// worker, internal/checkpointjobs, runs its jobs on a Worker too).
	Kind string
}

// Worker is an in-process lifecycle.ReadinessJobs. Build it with New, give
// it to lifecycle.Config.ReadinessJobs, then Start it with the service's
// BringUp. Jobs queued before Start run once it is started. It is safe for
// concurrent use.
type Worker struct {
	cfg   Config
	slots chan struct{}

	mu      sync.Mutex
	run     JobFunc
	ctx     context.Context
	queued  []string
	active  map[string]bool // a job runs (or waits for a slot) for this session
	again   map[string]bool // queued again while active: run once more
	closed  bool
	wg      sync.WaitGroup
	outcome func(sessionID string, out lifecycle.BringUpOutcome, err error)
}

var _ lifecycle.ReadinessJobs = (*Worker)(nil)

// New returns a Worker with the defaults of Config filled in.
func New(cfg Config) *Worker {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Kind == "" {
		cfg.Kind = "readiness"
	}
	return &Worker{cfg: cfg, slots: make(chan struct{}, cfg.Concurrency), active: map[string]bool{}, again: map[string]bool{}}
}

// Start lets jobs run: each calls run with ctx (end it to stop; Close then
// waits for the jobs under way).
func (w *Worker) Start(ctx context.Context, run JobFunc) {
	w.mu.Lock()
	w.ctx, w.run = ctx, run
	queued := w.queued
	w.queued = nil
	w.mu.Unlock()
	for _, id := range queued {
		_ = w.Enqueue(ctx, id)
	}
}

// OnOutcome sets a function told of every finished job (tests, the bench);
// nil removes it.
func (w *Worker) OnOutcome(f func(sessionID string, out lifecycle.BringUpOutcome, err error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.outcome = f
}

// Enqueue runs a job for sessionID in the background. It never fails,
// except after Close (unavailable).
func (w *Worker) Enqueue(_ context.Context, sessionID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return lifecycle.Errorf(lifecycle.CodeUnavailable, "the readiness worker is closed")
	case w.run == nil:
		w.queued = append(w.queued, sessionID)
		return nil
	case w.active[sessionID]:
		w.again[sessionID] = true
		return nil
	}
	w.active[sessionID] = true
	w.wg.Add(1)
	go w.job(w.ctx, w.run, sessionID)
	return nil
}

// job runs sessionID's job, retrying failures, then once more if it was
// queued again meanwhile.
func (w *Worker) job(ctx context.Context, run JobFunc, sessionID string) {
	defer w.wg.Done()
	for {
		out, err := w.attempts(ctx, run, sessionID)
		w.mu.Lock()
		report := w.outcome
		again := w.again[sessionID] && ctx.Err() == nil
		delete(w.again, sessionID)
		if !again {
			delete(w.active, sessionID)
		}
		w.mu.Unlock()
		if report != nil {
			report(sessionID, out, err)
		}
		if !again {
			return
		}
	}
}

func (w *Worker) attempts(ctx context.Context, run JobFunc, sessionID string) (lifecycle.BringUpOutcome, error) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-w.slots }()
	backoff := w.cfg.Backoff
	var err error
	for i := 0; i < w.cfg.Attempts; i++ {
		if i > 0 {
			if serr := lifecycle.Sleep(ctx, backoff); serr != nil {
				return "", err
			}
			backoff *= 2
		}
		var out lifecycle.BringUpOutcome
		if out, err = run(ctx, sessionID); err == nil {
			return out, nil
		}
		w.cfg.Log.Warn(w.cfg.Kind+" job failed; retrying", "job", sessionID, "attempt", i+1, "err", err)
	}
	w.cfg.Log.Error(w.cfg.Kind+" job gave up; the sweep repairs what it left", "job", sessionID, "err", err)
	return "", err
}

// Close refuses new jobs and waits for the jobs under way (end the context
// given to Start first to cut them short).
func (w *Worker) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}
