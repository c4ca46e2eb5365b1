package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// sweepTimeout bounds the measured sweep run; a run that needs longer is a
// finding in itself, reported as incomplete.
const sweepTimeout = 15 * time.Minute

// SweepConfig sizes RunSweep. Zero fields take the defaults named.
type SweepConfig struct {
	// Sessions is how many running sessions the table holds (default
	// 100,000), Idle how many of them are past their pause deadline
	// (default 10,000), spread evenly through the seeding order.
	Sessions int
	Idle     int
	// PauseLatency is how long each provider pause takes: a real sleep in
	// the fake provider (fake.Fault.Delay) (default 100 ms).
	PauseLatency time.Duration
	// Concurrency is sweep.Config.Concurrency (default 64).
	Concurrency int
	// Rate is sweep.Config.Rate, provider calls per second (default
	// rate.Inf: no limit, so it cannot bind).
	Rate rate.Limit
	// PageSize is sweep.Config.PageSize (0: the sweep's default, 100).
	PageSize int
	// SeedWorkers is how many Store.CreateSession calls seeding runs at
	// once (default 32).
	SeedWorkers int
	// ControlIdle is how many further sessions (counted in Sessions, spread
	// evenly through the others) come due 2 minutes after the measured
	// sweep; a second, control sweep then pauses them with no provider
	// latency, measuring what the table alone costs (default Idle;
	// negative: no control run).
	ControlIdle int
}

func (c SweepConfig) withDefaults() SweepConfig {
	if c.Sessions <= 0 {
		c.Sessions = 100_000
	}
	if c.Idle <= 0 {
		c.Idle = 10_000
	}
	c.Idle = min(c.Idle, c.Sessions)
	if c.PauseLatency <= 0 {
		c.PauseLatency = 100 * time.Millisecond
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.Rate <= 0 {
		c.Rate = rate.Inf
	}
	if c.PageSize <= 0 {
		c.PageSize = sweep.DefaultPageSize
	}
	if c.SeedWorkers <= 0 {
		c.SeedWorkers = 32
	}
	if c.ControlIdle == 0 {
		c.ControlIdle = c.Idle
	}
	c.ControlIdle = min(c.ControlIdle, c.Sessions-c.Idle)
	return c
}

// SeedResult is how the sweep's table was filled.
type SeedResult struct {
	// Method says how items were written.
	Method  string  `json:"method"`
	Workers int     `json:"workers"`
	Items   int     `json:"items"`
	Seconds float64 `json:"seconds"`
	// ItemsPerSecond is Items ÷ Seconds.
	ItemsPerSecond float64          `json:"items_per_second"`
	Ops            map[string]int64 `json:"dynamodb_ops"`
}

// SweepCheck is the check of a sweep's outcome against what was seeded.
type SweepCheck struct {
	// ProviderPauseCalls is how many pauses the provider was asked for.
	ProviderPauseCalls int `json:"provider_pause_calls"`
	// ProviderOtherCalls is every other provider call of the run.
	ProviderOtherCalls int `json:"provider_other_calls"`
	// ProviderPaused and ProviderRunning count the provider's sandboxes.
	ProviderPaused  int `json:"provider_paused"`
	ProviderRunning int `json:"provider_running"`
	// TablePaused counts the paused index (every paused session).
	TablePaused int `json:"table_paused"`
	// TableUntouched counts the idle index's sessions (every running one)
	// that are still at version 1: never written since seeding.
	TableUntouched int `json:"table_untouched"`
	// TableIdleIndex counts the idle index, touched or not.
	TableIdleIndex int `json:"table_idle_index"`
	// Events is how many lifecycle events the service published.
	Events int64 `json:"events"`
	// OK is true when every count is what the seeding implies.
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
	// Ops is the DynamoDB requests of the check itself (not the sweep's).
	Ops map[string]int64 `json:"dynamodb_ops"`
}

// SweepResult is the sweep-at-scale figure.
type SweepResult struct {
	Sessions        int     `json:"sessions"`
	Idle            int     `json:"idle"`
	PauseLatencyMS  float64 `json:"pause_latency_ms"`
	Concurrency     int     `json:"concurrency"`
	Rate            string  `json:"rate"`
	PageSize        int     `json:"page_size"`
	ReconcileSample string  `json:"reconcile_sample"`

	Seed SeedResult `json:"seed"`

	// WallSeconds is Sweeper.Run's wall time, timed around the call.
	WallSeconds float64 `json:"wall_seconds"`
	// BoundSeconds is idle × pause latency ÷ concurrency: the least time
	// any sweep with that concurrency needs.
	BoundSeconds float64 `json:"bound_seconds"`
	// WallOverBound is WallSeconds ÷ BoundSeconds.
	WallOverBound float64 `json:"wall_over_bound"`
	// PausesPerSecond is Summary.Paused ÷ WallSeconds.
	PausesPerSecond float64 `json:"pauses_per_second"`
	// Summary is what the sweep itself reported.
	Summary sweep.Summary `json:"summary"`
	// Ops is every DynamoDB request issued during Run, by operation.
	Ops map[string]int64 `json:"dynamodb_ops"`
	// Scans is Ops["Scan"]: the proof that no table scan was issued.
	Scans int64 `json:"scans"`

	Check SweepCheck `json:"check"`

	// Control is the control sweep (SweepConfig.ControlIdle), nil when off.
	Control *SweepControl `json:"control,omitempty"`
}

// SweepControl is a second sweep over the same table, run after the
// measured one, with no provider latency: its wall time is what the table
// writes (two conditional PutItems per pause) and the sweep's own work cost
// on this machine, the floor under the measured sweep's wall time.
type SweepControl struct {
	Idle        int     `json:"idle"`
	WallSeconds float64 `json:"wall_seconds"`
	// PausesPerSecond is Summary.Paused ÷ WallSeconds; WritesPerSecond
	// is the PutItem requests ÷ WallSeconds.
	PausesPerSecond float64          `json:"pauses_per_second"`
	WritesPerSecond float64          `json:"writes_per_second"`
	Summary         sweep.Summary    `json:"summary"`
	Ops             map[string]int64 `json:"dynamodb_ops"`
	Scans           int64            `json:"scans"`
	// ProviderPauseCalls is how many pauses the provider was asked for.
	ProviderPauseCalls int      `json:"provider_pause_calls"`
	OK                 bool     `json:"ok"`
	Problems           []string `json:"problems,omitempty"`
}

// RunSweep seeds a fresh table with cfg.Sessions running sessions (cfg.Idle
// of them past their pause deadline, cfg.ControlIdle due 2 minutes later,
// the rest 9 minutes later) and their sandboxes in the fake provider, then
// runs one sweep with phase 3 (provider-list reconcile) off and dormancy
// off, so the figure is about pausing, and checks what it did. Then the
// control sweep (see SweepControl). The service and provider clock is fixed
// at the seeding time, so what is due does not depend on how long seeding
// took; the pause latency and the wall time are real.
func RunSweep(ctx context.Context, env *Env, cfg SweepConfig) (SweepResult, error) {
	sb, drop, err := newSweepBench(ctx, env, cfg)
	if err != nil {
		return SweepResult{}, err
	}
	defer drop()
	seed, err := sb.seed(ctx)
	if err != nil {
		return SweepResult{}, err
	}
	res, err := sb.sweep(ctx)
	if err != nil {
		return SweepResult{}, err
	}
	res.Seed = seed
	if sb.cfg.ControlIdle > 0 {
		if res.Control, err = sb.control(ctx); err != nil {
			return SweepResult{}, err
		}
	}
	return res, nil
}

// sweepBench is one sweep figure: its table, provider and fixed clock.
type sweepBench struct {
	env      *Env
	cfg      SweepConfig
	t0       time.Time
	clock    *lifecycle.ManualClock
	store    *dynamo.Store
	provider *fake.Provider
	sessions []*lifecycle.Session // seeded, in seeding order
}

// newSweepBench creates the table; the returned function drops it.
func newSweepBench(ctx context.Context, env *Env, cfg SweepConfig) (*sweepBench, func(), error) {
	cfg = cfg.withDefaults()
	table, drop, err := env.NewTable(ctx, "bench-sweep")
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	clock := lifecycle.NewManualClock(t0)
	return &sweepBench{
		env:      env,
		cfg:      cfg,
		t0:       t0,
		clock:    clock,
		store:    env.Store(table),
		provider: fake.New(fake.Config{Clock: clock}),
	}, drop, nil
}

// sweep runs one measured sweep over the seeded table and checks it.
func (sb *sweepBench) sweep(ctx context.Context) (SweepResult, error) {
	cfg, env := sb.cfg, sb.env
	res := SweepResult{
		Sessions: cfg.Sessions, Idle: cfg.Idle, PauseLatencyMS: ms(cfg.PauseLatency),
		Concurrency: cfg.Concurrency, Rate: rateString(cfg.Rate), PageSize: cfg.PageSize,
		ReconcileSample: "off",
	}
	var events atomic.Int64
	sw := sb.sweeper(&events)
	sb.provider.SetFault(fake.OpPause, fake.Fault{Delay: cfg.PauseLatency})
	sb.provider.ResetCalls()

	res.BoundSeconds = seconds(time.Duration(cfg.Idle) * cfg.PauseLatency / time.Duration(cfg.Concurrency))
	env.Printf("sweep: running one sweep (%d idle of %d, pause %v, concurrency %d, rate %s); bound %.1f s",
		cfg.Idle, cfg.Sessions, cfg.PauseLatency, cfg.Concurrency, res.Rate, res.BoundSeconds)
	rctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	before := env.Ops.Snapshot()
	start := time.Now()
	sum, err := sw.Run(rctx)
	wall := time.Since(start)
	res.Ops = Since(before, env.Ops.Snapshot())
	if err != nil {
		return SweepResult{}, fmt.Errorf("sweep run: %w", err)
	}
	res.Summary = sum
	res.WallSeconds = seconds(wall)
	res.WallOverBound = ratio(res.WallSeconds, res.BoundSeconds)
	res.PausesPerSecond = math.Round(float64(sum.Paused) / wall.Seconds())
	res.Scans = res.Ops[OpScan]
	env.Printf("sweep: paused %d in %.1f s (bound %.1f s, ×%.2f); DynamoDB ops %v",
		sum.Paused, res.WallSeconds, res.BoundSeconds, res.WallOverBound, res.Ops)

	sb.provider.SetFault(fake.OpPause, fake.Fault{})
	if res.Check, err = sb.check(ctx, sum); err != nil {
		return SweepResult{}, err
	}
	res.Check.Events = events.Load()
	if want := int64(2 * cfg.Idle); res.Check.Events != want {
		res.Check.Problems = append(res.Check.Problems, fmt.Sprintf("%d lifecycle events published, want %d (pausing and paused per idle session)", res.Check.Events, want))
	}
	if res.Scans != 0 {
		res.Check.Problems = append(res.Check.Problems, fmt.Sprintf("the sweep issued %d Scan requests", res.Scans))
	}
	res.Check.OK = len(res.Check.Problems) == 0
	env.Printf("sweep: check ok=%v %v", res.Check.OK, res.Check.Problems)
	return res, nil
}

// sweeper returns a Sweeper as configured, phase 3 off, whose service
// counts the events of its committed transitions into events (published
// in path, outbox.InPath).
func (sb *sweepBench) sweeper(events *atomic.Int64) *sweep.Sweeper {
	pub := lifecycle.PublisherFunc(func(_ context.Context, evs ...lifecycle.Event) error {
		events.Add(int64(len(evs)))
		return nil
	})
	svc := lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(sb.store, pub), Provider: sb.provider, Clock: sb.clock, Policy: lifecycle.DefaultPolicy(), Log: sb.env.Log})
	return sweep.New(svc, sweep.Config{
		Concurrency:     sb.cfg.Concurrency,
		Rate:            sb.cfg.Rate,
		Burst:           sb.cfg.Concurrency,
		PageSize:        sb.cfg.PageSize,
		ReconcileSample: -1, // phase 3 off
	}, sb.env.Log)
}

// control runs the control sweep: the clock moves 3 minutes on, so the
// ControlIdle sessions due 2 minutes after t0 are due (and no other), and
// the provider pauses at once.
func (sb *sweepBench) control(ctx context.Context) (*SweepControl, error) {
	cfg, env := sb.cfg, sb.env
	sb.clock.Set(sb.t0.Add(3 * time.Minute))
	sb.provider.SetFault(fake.OpPause, fake.Fault{})
	sb.provider.ResetCalls()
	var events atomic.Int64
	sw := sb.sweeper(&events)
	env.Printf("sweep: control run: %d more idle sessions, no provider latency", cfg.ControlIdle)
	rctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	before := env.Ops.Snapshot()
	start := time.Now()
	sum, err := sw.Run(rctx)
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("control sweep run: %w", err)
	}
	c := &SweepControl{
		Idle:               cfg.ControlIdle,
		WallSeconds:        seconds(wall),
		Summary:            sum,
		Ops:                Since(before, env.Ops.Snapshot()),
		ProviderPauseCalls: sb.provider.Calls(fake.OpPause),
	}
	c.Scans = c.Ops[OpScan]
	c.PausesPerSecond = math.Round(float64(sum.Paused) / wall.Seconds())
	c.WritesPerSecond = math.Round(float64(c.Ops[OpPutItem]) / wall.Seconds())
	for _, w := range []struct {
		what      string
		got, want int
	}{
		{"control sweep candidates", sum.Candidates, cfg.ControlIdle},
		{"control sweep paused", sum.Paused, cfg.ControlIdle},
		{"control sweep provider pause calls", c.ProviderPauseCalls, cfg.ControlIdle},
		{"control sweep Scan requests", int(c.Scans), 0},
	} {
		if w.got != w.want {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %d, want %d", w.what, w.got, w.want))
		}
	}
	c.OK = len(c.Problems) == 0
	env.Printf("sweep: control paused %d in %.1f s (%.0f PutItem/s); ok=%v %v",
		sum.Paused, c.WallSeconds, c.WritesPerSecond, c.OK, c.Problems)
	return c, nil
}

// isIdle reports whether the i-th of n seeded sessions is one of the idle
// ones: exactly idle of the n are, spread evenly.
func isIdle(i, n, idle int) bool {
	return (i+1)*idle/n != i*idle/n
}

// seed creates every sandbox in the provider and writes every session
// with Store.CreateSession (the store's own item conversion and condition),
// cfg.SeedWorkers at a time.
func (sb *sweepBench) seed(ctx context.Context) (SeedResult, error) {
	cfg, env, t0 := sb.cfg, sb.env, sb.t0
	idleTimeout := lifecycle.DefaultPolicy().DefaultIdleTimeout
	sb.sessions = make([]*lifecycle.Session, cfg.Sessions)
	others := 0 // sessions that are not idle at t0, counted so far
	for i := range sb.sessions {
		id := lifecycle.NewSessionID()
		sbx, err := sb.provider.Create(ctx, lifecycle.CreateRequest{
			Template: "base", Timeout: 24 * time.Hour, AutoPause: true,
			Metadata: map[string]string{lifecycle.MetadataSessionID: id},
		})
		if err != nil {
			return SeedResult{}, fmt.Errorf("create sandbox %d: %w", i, err)
		}
		lastActive := t0.Add(-time.Minute) // due 9 min after t0
		if isIdle(i, cfg.Sessions, cfg.Idle) {
			lastActive = t0.Add(-idleTimeout - time.Minute) // due 1 min before t0
		} else {
			if cfg.ControlIdle > 0 && isIdle(others, cfg.Sessions-cfg.Idle, cfg.ControlIdle) {
				lastActive = t0.Add(-idleTimeout + 2*time.Minute) // due 2 min after t0: the control run's
			}
			others++
		}
		sb.sessions[i] = &lifecycle.Session{
			ID: id, AccountID: "acct_" + strconv.Itoa(i%100), Provider: sb.provider.Name(), Template: "base",
			SandboxID: sbx.ID, PreviewURL: sbx.PreviewURL, State: lifecycle.StateRunning, Reason: lifecycle.ReasonRequest,
			IdleTimeout: idleTimeout, CreatedAt: lastActive, UpdatedAt: lastActive, LastActivityAt: lastActive,
			IdleDeadline: lastActive.Add(idleTimeout), RunningSince: lastActive, SandboxExpiresAt: sbx.ExpiresAt,
		}
	}
	env.Printf("sweep: seeding %d sessions (%d idle) with Store.CreateSession, %d at a time", cfg.Sessions, cfg.Idle, cfg.SeedWorkers)

	before := env.Ops.Snapshot()
	start := time.Now()
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.SeedWorkers)
	for _, s := range sb.sessions {
		g.Go(func() error {
			if err := sb.store.CreateSession(gctx, s.Clone()); err != nil {
				return err
			}
			if n := done.Add(1); n%20_000 == 0 {
				env.Printf("sweep: seeded %d/%d (%.0f s)", n, cfg.Sessions, time.Since(start).Seconds())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return SeedResult{}, fmt.Errorf("seed sessions: %w", err)
	}
	took := time.Since(start)
	res := SeedResult{
		Method:         "Store.CreateSession (conditional PutItem, one item each)",
		Workers:        cfg.SeedWorkers,
		Items:          cfg.Sessions,
		Seconds:        seconds(took),
		ItemsPerSecond: math.Round(float64(cfg.Sessions) / took.Seconds()),
		Ops:            Since(before, env.Ops.Snapshot()),
	}
	env.Printf("sweep: seeded %d sessions in %.1f s (%.0f items/s)", cfg.Sessions, res.Seconds, res.ItemsPerSecond)
	return res, nil
}

// check counts what the sweep left, in the provider and through the paused
// and idle indexes, against what was seeded.
func (sb *sweepBench) check(ctx context.Context, sum sweep.Summary) (SweepCheck, error) {
	env, store, provider, cfg := sb.env, sb.store, sb.provider, sb.cfg
	before := env.Ops.Snapshot()
	var c SweepCheck
	c.ProviderPauseCalls = provider.Calls(fake.OpPause)
	for _, op := range fake.Ops {
		if op != fake.OpPause {
			c.ProviderOtherCalls += provider.Calls(op)
		}
	}
	for _, sb := range provider.Sandboxes() {
		switch sb.State {
		case lifecycle.SandboxPaused:
			c.ProviderPaused++
		case lifecycle.SandboxRunning:
			c.ProviderRunning++
		}
	}
	far := sb.t0.Add(24 * time.Hour)
	err := eachDue(ctx, store, lifecycle.IndexPaused, far, func(s *lifecycle.Session) {
		if s.State == lifecycle.StatePaused && s.Reason == lifecycle.ReasonIdle {
			c.TablePaused++
		}
	})
	if err != nil {
		return SweepCheck{}, err
	}
	err = eachDue(ctx, store, lifecycle.IndexIdle, far, func(s *lifecycle.Session) {
		c.TableIdleIndex++
		if s.State == lifecycle.StateRunning && s.Version == 1 {
			c.TableUntouched++
		}
	})
	if err != nil {
		return SweepCheck{}, err
	}
	active := cfg.Sessions - cfg.Idle
	for _, w := range []struct {
		what      string
		got, want int
	}{
		{"sweep summary candidates", sum.Candidates, cfg.Idle},
		{"sweep summary paused", sum.Paused, cfg.Idle},
		{"sweep summary failed+skipped+expired", sum.Failed + sum.Skipped + sum.Expired, 0},
		{"provider pause calls", c.ProviderPauseCalls, cfg.Idle},
		{"other provider calls", c.ProviderOtherCalls, 0},
		{"provider sandboxes paused", c.ProviderPaused, cfg.Idle},
		{"provider sandboxes running", c.ProviderRunning, active},
		{"sessions in the paused index, paused for idle", c.TablePaused, cfg.Idle},
		{"sessions in the idle index", c.TableIdleIndex, active},
		{"sessions in the idle index still at version 1", c.TableUntouched, active},
	} {
		if w.got != w.want {
			c.Problems = append(c.Problems, fmt.Sprintf("%s: %d, want %d", w.what, w.got, w.want))
		}
	}
	if sum.Incomplete {
		c.Problems = append(c.Problems, "the sweep reported itself incomplete")
	}
	c.Ops = Since(before, env.Ops.Snapshot())
	return c, nil
}

// eachDue pages through every session of a due index due at or before
// before, across all shards, 1,000 at a time.
func eachDue(ctx context.Context, store lifecycle.Store, ix lifecycle.DueIndex, before time.Time, f func(*lifecycle.Session)) error {
	cursor := ""
	for {
		page, err := store.FindDue(ctx, lifecycle.DueQuery{Index: ix, Before: before, Limit: 1000, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("read the %s index: %w", ix, err)
		}
		for _, s := range page.Sessions {
			f(s)
		}
		if page.Cursor == "" {
			return nil
		}
		cursor = page.Cursor
	}
}

// rateString renders a provider rate limit: "unlimited" or "N/s".
func rateString(r rate.Limit) string {
	if r == rate.Inf {
		return "unlimited"
	}
	return strconv.FormatFloat(float64(r), 'f', -1, 64) + "/s"
}
