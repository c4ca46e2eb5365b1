// Command cmd prints the cost replay report of package costsim as Markdown:
//
//	go -C internal/lab run ./cmd/costsim [flags]
//
// Every parameter of the replay is a flag (`-h` lists them with their
// defaults): the seed, the trace's shape, the idle policy, the sweep, the
// timers (margin, lateness), presence (away timeout, away probabilities,
// whether the leaving user closes the page), the faults and the scale
// simulation. Without flags it prints the report of costsim.DefaultConfig,
// the one the bench runner embeds in docs/BENCH.md. Bad flag values exit 2
// with every problem listed.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

func main() {
	cfg := costsim.DefaultConfig()
	t, pol, sc := &cfg.Trace, &cfg.Lifecycle, &cfg.Scale
	fs := flag.CommandLine

	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the trace, the presence draws and the missed sweeps")
	fs.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "number of sessions")
	fs.IntVar(&cfg.Days, "days", cfg.Days, "days over which sessions start")

	fs.DurationVar(&t.HeartbeatInterval, "heartbeat-interval", t.HeartbeatInterval, "client heartbeat period while active")
	fs.DurationVar(&t.HeartbeatJitter, "heartbeat-jitter", t.HeartbeatJitter, "uniform jitter (±) of each heartbeat interval")
	fs.Float64Var(&t.DiurnalTrough, "diurnal-trough", t.DiurnalTrough, "start rate at 03:00 UTC relative to 15:00 UTC, (0, 1]")
	fs.Float64Var(&t.WeekendFactor, "weekend-factor", t.WeekendFactor, "start rate on Saturday and Sunday relative to weekdays, (0, 1]")
	fs.DurationVar(&t.BurstMedian, "burst-median", t.BurstMedian, "median of the log-normal burst length")
	fs.Float64Var(&t.BurstSigma, "burst-sigma", t.BurstSigma, "sigma of the log-normal burst length")
	fs.DurationVar(&t.BurstMax, "burst-max", t.BurstMax, "longest burst")
	fs.Float64Var(&t.LeaveProbability, "leave-prob", t.LeaveProbability, "chance the user leaves for good after each burst, (0, 1]")
	fs.Float64Var(&t.ShortGapShare, "short-gap-share", t.ShortGapShare, "share of idle gaps from the short (log-normal) component, [0, 1]")
	fs.DurationVar(&t.ShortGapMedian, "short-gap-median", t.ShortGapMedian, "median of the short (log-normal) gap")
	fs.Float64Var(&t.ShortGapSigma, "short-gap-sigma", t.ShortGapSigma, "sigma of the short (log-normal) gap")
	fs.DurationVar(&t.LongGapMin, "long-gap-min", t.LongGapMin, "scale x_m of the long (Pareto) gap")
	fs.Float64Var(&t.LongGapAlpha, "long-gap-alpha", t.LongGapAlpha, "shape alpha of the long (Pareto) gap")
	fs.DurationVar(&t.GapMax, "gap-max", t.GapMax, "longest idle gap")
	fs.DurationVar(&t.ReturnLeadMedian, "return-lead-median", t.ReturnLeadMedian, "median of the log-normal lead from a tab visible again to the first request")
	fs.Float64Var(&t.ReturnLeadSigma, "return-lead-sigma", t.ReturnLeadSigma, "sigma of the log-normal return lead")
	fs.DurationVar(&t.ReturnLeadMin, "return-lead-min", t.ReturnLeadMin, "shortest return lead")
	fs.DurationVar(&t.ReturnLeadMax, "return-lead-max", t.ReturnLeadMax, "longest return lead")

	fs.DurationVar(&pol.DefaultIdleTimeout, "idle-timeout", pol.DefaultIdleTimeout, "every session's idle timeout")
	fs.DurationVar(&pol.ActivityGranularity, "granularity", pol.ActivityGranularity, "heartbeat coalescing (sandman rows)")
	fs.DurationVar(&pol.ProviderGrace, "provider-grace", pol.ProviderGrace, "provider timeout grace past the pause deadline (sandman rows)")
	fs.DurationVar(&pol.MaxProviderTimeout, "max-provider-timeout", pol.MaxProviderTimeout, "provider's longest timeout (E2B Hobby 1h, Pro 24h)")
	fs.DurationVar(&pol.GuardHeadroom, "guard-headroom", pol.GuardHeadroom, "provider timeout headroom past the pause deadline + grace: one refresh per headroom of activity (sandman rows, scale section)")
	fs.DurationVar(&cfg.SweepInterval, "sweep-interval", cfg.SweepInterval, "period of the idle-pause sweep")
	fs.DurationVar(&cfg.ResumeWait, "resume-wait", cfg.ResumeWait, "how long a user waits for one resume")
	fs.DurationVar(&cfg.Tail, "tail", cfg.Tail, "the replay stops this long after the last activity")

	fs.DurationVar(&cfg.TimerMargin, "timer-margin", cfg.TimerMargin, "timers are armed for deadlines before the next tick + this")
	fs.DurationVar(&cfg.TimerLateness, "timer-lateness", cfg.TimerLateness, "how late a timer's pause lands after its whole-second delay")
	fs.DurationVar(&cfg.AwayTimeout, "away-timeout", cfg.AwayTimeout, "presence: pause this long after the client left (0 = off)")
	fs.BoolVar(&cfg.LeaveClosesPage, "leave-closes-page", cfg.LeaveClosesPage, "presence: the user who leaves for good closes the page")
	awayProbs := floats(costsim.DefaultAwayProbabilities)
	fs.Var(&awayProbs, "away-prob", "presence rows: comma-separated chances that the client is away for an idle gap")
	frontier := durations(cfg.AwayFrontier)
	fs.Var(&frontier, "away-frontier", "presence trade-off table: comma-separated away timeouts to replay at away_prob 0.5 (empty = no table)")
	missed := fs.Float64("missed-sweeps", 0.05, "share of sweep ticks missed in the missed-sweeps rows (0 = no such rows)")
	outage := costsim.DefaultOutage
	fs.DurationVar(&outage.Start, "outage-start", outage.Start, "control-plane outage: offset from the epoch (a Monday 00:00 UTC)")
	fs.DurationVar(&outage.Duration, "outage", outage.Duration, "control-plane outage length (0 = no outage rows)")
	cfg.Providers = append([]costsim.ProviderProfile(nil), cfg.Providers...)
	appStart := fs.Duration("app-start", 0, "app start after a resume that lost the processes, for every such provider (0 = each profile's own)")
	createAppStart := fs.Duration("create-app-start", 0, "the app's first start after a cold create, for every provider (0 = each profile's own)")
	pools := poolList(cfg.Pools)
	fs.Var(&pools, "pools", "warm-pool rows: comma-separated tier:size[:max-age], e.g. paused:2,running:1:12h (empty = no pool section)")
	fs.Float64Var(&cfg.PoolCosts.SnapshotGiB, "pool-snapshot-gib", cfg.PoolCosts.SnapshotGiB, "pools: stored GiB of one paused spare")
	fs.Float64Var(&cfg.PoolCosts.StoragePerGiBMonth, "pool-storage-price", cfg.PoolCosts.StoragePerGiBMonth, "pools: US dollars per GiB-month of paused storage")
	fs.DurationVar(&cfg.PoolCosts.Pause, "pool-pause", cfg.PoolCosts.Pause, "pools: running time of pausing a made spare")
	fs.DurationVar(&cfg.PoolCosts.Claim, "pool-claim", cfg.PoolCosts.Claim, "pools: what a claim adds to the wait besides the resume")
	tracePath := fs.String("trace", "", "replay a recorded trace (CSV or JSON lines: session, user, account, time, kind; docs/COST.md) instead of a synthetic one")
	learned := fs.Bool("learned", false, "print only the learned idle policy against the fixed timer: the tuning traces and every held-out one (docs/COST.md)")
	fs.DurationVar(&cfg.Learned.BreakEven, "break-even", cfg.Learned.BreakEven, "learned policy: B/r, the break-even time, and the B of the cost against the clairvoyant optimum")
	fs.DurationVar(&cfg.Learned.Floor, "learned-floor", cfg.Learned.Floor, "learned policy: the shortest learned idle timeout")
	fs.DurationVar(&cfg.Learned.WaitCost, "wait-cost", cfg.Learned.WaitCost, "learned policy: what a return that waits is worth in running time (higher: fewer waits, more idle)")
	tiers := fs.Bool("tiers", false, "print only the retention tier rows: keep paused against archive after N days (docs/COST.md)")
	people := fs.Bool("people", false, "replay the trace of people (costsim.DefaultPeople; docs/COST.md) instead of the i.i.d. one")
	var heldOut seeds
	fs.Var(&heldOut, "held-out", "print only the resume-on-return target judged on each of these comma-separated seeds")
	fs.IntVar(&cfg.VCPUs, "vcpus", cfg.VCPUs, "vCPUs per sandbox (pricing)")
	fs.Float64Var(&cfg.PricePerVCPUSecond, "price", cfg.PricePerVCPUSecond, "US dollars per vCPU-second (pricing)")

	fs.Uint64Var(&sc.Seed, "scale-seed", sc.Seed, "scale simulation: random seed of the deadlines")
	fs.IntVar(&sc.Sessions, "scale-sessions", sc.Sessions, "scale simulation: sessions tracked (0 = leave it out)")
	fs.IntVar(&sc.DueRate, "scale-due", sc.DueRate, "scale simulation: pause deadlines per sweep interval")
	fs.IntVar(&sc.Intervals, "scale-intervals", sc.Intervals, "scale simulation: sweep intervals simulated")
	fs.IntVar(&sc.RateLimit, "scale-limit", sc.RateLimit, "scale simulation: provider lifecycle calls allowed per window")
	fs.DurationVar(&sc.RateWindow, "scale-window", sc.RateWindow, "scale simulation: the provider's rate window")
	fs.IntVar(&sc.Burst, "scale-burst", sc.Burst, "scale simulation: the pauser's token bucket depth")
	fs.Float64Var(&sc.OtherShare, "scale-other-share", sc.OtherShare, "scale simulation: share of the limit taken by other calls in its row, [0, 1)")
	fs.DurationVar(&sc.MassDisconnect, "scale-mass-disconnect", sc.MassDisconnect, "scale simulation: away timeout of the mass-disconnect row (0 = no row)")
	flag.Parse()

	cfg.Scenarios = costsim.DefaultScenarios(*missed, outage, awayProbs)
	cfg.AwayFrontier = frontier
	cfg.Pools = pools
	for i := range cfg.Providers {
		if *appStart > 0 {
			cfg.Providers[i].AppStart = *appStart
		}
		if *createAppStart > 0 {
			cfg.Providers[i].CreateAppStart = *createAppStart
		}
	}
	// The scale simulation runs the same sweep, timers and policy.
	sc.SweepInterval, sc.TimerLateness, sc.Guard = cfg.SweepInterval, cfg.TimerLateness, cfg.Lifecycle
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *tiers {
		tc := costsim.DefaultTierConfig()
		fmt.Print(costsim.TiersMarkdown(tc, costsim.RunTiers(tc)))
		return
	}
	if *learned && *tracePath == "" {
		rows, err := costsim.RunLearned(cfg, costsim.DefaultLearnedConfig())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(costsim.LearnedMarkdown(cfg, rows))
		return
	}
	if *tracePath != "" || *people {
		if err := replayOther(cfg, *tracePath); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(heldOut) > 0 {
		rows, err := costsim.HeldOut(cfg, heldOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(costsim.HeldOutMarkdown(cfg, rows))
		return
	}
	fmt.Print(costsim.Run(cfg).Markdown())
	tc := costsim.DefaultTierConfig()
	fmt.Print("\n" + costsim.TiersMarkdown(tc, costsim.RunTiers(tc)))
}

// replayOther replays every scenario of cfg on a recorded trace (path) or,
// when path is empty, on the trace of people, and prints the report
// without the sections the i.i.d. trace alone has (frontier, pools, scale,
// held-out seeds).
func replayOther(cfg costsim.Config, path string) error {
	cfg.AwayFrontier, cfg.Pools, cfg.Scale, cfg.HeldOutSeeds = nil, nil, costsim.ScaleConfig{}, nil
	var tr costsim.Trace
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		lt, err := costsim.LoadTrace(f, costsim.LoadOptions{})
		if err != nil {
			return err
		}
		cfg.Epoch, tr = lt.Epoch, lt.Trace
		fmt.Printf("Recorded trace %s: %d events, %d sessions, epoch %s.\n\n", path, lt.Events, len(tr.Sessions), lt.Epoch.Format(time.RFC3339))
	} else {
		var err error
		if tr, err = costsim.GeneratePeople(cfg, costsim.DefaultPeople()); err != nil {
			return err
		}
		fmt.Printf("The trace of people (docs/COST.md), seed %d: %d sessions. The method below describes the i.i.d. trace's "+
			"parameters, not this one's.\n\n", cfg.Seed, len(tr.Sessions))
	}
	r, err := costsim.Replay(cfg, tr)
	if err != nil {
		return err
	}
	fmt.Print(r.Markdown())
	ms, v, err := costsim.MeasureLearned(cfg, tr)
	if err != nil {
		return err
	}
	fmt.Print("\n", costsim.LearnedMarkdown(cfg, []costsim.LearnedRow{{Shape: "this trace", Seed: cfg.Seed, Policies: ms, Verdict: v}}))
	return nil
}

// seeds is a flag.Value holding a comma-separated list of seeds.
type seeds []uint64

func (s *seeds) String() string {
	out := make([]string, len(*s))
	for i, v := range *s {
		out[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(out, ",")
}

func (s *seeds) Set(v string) error {
	var out []uint64
	for _, part := range strings.Split(v, ",") {
		x, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a seed", part)
		}
		out = append(out, x)
	}
	*s = out
	return nil
}

// poolList is a flag.Value holding pools as tier:size[:max-age]; max age
// defaults to 24h. An empty value is no pool.
type poolList []costsim.Pool

func (p *poolList) String() string {
	out := make([]string, len(*p))
	for i, v := range *p {
		out[i] = fmt.Sprintf("%s:%d:%s", v.Tier, v.Size, v.MaxAge)
	}
	return strings.Join(out, ",")
}

func (p *poolList) Set(v string) error {
	var out []costsim.Pool
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		f := strings.Split(part, ":")
		if len(f) < 2 || len(f) > 3 {
			return fmt.Errorf("%q is not tier:size[:max-age]", part)
		}
		size, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("%q: size %q is not a number", part, f[1])
		}
		pool := costsim.Pool{Tier: costsim.PoolTier(f[0]), Size: size, MaxAge: 24 * time.Hour}
		if len(f) == 3 {
			if pool.MaxAge, err = time.ParseDuration(f[2]); err != nil {
				return fmt.Errorf("%q: max age %q is not a duration", part, f[2])
			}
		}
		out = append(out, pool)
	}
	*p = out
	return nil
}

// floats is a flag.Value holding a comma-separated list of numbers in [0, 1].
type floats []float64

func (f *floats) String() string {
	s := make([]string, len(*f))
	for i, v := range *f {
		s[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strings.Join(s, ",")
}

func (f *floats) Set(v string) error {
	var out []float64
	for _, part := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || x < 0 || x > 1 {
			return fmt.Errorf("%q is not a probability in [0, 1]", part)
		}
		out = append(out, x)
	}
	*f = out
	return nil
}

// durations is a flag.Value holding a comma-separated list of durations; an
// empty value is an empty list.
type durations []time.Duration

func (d *durations) String() string {
	s := make([]string, len(*d))
	for i, v := range *d {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}

func (d *durations) Set(v string) error {
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		x, err := time.ParseDuration(part)
		if err != nil {
			return fmt.Errorf("%q is not a duration", part)
		}
		out = append(out, x)
	}
	*d = out
	return nil
}
