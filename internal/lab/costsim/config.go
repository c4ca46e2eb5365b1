package costsim

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Policy names a way of running sandboxes whose bill the simulator computes.
type Policy string

// The policies compared by the replay (see the package comment for what each
// does to the sandbox).
const (
	// NeverPause keeps the sandbox running from the session's first activity
	// to its last and kills it there: no sweep, no provider timeout.
	NeverPause Policy = "never-pause"
	// CronSweep is the seed projects' design: every heartbeat is written, a
	// sweep every Config.SweepInterval pauses a running sandbox whose idle
	// deadline has passed, and there is no provider-side guard.
	CronSweep Policy = "cron-sweep"
	// Sandman is ours: heartbeats coalesced to Policy.ActivityGranularity,
	// the same sweep, and a provider timeout with pause-on-timeout set by
	// lifecycle.Policy.ProviderTimeout (idle deadline + ProviderGrace +
	// GuardHeadroom) and refreshed when
	// lifecycle.Policy.NeedsProviderRefresh says so.
	Sandman Policy = "sandman"
	// SandmanTimers is Sandman with the deadline timers of docs/DESIGN.md
	// "Precise pausing", which the real code does not have yet:
	// each sweep tick arms a timer for every running session whose pause
	// deadline (or away deadline) falls before the next tick +
	// Config.TimerMargin, a write that sets a deadline before then arms one
	// at once, and a fired timer re-reads the session and pauses it only if
	// it is still due, re-arming when the deadline moved. The sweep and the
	// provider timeout stay as in Sandman.
	SandmanTimers Policy = "sandman-timers"
)

// Valid reports whether p is one of the known policies.
func (p Policy) Valid() bool {
	return p == NeverPause || p == CronSweep || p == Sandman || p == SandmanTimers
}

// Timers reports whether p arms deadline timers.
func (p Policy) Timers() bool { return p == SandmanTimers }

// Outage is a window during which the control plane is down: no sweep runs and
// every API call (create, heartbeat, resume) fails. The provider keeps
// running, so provider-side timeouts still fire. A zero Duration means no
// outage.
type Outage struct {
	// Start is the offset of the outage from Config.Epoch.
	Start time.Duration
	// Duration is how long the control plane stays down.
	Duration time.Duration
}

// Down reports whether the control plane is down at offset at (from
// Config.Epoch). The window is half-open: [Start, Start+Duration).
func (o Outage) Down(at time.Duration) bool {
	return o.Duration > 0 && at >= o.Start && at < o.Start+o.Duration
}

// Scenario is one row of the report: a policy and the faults it runs under.
// NeverPause ignores SweepFailureRate and Outage (it has no control plane in
// the loop).
type Scenario struct {
	// Name labels the row in the report, e.g. "sandman, 5% missed sweeps".
	Name string
	// Policy is what runs the sandboxes.
	Policy Policy
	// SweepFailureRate is the probability, 0..1, that a scheduled sweep does
	// not run at all (a failed or throttled invocation). Draws come from one
	// stream seeded by Config.Seed, one draw per tick, so two scenarios with
	// the same rate miss the same ticks.
	SweepFailureRate float64
	// Outage is a control-plane outage; zero for none.
	Outage Outage
	// Presence turns on the client channel's presence (docs/DESIGN.md "Client
	// channel"), which the real code does not have yet: when the client is
	// gone or hidden its away deadline is set to now + Config.AwayTimeout
	// and the session pauses at the earlier of its pause deadline and the
	// away deadline, reason "away"; a client that comes back clears it.
	// Sandman and SandmanTimers only.
	Presence bool
	// AwayProbability is the chance, 0..1, that the client is gone or hidden
	// for an idle gap (from the gap's start, the burst's last heartbeat, to
	// the next burst): a gap is away when its draw (SessionTrace.Away) is
	// below it. The user who leaves for good after the last burst closes the
	// page when Config.LeaveClosesPage says so, whatever this is. Used only
	// with Presence.
	AwayProbability float64
	// Learned runs the learned idle policy (lifecycle.LearnedPolicy with
	// Config.Learned) on every session: a pause deadline learned per user
	// key and pre-resumes before predicted returns (docs/COST.md). With
	// NoPreResume its plans never pre-resume. SandmanTimers only.
	Learned, NoPreResume bool
	// ResumeOnReturn resumes a paused session the moment its client is
	// visible again (docs/WAKE.md "Resume on return"): at the end of an away
	// gap, SessionTrace.Lead before the user's first request, so the
	// resume-to-ready wait overlaps the lead. Needs Presence (no return is
	// seen without it).
	ResumeOnReturn bool
}

// TraceParams are the distributions of the synthetic trace (package comment,
// "Trace"). Durations are time.Duration; medians are of log-normal
// distributions and Sigma is the standard deviation of the underlying normal.
type TraceParams struct {
	// HeartbeatInterval is the client's heartbeat period while the user is
	// active; each interval is drawn uniformly in
	// [HeartbeatInterval-HeartbeatJitter, HeartbeatInterval+HeartbeatJitter].
	HeartbeatInterval time.Duration
	HeartbeatJitter   time.Duration
	// DiurnalTrough is the session start rate at the quietest hour (03:00
	// UTC) relative to the busiest (15:00 UTC), 0..1; the rate follows a
	// raised cosine between them.
	DiurnalTrough float64
	// WeekendFactor scales the start rate on days 6 and 7 (Saturday and
	// Sunday; Config.Epoch is a Monday), 0..1.
	WeekendFactor float64
	// BurstMedian and BurstSigma give the log-normal length of one burst of
	// activity, clamped to [1 s, BurstMax].
	BurstMedian time.Duration
	BurstSigma  float64
	BurstMax    time.Duration
	// LeaveProbability is the chance, after each burst, that the user leaves
	// for good and the session ends; the number of bursts is geometric with
	// mean 1/LeaveProbability.
	LeaveProbability float64
	// ShortGapShare is the share of idle gaps drawn from the short (log-normal)
	// component; the rest come from the long (Pareto) component.
	ShortGapShare float64
	// ShortGapMedian and ShortGapSigma give the log-normal short gap.
	ShortGapMedian time.Duration
	ShortGapSigma  float64
	// LongGapMin (the Pareto scale x_m) and LongGapAlpha (its shape) give the
	// long, heavy-tailed gap.
	LongGapMin   time.Duration
	LongGapAlpha float64
	// GapMax clamps every gap.
	GapMax time.Duration
	// ReturnLeadMedian and ReturnLeadSigma give the log-normal lead of a
	// returning user: the time from the tab becoming visible again (the
	// end of an away gap) to the user's first request, clamped to
	// [ReturnLeadMin, ReturnLeadMax]. No trace at hand records it; the
	// default median is the Keystroke-Level Model's time for a first click
	// (Card, Moran and Newell, 1980: mental preparation 1.35 s + pointing
	// 1.1 s + button press 0.1 s = 2.55 s), with an assumed spread.
	ReturnLeadMedian time.Duration
	ReturnLeadSigma  float64
	ReturnLeadMin    time.Duration
	ReturnLeadMax    time.Duration
}

// Config is one run of the simulator. Start from DefaultConfig.
type Config struct {
	// Seed makes the run reproducible: the same Config gives the same Report.
	Seed uint64
	// Sessions is how many sessions the trace holds.
	Sessions int
	// Days is the window, in days from Epoch, over which sessions start. A
	// session that starts late runs past it; the replay runs until every
	// sandbox is paused or killed (at most Tail after the last activity).
	Days int
	// Epoch is the simulated time of offset zero. It must be a Monday 00:00
	// UTC for the weekday pattern to mean what it says.
	Epoch time.Time
	// Trace holds the distributions of the synthetic trace.
	Trace TraceParams
	// Learned is the learned idle policy of the Scenario.Learned rows; its
	// BreakEven is also the B of the cost against the clairvoyant optimum
	// (docs/COST.md).
	Learned lifecycle.LearnedPolicy
	// Lifecycle is the idle policy the pausing policies run: its
	// DefaultIdleTimeout is every session's idle timeout, and Sandman uses its
	// ActivityGranularity, ProviderGrace and provider-timeout rules.
	Lifecycle lifecycle.Policy
	// SweepInterval is the period of the idle-pause sweep; ticks fall at
	// Epoch + k*SweepInterval. docs/DESIGN.md: 5 min.
	SweepInterval time.Duration
	// ResumeWait is how long a user waits for one resume. E2B publishes about
	// 1 s. The replay treats resumes as instant and reports the wait as
	// Result.UserWait.
	ResumeWait time.Duration
	// Tail bounds the replay: sweeps stop Tail after the last activity of the
	// trace and a sandbox still running then is billed up to that point and
	// counted in Result.RunningAtEnd.
	Tail time.Duration
	// TimerMargin widens the horizon of the deadline timers: a sweep tick
	// arms a timer for every running session due before the next tick +
	// TimerMargin, and a write arms one at once when it sets a deadline
	// before the next tick + TimerMargin (ours: 1 min, so one missed tick
	// still leaves the first minute after it armed). SweepInterval +
	// TimerMargin must stay within SQS's 15 min maximum message delay.
	TimerMargin time.Duration
	// TimerLateness is how long after its due time a timer's pause lands:
	// the queue's delivery and the pauser's start (ours: 1 s). The timer's
	// delay is the time to the deadline rounded up to a whole second (SQS
	// DelaySeconds is an integer), so a timer pause lands within 1 s +
	// TimerLateness after the deadline it was armed for.
	TimerLateness time.Duration
	// AwayTimeout is how long after its client left a session pauses with
	// Scenario.Presence (docs/DESIGN.md: away_timeout, default 2 min; 0 turns
	// presence off).
	AwayTimeout time.Duration
	// LeaveClosesPage says the user who leaves for good after the session's
	// last burst closes the page, so with Scenario.Presence the session
	// gets an away deadline then whatever Scenario.AwayProbability is
	// ("the user who leaves for good closes the page").
	LeaveClosesPage bool
	// AwayFrontier lists away timeouts to replay, each with timers and
	// presence at the target away_prob (0.5) and no faults, for the report's
	// trade-off table: billed time against resumes waited for as the away
	// timeout grows from docs/DESIGN.md's default towards the idle timeout. Empty
	// leaves the table out. Each entry must be positive.
	AwayFrontier []time.Duration
	// VCPUs and PricePerVCPUSecond (US dollars) turn billed time into money.
	// An assumption, not a quote: E2B has published about $0.000014 per vCPU
	// per second, and 2 vCPUs is its default sandbox. Memory is not priced.
	VCPUs              int
	PricePerVCPUSecond float64
	// Providers are the resume-to-ready profiles the report turns resumes
	// into user waits with, one column each (DefaultProviders). The first
	// one's figures are the headline ones.
	Providers []ProviderProfile
	// Pools are the warm-pool rows of the report (see Pool); empty leaves
	// the section out.
	Pools []Pool
	// PoolCosts prices the pools' paused spares and their making.
	PoolCosts PoolCosts
	// Scenarios are the report's rows, in order.
	Scenarios []Scenario
	// Scale is the scale simulation Run adds to the report (see
	// "Scale"); a zero Scale.Sessions leaves it out.
	Scale ScaleConfig
	// HeldOutSeeds are the seeds Run judges the resume-on-return target on
	// besides Seed (HeldOut), and on the first five of them how it fares
	// when the app's restart or the return lead change. Empty leaves the
	// section out.
	HeldOutSeeds []uint64
}

// DefaultHeldOutSeeds are the report's held-out seeds: 2 to 11, never used
// to tune the model.
var DefaultHeldOutSeeds = []uint64{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}

// ProviderProfile is how long one provider keeps a user waiting for a
// sandbox to be usable: after a resume (docs/READINESS.md: running is not
// ready) and after a cold create. Durations are time.Duration.
type ProviderProfile struct {
	// Name labels the profile's column, e.g. "e2b".
	Name string
	// Resume is the provider's resume call, request to running.
	Resume time.Duration
	// KeepsProcesses says a pause keeps the app's processes (E2B's pause,
	// the local provider with SANDMAN_LOCAL_KEEP_PROCESSES=true): the app
	// answers as soon as the sandbox runs. A provider that loses them
	// (Vercel Sandbox, Daytona stop/start) restarts the app after every
	// resume, which adds AppStart.
	KeepsProcesses bool
	// AppStart is the app's start (the dev server up and answering) after
	// a resume that lost the processes.
	AppStart time.Duration
	// Overhead is Sandman's own time from the provider's answer to
	// readiness ready (the readiness probe), added to every wait.
	Overhead time.Duration
	// Create is the provider's create call, request to running.
	Create time.Duration
	// CreateAppStart is the app's first start in a new sandbox: a
	// dependency install and the dev server.
	CreateAppStart time.Duration
	// Source says where the figures come from.
	Source string
}

// ResumeToReady is how long a user who asks at the moment of a resume waits
// for the preview to answer: Resume + Overhead, + AppStart unless
// KeepsProcesses.
func (p ProviderProfile) ResumeToReady() time.Duration {
	w := p.Resume + p.Overhead
	if !p.KeepsProcesses {
		w += p.AppStart
	}
	return w
}

// ColdStart is how long a new session waits without a pool: Create +
// CreateAppStart + Overhead.
func (p ProviderProfile) ColdStart() time.Duration { return p.Create + p.CreateAppStart + p.Overhead }

// DefaultProviders are the report's provider profiles. Resume and app start
// are the bench's (docs/BENCH.md "Resume to ready"): E2B's published resume
// of about 1 s (docs/providers/e2b.md); Vercel Sandbox and Daytona publish
// none, so 1 s is assumed, and their dev server takes 2 s to answer after a
// cold resume; Overhead is the bench's p95 over that floor. The local row
// is the bench's measured floor of a real server (18 ms) with the
// processes kept. Create (1 s) and the first app start (10 s: an install
// from the template's cache and a dev server) are assumptions: no provider
// sheet gives a create-to-ready figure.
var DefaultProviders = []ProviderProfile{
	{Name: "e2b", Resume: time.Second, KeepsProcesses: true, AppStart: 2 * time.Second, Overhead: 15 * time.Millisecond,
		Create: time.Second, CreateAppStart: 10 * time.Second,
		Source: "resume: docs/providers/e2b.md (about 1 s), processes kept; overhead: bench p95"},
	{Name: "vercel", Resume: time.Second, AppStart: 2 * time.Second, Overhead: 147 * time.Millisecond,
		Create: time.Second, CreateAppStart: 10 * time.Second,
		Source: "resume assumed 1 s (none published), processes lost: 2 s dev-server start (bench); overhead: bench p95"},
	{Name: "daytona", Resume: time.Second, AppStart: 2 * time.Second, Overhead: 183 * time.Millisecond,
		Create: time.Second, CreateAppStart: 10 * time.Second,
		Source: "stop/start assumed 1 s (none published), processes lost: 2 s dev-server start (bench); overhead: bench p95"},
	{Name: "local (keep)", Resume: 18 * time.Millisecond, KeepsProcesses: true, AppStart: 18 * time.Millisecond, Overhead: 90 * time.Millisecond,
		Create: 18 * time.Millisecond, CreateAppStart: 10 * time.Second,
		Source: "SANDMAN_LOCAL_KEEP_PROCESSES=true: the bench's measured local floor (18 ms) as the resume; overhead: bench p50"},
}

// DefaultOutage is the report's control-plane outage: 6 h from Tuesday 14:00
// UTC, the busy hours.
var DefaultOutage = Outage{Start: 24*time.Hour + 14*time.Hour, Duration: 6 * time.Hour}

// DefaultAwayProbabilities are the away_prob values of the report's presence
// rows (0, 0.5 and 1).
var DefaultAwayProbabilities = []float64{0, 0.5, 1}

// DefaultAwayFrontier is the away timeouts of the report's trade-off table:
// docs/DESIGN.md's default (2 min) up to the default idle timeout (10 min).
var DefaultAwayFrontier = []time.Duration{2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
	6 * time.Minute, 8 * time.Minute, 10 * time.Minute}

// DefaultScenarios returns the report's rows: never pause; the cron sweep
// and Sandman today, each with no faults, with missedRate of the sweeps
// missed, and through outage; Sandman with timers with no faults and with
// missedRate; Sandman with timers and presence at each of awayProbs; and
// Sandman with timers through outage. Rows whose fault is zero (a zero rate,
// a zero outage) are left out.
func DefaultScenarios(missedRate float64, outage Outage, awayProbs []float64) []Scenario {
	missed := fmt.Sprintf("%s%% missed sweeps", strconv.FormatFloat(100*missedRate, 'f', -1, 64))
	down := fmt.Sprintf("%s outage", human(outage.Duration))
	sc := []Scenario{
		{Name: "never pause", Policy: NeverPause},
		{Name: "cron sweep", Policy: CronSweep},
	}
	if missedRate > 0 {
		sc = append(sc, Scenario{Name: "cron sweep, " + missed, Policy: CronSweep, SweepFailureRate: missedRate})
	}
	sc = append(sc, Scenario{Name: "sandman", Policy: Sandman})
	if missedRate > 0 {
		sc = append(sc, Scenario{Name: "sandman, " + missed, Policy: Sandman, SweepFailureRate: missedRate})
	}
	if outage.Duration > 0 {
		sc = append(sc,
			Scenario{Name: "cron sweep, " + down, Policy: CronSweep, Outage: outage},
			Scenario{Name: "sandman, " + down, Policy: Sandman, Outage: outage})
	}
	sc = append(sc, Scenario{Name: "sandman + timers", Policy: SandmanTimers})
	if missedRate > 0 {
		sc = append(sc, Scenario{Name: "sandman + timers, " + missed, Policy: SandmanTimers, SweepFailureRate: missedRate})
	}
	for _, p := range awayProbs {
		sc = append(sc, Scenario{Name: "sandman + timers + presence, away_prob " + strconv.FormatFloat(p, 'f', -1, 64),
			Policy: SandmanTimers, Presence: true, AwayProbability: p})
	}
	for _, p := range awayProbs {
		sc = append(sc, Scenario{Name: "sandman + timers + presence + resume on return, away_prob " + strconv.FormatFloat(p, 'f', -1, 64),
			Policy: SandmanTimers, Presence: true, AwayProbability: p, ResumeOnReturn: true})
	}
	if outage.Duration > 0 {
		sc = append(sc, Scenario{Name: "sandman + timers, " + down, Policy: SandmanTimers, Outage: outage})
	}
	return sc
}

// DefaultConfig returns the configuration of the published report: seed 1,
// 1,000 sessions starting over 7 days, lifecycle.DefaultPolicy (10 min idle
// timeout, 30 s granularity, 2 min grace), a 5 min sweep, timers with a 1 min
// margin landing 1 s late, a 2 min away timeout, the scenarios of
// DefaultScenarios(0.05, DefaultOutage, DefaultAwayProbabilities), and the
// scale simulation of DefaultScale.
func DefaultConfig() Config {
	return Config{
		Seed:     1,
		Sessions: 1000,
		Days:     7,
		Epoch:    time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC), // a Monday
		Trace: TraceParams{
			HeartbeatInterval: 30 * time.Second,
			HeartbeatJitter:   5 * time.Second,
			DiurnalTrough:     0.15,
			WeekendFactor:     0.6,
			BurstMedian:       8 * time.Minute,
			BurstSigma:        1.0,
			BurstMax:          4 * time.Hour,
			LeaveProbability:  0.12,
			ShortGapShare:     0.7,
			ShortGapMedian:    90 * time.Second,
			ShortGapSigma:     1.2,
			LongGapMin:        20 * time.Minute,
			LongGapAlpha:      1.1,
			GapMax:            36 * time.Hour,
			ReturnLeadMedian:  2550 * time.Millisecond,
			ReturnLeadSigma:   0.6,
			ReturnLeadMin:     200 * time.Millisecond,
			ReturnLeadMax:     time.Minute,
		},
		Lifecycle:          lifecycle.DefaultPolicy(),
		Learned:            lifecycle.DefaultLearnedPolicy(),
		SweepInterval:      5 * time.Minute,
		ResumeWait:         time.Second,
		Tail:               48 * time.Hour,
		TimerMargin:        time.Minute,
		TimerLateness:      time.Second,
		AwayTimeout:        2 * time.Minute,
		LeaveClosesPage:    true,
		AwayFrontier:       DefaultAwayFrontier,
		VCPUs:              2,
		PricePerVCPUSecond: 0.000014,
		Providers:          DefaultProviders,
		Pools:              DefaultPools,
		PoolCosts:          DefaultPoolCosts,
		Scenarios:          DefaultScenarios(0.05, DefaultOutage, DefaultAwayProbabilities),
		Scale:              DefaultScale(),
		HeldOutSeeds:       DefaultHeldOutSeeds,
	}
}

// sqsMaxDelay is SQS's maximum message delay (DelaySeconds at most 900),
// the longest a timer can wait in AWS (docs/DESIGN.md "Precise pausing").
const sqsMaxDelay = 15 * time.Minute

// Validate returns nil when c can be run, or an error listing every field out
// of range.
func (c Config) Validate() error {
	t := c.Trace
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Sessions > 0, "sessions must be positive, got %d", c.Sessions)
	check(c.Days > 0, "days must be positive, got %d", c.Days)
	check(t.HeartbeatInterval > 0, "heartbeat interval must be positive")
	check(t.HeartbeatJitter >= 0 && t.HeartbeatJitter < t.HeartbeatInterval,
		"heartbeat jitter must be in [0, heartbeat interval)")
	check(t.DiurnalTrough > 0 && t.DiurnalTrough <= 1, "diurnal trough must be in (0, 1]")
	check(t.WeekendFactor > 0 && t.WeekendFactor <= 1, "weekend factor must be in (0, 1]")
	check(t.BurstMedian > 0 && t.BurstSigma >= 0 && t.BurstMax >= time.Second,
		"burst median, sigma and max must be positive (max at least 1s)")
	check(t.LeaveProbability > 0 && t.LeaveProbability <= 1, "leave probability must be in (0, 1]")
	check(t.ShortGapShare >= 0 && t.ShortGapShare <= 1, "short gap share must be in [0, 1]")
	check(t.ShortGapMedian > 0 && t.ShortGapSigma >= 0, "short gap median must be positive")
	check(t.LongGapMin > 0 && t.LongGapAlpha > 0, "long gap min and alpha must be positive")
	check(t.GapMax >= time.Second, "gap max must be at least 1s")
	check(t.ReturnLeadMedian > 0 && t.ReturnLeadSigma >= 0 && t.ReturnLeadMin > 0 && t.ReturnLeadMin <= t.ReturnLeadMax,
		"return lead median and min must be positive, sigma not negative, min at most max")
	check(c.Lifecycle.DefaultIdleTimeout > 0, "idle timeout must be positive")
	check(c.Lifecycle.ActivityGranularity >= 0, "activity granularity must not be negative")
	check(c.Lifecycle.ProviderGrace >= 0, "provider grace must not be negative")
	check(c.SweepInterval > 0, "sweep interval must be positive")
	check(c.ResumeWait >= 0, "resume wait must not be negative")
	check(c.Tail > 0, "tail must be positive")
	check(c.VCPUs > 0 && c.PricePerVCPUSecond >= 0, "vcpus must be positive and price not negative")
	check(c.TimerMargin >= 0 && c.SweepInterval+c.TimerMargin <= sqsMaxDelay,
		"timer margin must not be negative and sweep interval + timer margin must be at most SQS's 15m maximum delay")
	check(c.TimerLateness >= 0, "timer lateness must not be negative")
	check(c.AwayTimeout >= 0, "away timeout must not be negative")
	for _, t := range c.AwayFrontier {
		check(t > 0, "away frontier timeout %s must be positive", t)
	}
	for i, p := range c.Providers {
		check(p.Name != "" && p.Resume >= 0 && p.AppStart >= 0 && p.Overhead >= 0 && p.Create >= 0 && p.CreateAppStart >= 0,
			"provider %d (%q): a name and no negative duration", i, p.Name)
	}
	for i, p := range c.Pools {
		check(p.Tier.Valid() && p.Size > 0 && p.MaxAge > 0, "pool %d: tier paused or running, size and max age positive", i)
	}
	check(c.PoolCosts.SnapshotGiB >= 0 && c.PoolCosts.StoragePerGiBMonth >= 0 && c.PoolCosts.Pause >= 0,
		"pool costs must not be negative")
	for i, s := range c.Scenarios {
		check(s.Policy.Valid(), "scenario %d (%q): unknown policy %q", i, s.Name, s.Policy)
		check(s.SweepFailureRate >= 0 && s.SweepFailureRate <= 1,
			"scenario %d (%q): sweep failure rate must be in [0, 1]", i, s.Name)
		check(s.Outage.Duration >= 0, "scenario %d (%q): outage duration must not be negative", i, s.Name)
		check(s.AwayProbability >= 0 && s.AwayProbability <= 1,
			"scenario %d (%q): away probability must be in [0, 1]", i, s.Name)
		check(!s.Presence || s.Policy == Sandman || s.Policy == SandmanTimers,
			"scenario %d (%q): presence needs the sandman or sandman-timers policy", i, s.Name)
		check(!s.ResumeOnReturn || s.Presence, "scenario %d (%q): resume on return needs presence", i, s.Name)
		check(!s.Learned || s.Policy == SandmanTimers, "scenario %d (%q): the learned policy needs sandman-timers", i, s.Name)
		if s.Learned {
			if err := c.Learned.Validate(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.Scale.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid costsim config: %w", err)
	}
	return nil
}
