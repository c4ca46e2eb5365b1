package bench

import (
	"context"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
	"github.com/sandmanhq/sandman/internal/timer/localtimer"
)

// The production load the timers figure scales down ("Scale"):
// 100,000 pause deadlines per 5-minute sweep interval, E2B's limit of
// 20,000 lifecycle calls per 30 s, the 5-minute sweep and the timer
// horizon's 1-minute margin (lifecycle.DefaultTimerHorizon).
const (
	prodDuePerInterval = 100_000
	prodSweepInterval  = 5 * time.Minute
	prodHorizonMargin  = time.Minute
	prodRateLimit      = 20_000
	prodRateWindow     = 30 * time.Second
	// The idle-pause function's Lambda timeout (infra) and the sweep's
	// sweep.DefaultDeadlineMargin: a tick stops taking work this long
	// before its deadline.
	prodSweepTimeout = 4*time.Minute + 50*time.Second
	prodSweepMargin  = sweep.DefaultDeadlineMargin
)

// sweepBurst is the sweep's token bucket depth in the timers figure: 1
// paces its provider calls evenly.
const sweepBurst = 1

// paceShare is the share of the provider's limit a pacer aims at.
const paceShare = 0.9

// TimersConfig sizes the timers figure. Zero fields take the defaults
// named.
type TimersConfig struct {
	// Population divides the production counts (deadlines per interval,
	// provider calls per window): default 300, so 333 deadlines per
	// interval and 66 calls per window.
	Population int
	// Compress divides the production durations (sweep interval, horizon
	// margin, rate window): default 30, so a 10 s sweep, a 2 s margin and
	// a 1 s window. Rates per second scale by Compress ÷ Population, so
	// deadlines arrive at half the provider's limit, as in production.
	Compress int
	// Intervals is how many sweep intervals the deadlines are spread over
	// (default 2).
	Intervals int
	// PauseLatency is how long each provider pause takes, a real sleep in
	// the fake provider (default 0: it answers at once).
	PauseLatency time.Duration
	// Seed seeds the deadlines' draw (default 1).
	Seed uint64
	// SeedWorkers is how many Store.CreateSession calls seeding runs at
	// once (default 32).
	SeedWorkers int
	// SweepOnly also runs the same load with no timers (default true
	// through the bench command's flag).
	SweepOnly bool
	// Bunched also runs timers with one interval's deadlines all at one
	// instant, as when a gateway deploy drops every client and their away
	// deadlines land together (default true through the bench command's
	// flag).
	Bunched bool
	// DynamoDB runs on DynamoDB Local instead of internal/lifecycle/memstore (the
	// default: DynamoDB Local on a shared 2-CPU machine, not the timer
	// code, would set the pace).
	DynamoDB bool
}

func (c TimersConfig) withDefaults() TimersConfig {
	if c.Population <= 0 {
		c.Population = 300
	}
	if c.Compress <= 0 {
		c.Compress = 30
	}
	if c.Intervals <= 0 {
		c.Intervals = 2
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.SeedWorkers <= 0 {
		c.SeedWorkers = 32
	}
	return c
}

// scaled returns the run's parameters derived from c.
func (c TimersConfig) scaled() timersScale {
	d := func(p time.Duration) time.Duration { return p / time.Duration(c.Compress) }
	s := timersScale{
		interval:     d(prodSweepInterval),
		margin:       d(prodHorizonMargin),
		sweepTimeout: d(prodSweepTimeout),
		sweepMargin:  d(prodSweepMargin),
		window:       d(prodRateWindow),
		limit:        max(prodRateLimit/c.Population, 1),
		perInterval:  max(prodDuePerInterval/c.Population, 1),
	}
	s.due = s.perInterval * c.Intervals
	s.notDue = s.due / 2
	// A token bucket of rate r and burst b allows r × window + b calls in
	// one window. Each pacer aims at paceShare of the limit, less its
	// burst: scheduling jitter bunches calls that got their tokens evenly.
	budget := paceShare * float64(s.limit)
	s.timerRate = rate.Limit(max(budget-localtimer.DefaultConcurrency, 1) / s.window.Seconds())
	s.sweepRate = rate.Limit(max(budget-sweepBurst, 1) / s.window.Seconds())
	return s
}

type timersScale struct {
	interval, margin, window  time.Duration
	sweepTimeout, sweepMargin time.Duration
	limit, perInterval        int
	due, notDue               int
	timerRate, sweepRate      rate.Limit
}

// TimersRun is one mode of the timers figure.
type TimersRun struct {
	Mode string `json:"mode"` // "timers" or "sweep only"
	// Due sessions had a deadline within the run, NotDue long after it.
	Due    int `json:"due"`
	NotDue int `json:"not_due"`
	// Landed counts pauses committed for due sessions; Wrong counts
	// not-due sessions paused (want 0); Stranded counts due sessions not
	// paused by the end (want 0; a pause the provider refused with a 429
	// rolls back to running and waits for the next timer or tick).
	Landed   int `json:"landed"`
	Wrong    int `json:"wrong"`
	Stranded int `json:"stranded"`
	// Lateness is commit of the paused transition − the session's pause
	// deadline, over the landed pauses; Early counts pauses before their
	// deadline (want 0). Within1s is the share landed within 1 s.
	Lateness Latency `json:"lateness"`
	Early    int     `json:"early"`
	Within1s float64 `json:"within_1s"`
	// ByTimer and BySweep split Landed by who paused.
	ByTimer int `json:"by_timer"`
	BySweep int `json:"by_sweep"`
	// Ticks is how many sweeps ran; Armed sums their armed timers.
	Ticks int `json:"ticks"`
	Armed int `json:"armed"`
	// ProviderCalls is every lifecycle call the provider got; Refused
	// those it refused for the rate limit (429); PeakPerWindow the most
	// calls in any rate window.
	ProviderCalls int64 `json:"provider_calls"`
	Refused       int64 `json:"refused"`
	PeakPerWindow int   `json:"peak_per_window"`
	// Seconds is the run's wall time, seeding excluded; SeedSeconds the
	// seeding's.
	Seconds     float64 `json:"seconds"`
	SeedSeconds float64 `json:"seed_seconds"`
}

// TimersResult is the timers figure.
type TimersResult struct {
	Population     int     `json:"population"`
	Compress       int     `json:"compress"`
	Intervals      int     `json:"intervals"`
	SweepSeconds   float64 `json:"sweep_interval_seconds"`
	HorizonSeconds float64 `json:"horizon_seconds"`
	WindowSeconds  float64 `json:"rate_window_seconds"`
	LimitPerWindow int     `json:"limit_per_window"`
	PerInterval    int     `json:"due_per_interval"`
	PauseLatencyMS float64 `json:"pause_latency_ms"`
	// Store names the session store the runs used.
	Store string `json:"store"`
	// TimerConcurrency and TimerRate are localtimer's options in the timers
	// mode; SweepConcurrency and SweepRate the sweep's in both.
	TimerConcurrency int         `json:"timer_concurrency"`
	TimerRate        float64     `json:"timer_rate_per_second"`
	SweepConcurrency int         `json:"sweep_concurrency"`
	SweepRate        float64     `json:"sweep_rate_per_second"`
	SweepBurst       int         `json:"sweep_burst"`
	Runs             []TimersRun `json:"runs"`
}

// RunTimers measures how late pauses land on the real timer and sweep code
// (lifecycle.Service, internal/timer/localtimer, internal/sweep on DynamoDB
// Local, a fake provider behind a sliding-window rate limit), in real
// time, at the target load scaled down by cfg (see Report's timers
// section): first with timers, then, when cfg.SweepOnly, the sweep alone.
func RunTimers(ctx context.Context, env *Env, cfg TimersConfig) (TimersResult, error) {
	cfg = cfg.withDefaults()
	sc := cfg.scaled()
	res := TimersResult{
		Population: cfg.Population, Compress: cfg.Compress, Intervals: cfg.Intervals,
		SweepSeconds: sc.interval.Seconds(), HorizonSeconds: (sc.interval + sc.margin).Seconds(),
		WindowSeconds: sc.window.Seconds(), LimitPerWindow: sc.limit, PerInterval: sc.perInterval,
		PauseLatencyMS: ms(cfg.PauseLatency), Store: "internal/lifecycle/memstore (in memory)",
		TimerConcurrency: localtimer.DefaultConcurrency, TimerRate: float64(sc.timerRate),
		SweepConcurrency: sweep.DefaultConcurrency, SweepRate: float64(sc.sweepRate), SweepBurst: sweepBurst,
	}
	if cfg.DynamoDB {
		res.Store = "DynamoDB Local"
	}
	modes := []timersMode{{timers: true}}
	if cfg.SweepOnly {
		modes = append(modes, timersMode{})
	}
	if cfg.Bunched {
		modes = append(modes, timersMode{timers: true, bunched: true})
	}
	for _, m := range modes {
		run, err := runTimersMode(ctx, env, cfg, sc, m)
		if err != nil {
			return res, fmt.Errorf("%s: %w", run.Mode, err)
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// timersMode is one run of the figure: with or without timers, deadlines
// spread over the span or one interval's at one instant.
type timersMode struct{ timers, bunched bool }

func (m timersMode) name() string {
	switch {
	case m.bunched:
		return "timers, one interval's deadlines at one instant"
	case m.timers:
		return "timers"
	}
	return "sweep only"
}

// shiftedClock is the wall clock shifted back by a fixed offset set once
// seeding is done, so deadlines written before the run fall where the run
// wants them. It runs at the wall clock's pace: the run is real time.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) Now() time.Time {
	return time.Now().UTC().Add(-time.Duration(c.offset.Load()))
}

// landings records when each session's pause for idleness committed (the
// service clock's time).
type landings struct {
	lifecycle.Store
	clock lifecycle.Clock
	mu    sync.Mutex
	at    map[string]time.Time
}

func (l *landings) UpdateSession(ctx context.Context, s *lifecycle.Session, from lifecycle.State, g lifecycle.Guard) error {
	if err := l.Store.UpdateSession(ctx, s, from, g); err != nil {
		return err
	}
	if s.State == lifecycle.StatePaused && from != lifecycle.StatePaused {
		now := l.clock.Now()
		l.mu.Lock()
		if _, seen := l.at[s.ID]; !seen {
			l.at[s.ID] = now
		}
		l.mu.Unlock()
	}
	return nil
}

func (l *landings) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at)
}

// runTimersMode seeds a fresh table and runs one mode.
func runTimersMode(ctx context.Context, env *Env, cfg TimersConfig, sc timersScale, mode timersMode) (TimersRun, error) {
	withTimers := mode.timers
	run := TimersRun{Mode: mode.name(), Due: sc.due, NotDue: sc.notDue}
	if mode.bunched {
		run.Due, run.NotDue = sc.perInterval, sc.perInterval/2
	}
	var base lifecycle.Store = memstore.New()
	if cfg.DynamoDB {
		table, drop, err := env.NewTable(ctx, "bench-timers")
		if err != nil {
			return run, err
		}
		defer drop()
		base = env.Store(table)
	}
	clock := &shiftedClock{}
	fp := fake.New(fake.Config{Clock: clock})
	if cfg.PauseLatency > 0 {
		fp.SetFault(fake.OpPause, fake.Fault{Delay: cfg.PauseLatency})
	}
	provider := newLimitedProvider(fp, sc.limit, sc.window)
	store := &landings{Store: base, clock: clock, at: map[string]time.Time{}}

	// Seed: deadlines relative to t0, an hour ahead of the wall clock, so
	// none is due while seeding; the clock is shifted onto t0 afterwards.
	t0 := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
	const lead = time.Second // the first deadline after the first tick at t0
	span := sc.interval * time.Duration(cfg.Intervals)
	rng := mrand.New(mrand.NewPCG(cfg.Seed, uint64(len(run.Mode))))
	idleTimeout := lifecycle.DefaultPolicy().DefaultIdleTimeout
	deadlines := map[string]time.Time{}
	var sessions []*lifecycle.Session
	for i := range run.Due + run.NotDue {
		due := t0.Add(lead + time.Duration(rng.Int64N(int64(span))))
		if mode.bunched {
			due = t0.Add(lead + sc.interval/2)
		}
		if i >= run.Due {
			due = t0.Add(lead + span + time.Hour) // long after the run
		}
		id := lifecycle.NewSessionID()
		sbx, err := fp.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: 24 * time.Hour, AutoPause: true,
			Metadata: map[string]string{lifecycle.MetadataSessionID: id}})
		if err != nil {
			return run, fmt.Errorf("create sandbox: %w", err)
		}
		last := due.Add(-idleTimeout)
		sessions = append(sessions, &lifecycle.Session{
			ID: id, AccountID: "acct_" + strconv.Itoa(i%100), Provider: fp.Name(), Template: "base",
			SandboxID: sbx.ID, PreviewURL: sbx.PreviewURL, State: lifecycle.StateRunning, Reason: lifecycle.ReasonRequest,
			IdleTimeout: idleTimeout, CreatedAt: last, UpdatedAt: last, LastActivityAt: last,
			IdleDeadline: due, RunningSince: last, SandboxExpiresAt: sbx.ExpiresAt,
		})
		if i < run.Due {
			deadlines[id] = due
		}
	}
	env.Printf("timers: %s: seeding %d sessions (%d due, %d later)", run.Mode, len(sessions), run.Due, run.NotDue)
	seedStart := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.SeedWorkers)
	for _, s := range sessions {
		g.Go(func() error { return store.Store.CreateSession(gctx, s) })
	}
	if err := g.Wait(); err != nil {
		return run, fmt.Errorf("seed: %w", err)
	}
	run.SeedSeconds = seconds(time.Since(seedStart))

	svcCfg := lifecycle.Config{Store: store, Provider: provider, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: env.Log}
	var timers *localtimer.Timers
	var fired sync.Map // session id → true once a timer's FireTimer paused it
	if withTimers {
		timers = localtimer.New(localtimer.Config{Rate: sc.timerRate, Clock: clock, Log: env.Log})
		svcCfg.Timers, svcCfg.TimerHorizon = timers, sc.interval+sc.margin
	}
	svc := lifecycle.NewService(svcCfg)
	sw := sweep.New(svc, sweep.Config{Rate: sc.sweepRate, Burst: sweepBurst, ReconcileSample: -1, DeadlineMargin: sc.sweepMargin}, env.Log)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timers != nil {
		timers.Start(rctx, func(ctx context.Context, id string) error {
			out, err := svc.FireTimer(ctx, id)
			if out == lifecycle.TimerPaused {
				fired.Store(id, true)
			}
			return err
		})
		defer timers.Close()
	}

	// The clock now reads t0: the first sweep tick.
	clock.offset.Store(int64(time.Now().UTC().Sub(t0)))
	start := time.Now()
	// The last tick that can pause the last deadline, plus one more for
	// pauses that failed and were rolled back: the next tick retries them.
	var last time.Time
	for _, d := range deadlines {
		last = maxTime(last, d)
	}
	end := last.Add(sc.interval + sc.margin + sc.interval)
	env.Printf("timers: %s: running until every due session is paused (at most %v)", run.Mode, end.Sub(t0))
	var sweepPaused int
	for tick := 0; ; tick++ {
		at := t0.Add(time.Duration(tick) * sc.interval)
		if wait := at.Sub(clock.Now()); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return run, ctx.Err()
			}
		}
		if store.count() >= run.Due || at.After(end) {
			break
		}
		tctx, tcancel := context.WithTimeout(rctx, sc.sweepTimeout)
		sum, err := sw.Run(tctx)
		tcancel()
		if err != nil {
			return run, fmt.Errorf("sweep tick %d: %w", tick, err)
		}
		env.Printf("timers: %s: tick %d at +%v: candidates %d, armed %d, paused %d, failed %d, skipped %d, incomplete %v",
			run.Mode, tick, at.Sub(t0), sum.Candidates, sum.Armed, sum.Paused, sum.Failed, sum.Skipped, sum.Incomplete)
		run.Ticks++
		run.Armed += sum.Armed
		sweepPaused += sum.Paused
	}
	// Fires under way finish (or the drain bound passes) before counting.
	drain := time.Now().Add(sc.interval)
	for store.count() < run.Due && time.Now().Before(drain) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if timers != nil {
		timers.Close()
	}
	run.Seconds = seconds(time.Since(start))

	var lates []time.Duration
	store.mu.Lock()
	for id, at := range store.at {
		due, ok := deadlines[id]
		if !ok {
			run.Wrong++
			continue
		}
		run.Landed++
		late := at.Sub(due)
		if late < 0 {
			run.Early++
			late = 0
		}
		if late <= time.Second {
			run.Within1s++
		}
		lates = append(lates, late)
		if _, ok := fired.Load(id); ok {
			run.ByTimer++
		}
	}
	store.mu.Unlock()
	if run.Landed > 0 {
		run.Within1s = math.Round(run.Within1s/float64(run.Landed)*1000) / 1000
	}
	run.BySweep = sweepPaused
	run.Stranded = run.Due - run.Landed
	run.Lateness = Summarize(lates)
	run.ProviderCalls, run.Refused, run.PeakPerWindow = provider.stats()
	env.Printf("timers: %s: %d of %d paused (%d by timers, %d by the sweep, %d wrong), late p50 %.0f ms p99 %.0f ms max %.0f ms; "+
		"provider calls %d, refused %d, peak %d per %v",
		run.Mode, run.Landed, run.Due, run.ByTimer, run.BySweep, run.Wrong, run.Lateness.P50MS, run.Lateness.P99MS,
		run.Lateness.MaxMS, run.ProviderCalls, run.Refused, run.PeakPerWindow, sc.window)
	// Sessions the provider's 429s left unpaused are a finding, reported;
	// any other shortfall, a wrong or an early pause is a failure.
	if (run.Stranded > 0 && run.Refused == 0) || run.Wrong != 0 || run.Early != 0 {
		return run, fmt.Errorf("%d of %d due sessions paused with no call refused, %d not-due sessions paused, %d paused early",
			run.Landed, run.Due, run.Wrong, run.Early)
	}
	return run, nil
}

// limitedProvider is a lifecycle.Provider that allows at most limit calls
// in any window (a sliding window) and refuses the others as a 429 would:
// a transient provider error with the wait as its retry-after hint. It
// models E2B's 20,000 lifecycle calls per 30 s.
type limitedProvider struct {
	*fake.Provider
	limit  int
	window time.Duration
	now    func() time.Time // the wall clock; tests replace it

	mu      sync.Mutex
	recent  []time.Time // the last limit calls allowed, oldest first
	calls   int64
	refused int64
	peak    int
}

func newLimitedProvider(p *fake.Provider, limit int, window time.Duration) *limitedProvider {
	return &limitedProvider{Provider: p, limit: limit, window: window, now: time.Now}
}

// admit reports whether one more call fits the window now.
func (l *limitedProvider) admit(op, id string) error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	cut := 0
	for cut < len(l.recent) && now.Sub(l.recent[cut]) >= l.window {
		cut++
	}
	l.recent = l.recent[cut:]
	if len(l.recent) >= l.limit {
		l.refused++
		e := lifecycle.Transientf(op, id, l.window-now.Sub(l.recent[0]), "429: more than %d calls in %v", l.limit, l.window)
		e.Refused = true // a 429 is not processed (RFC 6585)
		return e
	}
	l.recent = append(l.recent, now)
	l.peak = max(l.peak, len(l.recent))
	return nil
}

func (l *limitedProvider) stats() (calls, refused int64, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, l.refused, l.peak
}

func (l *limitedProvider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if err := l.admit("create", ""); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return l.Provider.Create(ctx, req)
}

func (l *limitedProvider) Get(ctx context.Context, id string) (lifecycle.Sandbox, error) {
	if err := l.admit("get", id); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return l.Provider.Get(ctx, id)
}

func (l *limitedProvider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	if err := l.admit("list", ""); err != nil {
		return lifecycle.SandboxPage{}, err
	}
	return l.Provider.List(ctx, req)
}

func (l *limitedProvider) Pause(ctx context.Context, id string) error {
	if err := l.admit("pause", id); err != nil {
		return err
	}
	return l.Provider.Pause(ctx, id)
}

func (l *limitedProvider) Resume(ctx context.Context, id string, timeout time.Duration) (lifecycle.Sandbox, error) {
	if err := l.admit("resume", id); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return l.Provider.Resume(ctx, id, timeout)
}

func (l *limitedProvider) SetTimeout(ctx context.Context, id string, timeout time.Duration) error {
	if err := l.admit("set timeout", id); err != nil {
		return err
	}
	return l.Provider.SetTimeout(ctx, id, timeout)
}

func (l *limitedProvider) Probe(ctx context.Context, id string) (lifecycle.Probe, error) {
	if err := l.admit("probe", id); err != nil {
		return lifecycle.Probe{}, err
	}
	return l.Provider.Probe(ctx, id)
}

func (l *limitedProvider) Kill(ctx context.Context, id string) error {
	if err := l.admit("kill", id); err != nil {
		return err
	}
	return l.Provider.Kill(ctx, id)
}

var _ lifecycle.Provider = (*limitedProvider)(nil)

// timersSection renders the timers figure.
func (r *Report) timersSection(b *strings.Builder, t *TimersResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 8. Pause timers on the real code, at the target load scaled down\n\n")
	p("The target load is 100,000 pause deadlines per 5-minute sweep interval (1,000,000 sessions) under E2B's limit of ")
	p("20,000 lifecycle calls per 30 s. Here the real code runs it in real time, scaled: counts ÷ %d and durations ÷ %d, ", t.Population, t.Compress)
	p("so rates per second are × %s of production and deadlines still arrive at half the provider's limit:\n\n", trimFloat(float64(t.Compress)/float64(t.Population)))
	p("| | production | here |\n|---|--:|--:|\n")
	p("| deadlines per sweep interval | 100,000 | %s |\n", numfmt.Thousands(t.PerInterval))
	p("| sweep interval | 5 min | %s s |\n", trimFloat(t.SweepSeconds))
	p("| timer horizon (interval + margin) | 6 min | %s s |\n", trimFloat(t.HorizonSeconds))
	p("| provider limit | 20,000 calls per 30 s | %d calls per %s s (sliding window) |\n", t.LimitPerWindow, trimFloat(t.WindowSeconds))
	p("| deadlines spread over | | %d intervals (uniform, seeded) |\n\n", t.Intervals)
	p("Each run seeds a fresh session store, %s, with running sessions (`Store.CreateSession`): the due ones with ", t.Store)
	p("deadlines over the span, half as many again due an hour later (they must stay running). Then the sweep ")
	p("(`sweep.Sweeper.Run`, concurrency %d, provider rate %s calls/s with a burst of %d) ticks every interval from the span's start. ",
		t.SweepConcurrency, trimFloat(t.SweepRate), t.SweepBurst)
	p("With timers, `lifecycle.Service` has `internal/timer/localtimer` as its timers (concurrency %d, rate %s fires/s, its burst the concurrency) ", t.TimerConcurrency, trimFloat(t.TimerRate))
	p("and the horizon above. Each pacer's rate is %.0f %% of the limit less its burst per window, so neither alone should exceed the limit. ", paceShare*100)
	p("Each tick arms the sessions due before the next tick plus the margin, and a fired timer calls ")
	p("`Service.FireTimer`. The provider is `internal/provider/fake` behind a sliding-window limit that refuses a call over ")
	p("the limit as a 429 (a transient error with a retry-after); its pause ")
	if t.PauseLatencyMS > 0 {
		p("takes %s ms (a real sleep). ", trimFloat(t.PauseLatencyMS))
	} else {
		p("answers at once (E2B's own pause takes about 4 s per GiB of RAM; not modelled). ")
	}
	p("Lateness is the commit of the paused transition minus the session's pause deadline, on the service's clock ")
	p("(the wall clock shifted so the seeded deadlines fall in the run).\n\n")
	p("| mode | due | paused | by timers / by sweeps | not paused by the end | other sessions paused | p50 s | p90 s | p99 s | max s | within 1 s | sweeps (timers armed) | provider calls | refused (429) | peak calls per window |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, run := range t.Runs {
		l := run.Lateness
		p("| %s | %s | **%s** | %s / %s | %d | %d | **%.3f** | %.3f | **%.3f** | %.3f | %.1f %% | %d (%s) | %s | %d | %d of %d |\n",
			run.Mode, numfmt.Thousands(run.Due), numfmt.Thousands(run.Landed), numfmt.Thousands(run.ByTimer), numfmt.Thousands(run.BySweep),
			run.Stranded, run.Wrong, l.P50MS/1000, l.P90MS/1000, l.P99MS/1000, l.MaxMS/1000, run.Within1s*100, run.Ticks, numfmt.Thousands(run.Armed),
			numfmt.Thousands(run.ProviderCalls), run.Refused, run.PeakPerWindow, t.LimitPerWindow)
	}
	p("\nLateness is over the pauses that landed. A run ends once every due session is paused, or one interval after the ")
	p("last tick that could pause the last deadline. A pause the provider refused (429) is rolled back to running at once ")
	p("(a 429 is not processed, so the service does not ask again) and stays due for the next timer or tick; sessions still ")
	p("due when the run ends are in *not paused by the end*. The timers and the sweep each pace their own calls: when a tick finds sessions already due ")
	p("whose timers still wait for rate tokens, both call the provider at once.\n")
	p("\nWhat scales and what does not: the sweep alone lands a pause up to one interval after its deadline, plus its wait ")
	p("for rate tokens, so its lateness scales with the interval (× %d at the production 5 minutes). So does the queue ", t.Compress)
	p("behind the rate limit when deadlines bunch up (the last of n deadlines at one instant waits about n ÷ rate; ")
	p("n is ÷ %d here and the rate × %s, so that wait is ÷ %d too). The rest of a timer's lateness does not scale: ", t.Population,
		trimFloat(float64(t.Compress)/float64(t.Population)), t.Compress)
	p("the timer itself, the rate-limit token, a read and two conditional writes on the store. This is `internal/timer/localtimer`, the local stack's timers; in AWS the timers are ")
	p("SQS messages consumed by the timer function function (`internal/timer/sqstimer`), whose delivery delay and Lambda concurrency are not ")
	p("measured here.\n\n")
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
