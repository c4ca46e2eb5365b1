package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of Config.
const (
	DefaultConcurrency     = 16
	DefaultRate            = rate.Limit(20) // provider calls per second
	DefaultPageSize        = 100
	DefaultDeadlineMargin  = 45 * time.Second
	DefaultReconcileSample = 500
)

// maxPageSize is the largest page lifecycle.Store.FindDue accepts.
const maxPageSize = lifecycle.MaxDuePageSize

// Config tunes a Sweeper. The zero value of every field means its default.
type Config struct {
	// Concurrency is how many sessions are worked on at once (default 16).
	Concurrency int
	// Rate is how many provider calls per second the sweep makes at most
	// (default 20; rate.Inf for no limit). Burst is the token bucket's size
	// (default Concurrency).
	Rate  rate.Limit
	Burst int
	// PageSize is the page size of index queries and of the provider list
	// (default 100, at most 1000).
	PageSize int
	// DeadlineMargin: a run stops taking new work once the context's
	// deadline is nearer than this (default 45 s: more than one provider call
	// timeout, lifecycle.DefaultCallTimeout), leaving time for the work
	// under way to finish and for the summary to be logged.
	DeadlineMargin time.Duration
	// ReconcileSample is how many of the provider's sandboxes phase 3
	// compares with the table per run, from the start of the provider's list
	// (default 500; negative turns phase 3 off).
	ReconcileSample int
	// DormancyAge, when positive, kills the sandbox of any session paused
	// longer than this and marks the session expired. Zero (the default)
	// keeps paused sessions forever.
	DormancyAge time.Duration
	// Conns, when set, drops client-channel connections that lost their
	// socket without a $disconnect and recomputes their sessions' presence
	// (internal/channel Reaper.ReapStale, docs/DESIGN.md "Client channel"),
	// once per run after the other phases. Nil: no such phase.
	Conns StaleConns
	// Wall tells the wall-clock time that the context's deadline is compared
	// with (default lifecycle.SystemClock). It is separate from the
	// service's clock, which decides what is due, so tests can move each.
	Wall lifecycle.Clock
}

// StaleConns drops dead client-channel connections (internal/channel
// Reaper): those silent for longer than its bound as of now. It returns how
// many it dropped.
type StaleConns interface {
	ReapStale(ctx context.Context, now time.Time) (int, error)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Burst <= 0 {
		c.Burst = c.Concurrency
	}
	if c.PageSize <= 0 {
		c.PageSize = DefaultPageSize
	}
	c.PageSize = min(c.PageSize, maxPageSize)
	if c.DeadlineMargin <= 0 {
		c.DeadlineMargin = DefaultDeadlineMargin
	}
	if c.ReconcileSample == 0 {
		c.ReconcileSample = DefaultReconcileSample
	}
	if c.Wall == nil {
		c.Wall = lifecycle.SystemClock{}
	}
	return c
}

// Sweeper runs the idle sweep (see the package doc). It keeps no state
// between runs except its rate limiter, and is safe for concurrent use:
// overlapping runs are decided by the table's conditional writes.
type Sweeper struct {
	svc     *lifecycle.Service
	log     *slog.Logger
	cfg     Config
	limiter *rate.Limiter

	// listMu guards listTokens: where phase 3 of the next run starts in
	// each provider's list (by provider name), so successive runs of a warm
	// Lambda container walk the whole list instead of the same first
	// ReconcileSample sandboxes. A cold start begins at the head again.
	listMu     sync.Mutex
	listTokens map[string]string
}

// New returns a Sweeper that works through svc's operations: every read,
// write and provider call is the service's (bounded by its call timeout,
// SANDMAN_PROVIDER_CALL_TIMEOUT), and svc's clock decides what is due. log
// may be nil (slog.Default()).
func New(svc *lifecycle.Service, cfg Config, log *slog.Logger) *Sweeper {
	if log == nil {
		log = slog.Default()
	}
	cfg = cfg.withDefaults()
	return &Sweeper{
		svc:        svc,
		log:        log,
		cfg:        cfg,
		limiter:    rate.NewLimiter(cfg.Rate, cfg.Burst),
		listTokens: map[string]string{},
	}
}

// Run sweeps once: the five phases of the package doc, in order, each
// bounded by the context's deadline less Config.DeadlineMargin. It logs the
// summary once and returns it. It returns an error only when the run could
// not start: the first query of the idle index failed (the store is
// unreachable, say). Anything that goes wrong later is logged, counted and,
// when work was left undone, reported as Summary.Incomplete.
func (sw *Sweeper) Run(ctx context.Context) (Summary, error) {
	ctx = lifecycle.WithActor(ctx, lifecycle.ActorSweep)
	start := sw.cfg.Wall.Now()
	r := &run{sw: sw, now: sw.svc.Now()}
	if err := r.idle(ctx); err != nil {
		sw.log.ErrorContext(ctx, "idle sweep could not start", "err", err)
		return Summary{}, err
	}
	r.leases(ctx)
	r.checkpoints(ctx)
	r.providerList(ctx)
	r.dormant(ctx)
	r.tiers(ctx)
	r.staleConns(ctx)
	r.pools(ctx)
	sum := r.summary(sw.cfg.Wall.Now().Sub(start))
	sw.log.InfoContext(ctx, "idle sweep finished", "summary", sum)
	return sum, nil
}

// pools is phase 5: bring every warm pool to its size
// (lifecycle.Service.FillPools, docs/POOLS.md "Refill"), within the run's
// deadline less DeadlineMargin. A spare whose making the deadline cut short
// stays making and is dropped by a later run.
func (r *run) pools(ctx context.Context) {
	if len(r.sw.svc.Pools()) == 0 || r.outOfTime(ctx) {
		return
	}
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-r.sw.cfg.DeadlineMargin))
		defer cancel()
	}
	sum := r.sw.svc.FillPools(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.SparesMade, r.sum.SparesFailed, r.sum.SparesRetired = sum.Made, sum.Failed, sum.Retired+sum.Dropped
	r.sum.PoolsStopped = sum.Stopped
}

// staleConns runs Config.Conns, if set, unless the run is out of time.
func (r *run) staleConns(ctx context.Context) {
	if r.sw.cfg.Conns == nil {
		return
	}
	if r.outOfTime(ctx) {
		r.incomplete()
		return
	}
	n, err := r.sw.cfg.Conns.ReapStale(ctx, r.now)
	r.add(&r.sum.StaleConns, n)
	if err != nil {
		r.sw.log.WarnContext(ctx, "drop stale connections", "err", err)
		r.incomplete()
	}
}

// run is the state of one Run: the time it sweeps at and its tallies.
type run struct {
	sw  *Sweeper
	now time.Time // the service clock's time at the start: what is due

	mu   sync.Mutex
	sum  Summary
	lags []time.Duration // paused sessions: pause time minus pause deadline
}

// add adds n to counter, a field of r.sum, under the lock.
func (r *run) add(counter *int, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*counter += n
}

// incomplete records that the run left work for the next one.
func (r *run) incomplete() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Incomplete = true
}

// outOfTime reports whether the run must stop taking new work: ctx ended or
// its deadline is nearer than DeadlineMargin.
func (r *run) outOfTime(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && deadline.Sub(r.sw.cfg.Wall.Now()) < r.sw.cfg.DeadlineMargin
}

// begin waits for a provider-call token and reports whether the work may go
// ahead; when it may not (out of time), the run is marked incomplete.
func (r *run) begin(ctx context.Context) bool {
	if r.outOfTime(ctx) || r.sw.limiter.Wait(ctx) != nil || r.outOfTime(ctx) {
		r.incomplete()
		return false
	}
	return true
}

// eachDue pages through the due index ix (due at or before before) and runs
// work on every session found, at most Concurrency at a time. It stops
// taking new sessions when the run is out of time, and waits for the work
// under way. It returns an error only when the first page could not be
// read; a later page's failure is logged and marks the run incomplete.
func (r *run) eachDue(ctx context.Context, ix lifecycle.DueIndex, before time.Time, found *int,
	work func(context.Context, *lifecycle.Session)) error {
	var g errgroup.Group
	g.SetLimit(r.sw.cfg.Concurrency)
	defer func() { _ = g.Wait() }() // workers never return errors
	cursor := ""
	for page := 0; ; page++ {
		if r.outOfTime(ctx) {
			r.incomplete()
			return nil
		}
		res, err := r.sw.svc.FindDue(ctx, lifecycle.DueQuery{Index: ix, Before: before, Limit: r.sw.cfg.PageSize, Cursor: cursor})
		if err != nil {
			if page == 0 {
				return fmt.Errorf("find due sessions in the %s index: %w", ix, err)
			}
			r.sw.log.ErrorContext(ctx, "read next page of due sessions", "index", ix, "page", page, "err", err)
			r.incomplete()
			return nil
		}
		r.add(found, len(res.Sessions))
		for _, sess := range res.Sessions {
			if r.outOfTime(ctx) {
				r.incomplete()
				return nil
			}
			g.Go(func() error {
				work(ctx, sess)
				return nil
			})
		}
		if res.Cursor == "" {
			return nil
		}
		cursor = res.Cursor
	}
}

// idle is phase 1: pause running sessions past their pause deadline and,
// when the service has timers (docs/DESIGN.md "Precise pausing"), arm a timer for
// every running session due before the next tick plus a margin (the
// service's TimerHorizon), so it pauses on its deadline and not at a later
// tick. The window is one range query on the same sparse index.
func (r *run) idle(ctx context.Context) error {
	window := r.now
	if cfg := r.sw.svc.Config(); cfg.Timers != nil {
		window = r.now.Add(cfg.TimerHorizon)
	}
	return r.eachDue(ctx, lifecycle.IndexIdle, window, &r.sum.Candidates, func(ctx context.Context, sess *lifecycle.Session) {
		if sess.State == lifecycle.StateRunning && !sess.Due(r.now) && !sess.PauseDeadline().IsZero() {
			r.arm(ctx, sess)
			return
		}
		r.pause(ctx, sess)
	})
}

// arm arms the timer of a running session due within the window.
func (r *run) arm(ctx context.Context, sess *lifecycle.Session) {
	armed, err := r.sw.svc.ArmTimer(ctx, sess)
	switch {
	case err != nil:
		r.sw.log.WarnContext(ctx, "arm pause timer; the next run tries again", "session_id", sess.ID, "err", err)
		r.add(&r.sum.ArmFailed, 1)
	case armed:
		r.add(&r.sum.Armed, 1)
	default:
		r.add(&r.sum.Skipped, 1)
	}
}

// pause pauses one idle candidate and counts the outcome.
func (r *run) pause(ctx context.Context, sess *lifecycle.Session) {
	log := r.sw.log.With("session_id", sess.ID, "sandbox_id", sess.SandboxID)
	if !sess.Due(r.now) {
		// A stale index entry: the session moved since the index was read.
		log.DebugContext(ctx, "idle candidate no longer due", "state", sess.State)
		r.add(&r.sum.Skipped, 1)
		return
	}
	due := sess.PauseDeadline()
	if !r.begin(ctx) {
		return
	}
	err := r.sw.svc.PauseIfDue(ctx, sess, r.now)
	switch pauseOutcome(err) {
	case outcomePaused:
		lag := r.sw.svc.Now().Sub(due)
		r.mu.Lock()
		r.sum.Paused++
		r.lags = append(r.lags, lag)
		r.mu.Unlock()
	case outcomeExpired:
		log.InfoContext(ctx, "idle session's sandbox is gone; session expired")
		r.add(&r.sum.Expired, 1)
	case outcomeSkipped:
		log.DebugContext(ctx, "idle session moved meanwhile; not paused", "err", err)
		r.add(&r.sum.Skipped, 1)
	default:
		log.WarnContext(ctx, "pause idle session failed; the next run retries", "err", err)
		r.add(&r.sum.Failed, 1)
	}
}

// outcome classifies what happened to one idle candidate.
type outcome int

const (
	outcomePaused  outcome = iota
	outcomeExpired         // the provider says the sandbox is gone
	outcomeFailed          // transient: rolled back to running, retried next run
	outcomeSkipped         // lost the race: a heartbeat or another writer moved it
)

// pauseOutcome classifies Service.Pause's error (see its doc).
func pauseOutcome(err error) outcome {
	switch {
	case err == nil:
		return outcomePaused
	case errors.Is(err, lifecycle.ErrSandboxGone):
		return outcomeExpired
	case errors.Is(err, lifecycle.ErrSandboxConflict), errors.Is(err, lifecycle.ErrProviderTransient):
		// Provider trouble; a provider conflict also carries CodeConflict,
		// so this case comes before the lost-race one.
		return outcomeFailed
	case lifecycle.IsCode(err, lifecycle.CodeConflict), lifecycle.IsCode(err, lifecycle.CodeNotFound):
		return outcomeSkipped
	default:
		return outcomeFailed
	}
}

// leases is phase 2: reconcile transitional sessions whose lease ran out.
func (r *run) leases(ctx context.Context) {
	if r.outOfTime(ctx) {
		r.incomplete()
		return
	}
	err := r.eachDue(ctx, lifecycle.IndexLease, r.now, &r.sum.Leases, func(ctx context.Context, sess *lifecycle.Session) {
		// Its scheduled checkpoint due, its app still starting, or its
		// resume handed to a job, within the lease: its job may be lost.
		if sess.State == lifecycle.StateRunning {
			r.scheduledCheckpoint(ctx, sess)
		}
		if sess.State == lifecycle.StateRunning || sess.ResumeJobDue(r.now) {
			r.requeueReadiness(ctx, sess)
			return
		}
		r.reconcile(ctx, sess)
	})
	if err != nil {
		r.sw.log.ErrorContext(ctx, "reconcile expired leases", "err", err)
		r.incomplete()
	}
}

// scheduledCheckpoint takes the scheduled checkpoint of a running session
// when it is due (lifecycle.Service.CheckpointIfDue); sess is updated.
func (r *run) scheduledCheckpoint(ctx context.Context, sess *lifecycle.Session) {
	if sess.NextCheckpointAt.IsZero() || sess.NextCheckpointAt.After(r.now) {
		return
	}
	took, err := r.sw.svc.CheckpointIfDue(ctx, sess)
	switch {
	case err != nil:
		r.sw.log.WarnContext(ctx, "scheduled checkpoint; the next run tries again", "session_id", sess.ID, "err", err)
	case took:
		r.add(&r.sum.CheckpointsScheduled, 1)
	}
}

// checkpoints is phase 2b: resolve the saving checkpoints whose lease ran
// out (lifecycle.Service.ReconcileCheckpoint): a save job that died or was
// lost, a snapshot taken but never recorded.
func (r *run) checkpoints(ctx context.Context) {
	cursor := ""
	for {
		if r.outOfTime(ctx) {
			r.incomplete()
			return
		}
		page, err := r.sw.svc.FindCheckpointsDue(ctx, lifecycle.CheckpointDueQuery{Before: r.now, Limit: r.sw.cfg.PageSize, Cursor: cursor})
		if err != nil {
			r.sw.log.ErrorContext(ctx, "find checkpoints past their lease", "err", err)
			r.incomplete()
			return
		}
		for _, c := range page.Checkpoints {
			r.add(&r.sum.CheckpointsDue, 1)
			if !r.begin(ctx) {
				return
			}
			changed, err := r.sw.svc.ReconcileCheckpoint(ctx, c)
			switch {
			case err != nil:
				r.sw.log.WarnContext(ctx, "resolve a checkpoint past its lease; the next run retries",
					"checkpoint_id", c.ID, "session_id", c.SessionID, "err", err)
				r.add(&r.sum.CheckpointsFailed, 1)
			case changed:
				r.sw.log.InfoContext(ctx, "resolved a checkpoint past its lease", "checkpoint_id", c.ID,
					"session_id", c.SessionID, "state", c.State)
				r.add(&r.sum.CheckpointsResolved, 1)
			}
		}
		if cursor = page.Cursor; cursor == "" {
			return
		}
	}
}

// requeueReadiness queues the readiness job of a running session whose app
// has been starting longer than lifecycle.ReadinessRequeueAfter, or of a
// resuming one whose resume a job should have finished within
// lifecycle.ResumeRequeueAfter.
func (r *run) requeueReadiness(ctx context.Context, sess *lifecycle.Session) {
	queued, err := r.sw.svc.RequeueReadiness(ctx, sess)
	switch {
	case err != nil:
		r.sw.log.WarnContext(ctx, "re-queue readiness job; the next run tries again", "session_id", sess.ID, "err", err)
		r.add(&r.sum.RequeueFailed, 1)
	case queued:
		r.sw.log.InfoContext(ctx, "re-queued the readiness job of a session still starting or resuming", "session_id", sess.ID, "state", sess.State,
			"since", sess.StateChangedAt)
		r.add(&r.sum.Requeued, 1)
	}
}

// reconcile puts one session into the state its provider reports.
func (r *run) reconcile(ctx context.Context, sess *lifecycle.Session) {
	if !r.begin(ctx) {
		return
	}
	from := sess.State
	changed, err := r.sw.svc.Reconcile(ctx, sess)
	log := r.sw.log.With("session_id", sess.ID, "from", from)
	switch {
	case err == nil && changed:
		log.InfoContext(ctx, "reconciled session with its provider", "to", sess.State)
		r.add(&r.sum.Reconciled, 1)
	case err == nil:
	case lifecycle.IsCode(err, lifecycle.CodeConflict) && !errors.Is(err, lifecycle.ErrSandboxConflict):
		log.DebugContext(ctx, "session moved meanwhile; not reconciled", "err", err)
	default:
		log.WarnContext(ctx, "reconcile session failed; the next run retries", "err", err)
		r.add(&r.sum.ReconcileFailed, 1)
	}
}

// providerList is phase 3: for every configured provider
// (lifecycle.Service.ProviderNames), compare up to ReconcileSample of its
// sandboxes (only this deployment's, when the service names one) with the
// table, reconcile running/paused disagreements and reap orphans. A
// provider that sends no webhooks (Vercel) has its drift found here. Each
// run continues, per provider, where the previous run of this Sweeper
// stopped.
func (r *run) providerList(ctx context.Context) {
	if r.sw.cfg.ReconcileSample < 0 {
		return
	}
	var g errgroup.Group
	g.SetLimit(r.sw.cfg.Concurrency)
	defer func() { _ = g.Wait() }()
	for _, provider := range r.sw.svc.ProviderNames() {
		if !r.listProvider(ctx, &g, provider) {
			return
		}
	}
}

// listProvider walks up to ReconcileSample of one provider's sandboxes,
// comparing each on g. It returns false when the run is out of time.
func (r *run) listProvider(ctx context.Context, g *errgroup.Group, provider string) bool {
	sample := r.sw.cfg.ReconcileSample
	r.sw.listMu.Lock()
	token := r.sw.listTokens[provider]
	r.sw.listMu.Unlock()
	defer func() {
		r.sw.listMu.Lock()
		r.sw.listTokens[provider] = token
		r.sw.listMu.Unlock()
	}()
	for seen := 0; seen < sample; {
		if !r.begin(ctx) {
			return false
		}
		page, err := r.sw.svc.ListSandboxes(ctx, provider, token, min(r.sw.cfg.PageSize, sample-seen))
		if err != nil {
			r.sw.log.WarnContext(ctx, "list provider sandboxes", "provider", provider, "err", err)
			token = "" // a stale page token must not fail every later run
			return true
		}
		r.add(&r.sum.Listed, len(page.Sandboxes))
		seen += len(page.Sandboxes)
		for _, sb := range page.Sandboxes {
			if r.outOfTime(ctx) {
				r.incomplete()
				return false
			}
			g.Go(func() error {
				r.compare(ctx, sb)
				return nil
			})
		}
		token = page.NextToken
		if token == "" || len(page.Sandboxes) == 0 {
			return true
		}
	}
	return true
}

// compare looks one listed sandbox up in the table and reconciles its
// session when the two disagree about running versus paused.
func (r *run) compare(ctx context.Context, sb lifecycle.Sandbox) {
	log := r.sw.log.With("provider", sb.Provider, "sandbox_id", sb.ID, "sandbox_state", sb.State)
	sess, err := r.sw.svc.SessionOfSandbox(ctx, sb)
	switch {
	case lifecycle.IsCode(err, lifecycle.CodeNotFound):
		r.add(&r.sum.Unknown, 1)
		r.reap(ctx, sb, log)
		return
	case err != nil:
		log.WarnContext(ctx, "look up listed sandbox", "err", err)
		r.add(&r.sum.ReconcileFailed, 1)
		return
	}
	switch {
	case sess.State == lifecycle.StateRunning && sb.State == lifecycle.SandboxPaused,
		sess.State == lifecycle.StatePaused && sb.State == lifecycle.SandboxRunning:
		r.reconcile(ctx, sess)
	case sess.State.Final():
		log.WarnContext(ctx, "provider sandbox of a finished session still exists", "session_id", sess.ID, "state", sess.State)
		r.reap(ctx, sb, log)
	}
}

// reap kills a listed sandbox no live session holds (Service.ReapOrphan);
// one that is not Sandman's, or too young to judge, is left alone.
func (r *run) reap(ctx context.Context, sb lifecycle.Sandbox, log *slog.Logger) {
	if !r.begin(ctx) {
		return
	}
	killed, err := r.sw.svc.ReapOrphan(ctx, sb)
	switch {
	case err != nil:
		log.WarnContext(ctx, "kill orphaned sandbox failed; the next run retries", "err", err)
		r.add(&r.sum.ReconcileFailed, 1)
	case killed:
		r.add(&r.sum.OrphansKilled, 1)
	default:
		log.InfoContext(ctx, "provider sandbox unknown to the table, left alone", "session_id", sb.Metadata[lifecycle.MetadataSessionID])
	}
}

// dormant is phase 4: kill the sandboxes of sessions paused longer than
// DormancyAge and mark them expired.
func (r *run) dormant(ctx context.Context) {
	age := r.sw.cfg.DormancyAge
	if age <= 0 {
		return
	}
	if r.outOfTime(ctx) {
		r.incomplete()
		return
	}
	err := r.eachDue(ctx, lifecycle.IndexPaused, r.now.Add(-age), &r.sum.Dormant, r.retire)
	if err != nil {
		r.sw.log.ErrorContext(ctx, "retire dormant sessions", "err", err)
		r.incomplete()
	}
}

// retire marks one dormant session expired and kills its sandbox
// (lifecycle.Service.ExpireDormant, then KillDormantSandbox once the rate
// limit allows). Out of time after the write, or a kill that fails, leaves
// the sandbox to phase 3 of a later run (lifecycle.Service.ReapOrphan).
func (r *run) retire(ctx context.Context, found *lifecycle.Session) {
	log := r.sw.log.With("session_id", found.ID)
	sess, sandboxID, err := r.sw.svc.ExpireDormant(ctx, found.ID, r.now.Add(-r.sw.cfg.DormancyAge))
	if err != nil {
		log.WarnContext(ctx, "read dormant session", "err", err)
		r.add(&r.sum.ReconcileFailed, 1)
		return
	}
	if sess == nil {
		return // moved meanwhile
	}
	log.InfoContext(ctx, "retired dormant session", "sandbox_id", sandboxID, "paused_at", sess.PausedAt)
	if sandboxID == "" || !r.begin(ctx) {
		return // out of time: phase 3 of a later run kills it
	}
	if err := r.sw.svc.KillDormantSandbox(ctx, sess, sandboxID); err != nil {
		log.WarnContext(ctx, "kill dormant sandbox; phase 3 of a later run retries", "sandbox_id", sandboxID, "err", err)
		r.add(&r.sum.ReconcileFailed, 1)
		return
	}
	r.add(&r.sum.DormantKilled, 1)
}

// summary returns the tallies with the lag statistics and took filled in.
func (r *run) summary(took time.Duration) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := r.sum
	sum.DurationMS = took.Milliseconds()
	if len(r.lags) > 0 {
		lags := slices.Clone(r.lags)
		slices.Sort(lags)
		sum.LagP50MS = lags[(len(lags)-1)/2].Milliseconds()
		sum.LagMaxMS = lags[len(lags)-1].Milliseconds()
	}
	return sum
}
