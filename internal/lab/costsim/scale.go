package costsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"golang.org/x/time/rate"
)

// ScaleConfig is the scale simulation: at DueRate
// pause deadlines per SweepInterval (out of Sessions sessions), with the
// provider allowing RateLimit lifecycle calls per RateWindow, how late do
// pauses land when a rate-limited pauser drains them? Durations are
// time.Duration. A zero Sessions turns the simulation off.
type ScaleConfig struct {
	// Seed makes the draws reproducible.
	Seed uint64
	// Sessions is the number of sessions tracked (1,000,000). It
	// sizes nothing in the queue: it enters the report as the context of
	// DueRate (the sparse index the sweep reads holds the running ones).
	Sessions int
	// DueRate is how many pause deadlines fall in one SweepInterval (issue
	// 19: 100,000 per 5 min), as a Poisson process: uniform times over the
	// simulated span.
	DueRate int
	// SweepInterval is the sweep's period (5 min); ticks at k*SweepInterval.
	SweepInterval time.Duration
	// Intervals is the simulated span in sweep intervals (12: one hour).
	Intervals int
	// RateLimit lifecycle calls per RateWindow is the provider's limit
	// (E2B: 20,000 per 30 s). The pauser draws from a token bucket
	// (golang.org/x/time/rate) filled at (1 - OtherShare) * RateLimit /
	// RateWindow per second, holding at most Burst tokens.
	RateLimit  int
	RateWindow time.Duration
	// Burst is the token bucket's depth. 1 (ours) paces calls evenly, so no
	// RateWindow ever holds more than RateLimit + 1 of them.
	Burst int
	// OtherShare, 0..1, is the share of the limit taken by the other
	// lifecycle calls (creates, resumes, provider-timeout refreshes) in the
	// rows that name it.
	OtherShare float64
	// TimerLateness is how long after its whole-second delay a timer lands
	// (as Config.TimerLateness).
	TimerLateness time.Duration
	// MassDisconnect is the away timeout of the mass-disconnect row: one
	// interval's DueRate deadlines all fall at one instant, as when a
	// deploy of the WebSocket gateway drops every client at once and every
	// away deadline lands AwayTimeout later. Zero leaves the row out.
	MassDisconnect time.Duration
	// ResumeRate and CreateRate are the resumes and creates per
	// SweepInterval at the target (100,000 and 30,000: docs/DESIGN.md
	// "Capacity", and the cost replay's 0.29 creates per pause). Zero
	// ResumeRate leaves the provider-call section out.
	ResumeRate, CreateRate int
	// Guard is the lifecycle policy of the target's sessions, each active
	// throughout with Guard.DefaultIdleTimeout: its refresh interval
	// (lifecycle.Policy.GuardRefreshInterval), refreshes per window
	// (GuardRefreshes) and bound (GuardBound) give the refresh calls and
	// the refresh table; the table's other rows change only its
	// GuardHeadroom (GuardHeadrooms).
	Guard lifecycle.Policy
	// GuardHeadrooms are the refresh table's other headrooms (besides
	// Guard's own, and none).
	GuardHeadrooms []time.Duration
	// LimiterDrain is how long after the interval starts the limiter rows
	// stop granting; calls still waiting then are unserved.
	LimiterDrain time.Duration
	// Limits are the providers' published limits the demand is set
	// against (DefaultProviderLimits).
	Limits []ProviderLimit
}

// DefaultGuardHeadrooms are the refresh table's headrooms besides the
// policy's: 5 min (half the default idle timeout, the rule before the
// headroom was a setting), 15 min, 47 min 30 s (the most a 1 h plan cap
// holds with the default 10 min idle timeout) and 1 h (capped to that).
var DefaultGuardHeadrooms = []time.Duration{5 * time.Minute, 15 * time.Minute, 47*time.Minute + 30*time.Second, time.Hour}

// DefaultScale returns the target load: 1,000,000 sessions, 100,000 due per
// 5 min for an hour, 20,000 calls per 30 s with an even pace (burst 1), half
// the limit left to other calls in the row that says so, timers 1 s late,
// and a mass disconnect with the 2 min away timeout.
func DefaultScale() ScaleConfig {
	return ScaleConfig{
		Seed:           1,
		Sessions:       1_000_000,
		DueRate:        100_000,
		SweepInterval:  5 * time.Minute,
		Intervals:      12,
		RateLimit:      20_000,
		RateWindow:     30 * time.Second,
		Burst:          1,
		OtherShare:     0.5,
		TimerLateness:  time.Second,
		MassDisconnect: 2 * time.Minute,
		ResumeRate:     100_000,
		CreateRate:     30_000,
		Guard:          lifecycle.DefaultPolicy(),
		GuardHeadrooms: DefaultGuardHeadrooms,
		LimiterDrain:   time.Hour,
		Limits:         DefaultProviderLimits,
	}
}

// Validate returns nil when c can be run (or is off), or an error listing
// every field out of range.
func (c ScaleConfig) Validate() error {
	if c.Sessions == 0 {
		return nil
	}
	var errs []error
	check := func(ok bool, msg string) {
		if !ok {
			errs = append(errs, errors.New(msg))
		}
	}
	check(c.Sessions > 0 && c.DueRate > 0 && c.DueRate <= c.Sessions,
		"scale: sessions and due per interval must be positive, due at most sessions")
	check(c.SweepInterval > 0 && c.Intervals > 0, "scale: sweep interval and intervals must be positive")
	check(c.DueRate*c.Intervals <= 50_000_000, "scale: at most 50,000,000 deadlines (due per interval × intervals)")
	check(c.RateLimit > 0 && c.RateWindow > 0 && c.Burst > 0, "scale: rate limit, window and burst must be positive")
	check(c.OtherShare >= 0 && c.OtherShare < 1, "scale: other share must be in [0, 1)")
	check(c.TimerLateness >= 0 && c.MassDisconnect >= 0, "scale: timer lateness and mass disconnect must not be negative")
	check(c.ResumeRate >= 0 && c.CreateRate >= 0, "scale: resume and create rates must not be negative")
	check(c.ResumeRate == 0 || (c.Guard.GuardHeadroom > 0 && c.Guard.DefaultIdleTimeout > 0),
		"scale: the guard policy needs a positive headroom and idle timeout")
	for _, h := range c.GuardHeadrooms {
		check(h > 0, "scale: guard headrooms must be positive")
	}
	check(c.ResumeRate == 0 || c.LimiterDrain >= c.SweepInterval, "scale: the limiter drain must be at least one sweep interval")
	var refreshes float64
	if c.ResumeRate > 0 && c.Guard.GuardHeadroom > 0 {
		refreshes = c.Guard.GuardRefreshes(c.Sessions, c.Guard.DefaultIdleTimeout, c.SweepInterval)
	}
	check(float64(c.DueRate+c.ResumeRate+c.CreateRate)+refreshes <= 20_000_000,
		"scale: at most 20,000,000 provider calls per sweep interval")
	for i, l := range c.Limits {
		check(l.Name != "" && l.Window > 0 && l.Lifecycle > 0 && l.Creates >= 0, fmt.Sprintf("scale: provider limit %d needs a name, a window and a lifecycle limit", i))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid scale config: %w", err)
	}
	return nil
}

// ScaleResult is one row of the scale simulation. Lateness is pause time -
// deadline; percentiles are nearest-rank.
type ScaleResult struct {
	// Name labels the row.
	Name string
	// Pauses is the number of deadlines drained; PeakPerWindow the most
	// pause calls in any RateWindow starting at a call (a check on the
	// pacing).
	Pauses, PeakPerWindow int
	// CallsPerSecond is the pauser's rate.
	CallsPerSecond float64
	// LatenessP50, LatenessP99 and LatenessMax are how late pauses landed.
	LatenessP50, LatenessP99, LatenessMax time.Duration
	// Within10s is the share, 0..1, of pauses that landed within 10 s of
	// their deadline.
	Within10s float64
}

// ScaleReport is the outcome of RunScale.
type ScaleReport struct {
	Config  ScaleConfig
	Results []ScaleResult
	// Calls are the shared-limiter rows of the provider-call section
	// (ScaleConfig.ResumeRate > 0).
	Calls []CallRow
}

// RunScale runs the scale simulation's rows: the sweep alone (each pause
// requested at the first tick at or after its deadline, as today), timers
// (requested at the deadline rounded up to a whole second + TimerLateness),
// timers with OtherShare of the limit taken, and timers through a mass
// disconnect. Each row drains its requests first come, first served through
// its own token bucket on a simulated clock. Errors: c fails Validate.
func RunScale(c ScaleConfig) (ScaleReport, error) {
	if err := c.Validate(); err != nil {
		return ScaleReport{}, err
	}
	rep := ScaleReport{Config: c}
	if c.Sessions == 0 {
		return rep, nil
	}
	span := time.Duration(c.Intervals) * c.SweepInterval
	rng := rand.New(rand.NewPCG(c.Seed, 0))
	due := make([]time.Duration, c.DueRate*c.Intervals)
	for i := range due {
		due[i] = ms(rng.Float64() * float64(span))
	}
	slices.Sort(due)

	atTick := func(d time.Duration) time.Duration {
		return (d + c.SweepInterval - 1) / c.SweepInterval * c.SweepInterval
	}
	onTimer := func(d time.Duration) time.Duration {
		return (d+time.Second-1)/time.Second*time.Second + c.TimerLateness
	}
	perSecond := float64(c.RateLimit) / c.RateWindow.Seconds()
	rep.Results = append(rep.Results,
		c.drain("sweep only (today)", due, atTick, perSecond),
		c.drain("timers", due, onTimer, perSecond))
	if c.OtherShare > 0 {
		rep.Results = append(rep.Results, c.drain(
			fmt.Sprintf("timers, %.0f %% of the limit left to other calls", 100*c.OtherShare),
			due, onTimer, (1-c.OtherShare)*perSecond))
	}
	if c.MassDisconnect > 0 && c.Intervals > 1 {
		// The deadlines of the middle interval all move to one instant:
		// the disconnect at the interval's start + the away timeout.
		k := time.Duration(c.Intervals/2) * c.SweepInterval
		mass := slices.Clone(due)
		for i, d := range mass {
			if d >= k && d < k+c.SweepInterval {
				mass[i] = k + c.MassDisconnect
			}
		}
		slices.Sort(mass)
		rep.Results = append(rep.Results, c.drain(
			fmt.Sprintf("timers, mass disconnect (one interval's deadlines at one instant, %s after it)", human(c.MassDisconnect)),
			mass, onTimer, perSecond))
	}
	if c.ResumeRate > 0 {
		rep.Calls = c.runCalls()
	}
	return rep, nil
}

// drain requests a pause for each deadline (ascending) at request(deadline)
// and grants them in order through a token bucket of perSecond calls per
// second and depth Burst, on a simulated clock starting at the epoch.
func (c ScaleConfig) drain(name string, due []time.Duration, request func(time.Duration) time.Duration, perSecond float64) ScaleResult {
	epoch := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	lim := rate.NewLimiter(rate.Limit(perSecond), c.Burst)
	late := make([]time.Duration, len(due))
	granted := make([]time.Duration, len(due))
	var within int
	for i, d := range due {
		at := epoch.Add(request(d))
		g := at.Add(lim.ReserveN(at, 1).DelayFrom(at)).Sub(epoch)
		granted[i] = g
		late[i] = g - d
		if late[i] <= 10*time.Second {
			within++
		}
	}
	res := ScaleResult{Name: name, Pauses: len(due), CallsPerSecond: perSecond,
		Within10s: ratio(float64(within), float64(len(due)))}
	// Grants are in request order, which is deadline order for every row:
	// the peak over windows starting at each grant is a two-pointer scan.
	j := 0
	for i := range granted {
		for j < len(granted) && granted[j] < granted[i]+c.RateWindow {
			j++
		}
		res.PeakPerWindow = max(res.PeakPerWindow, j-i)
	}
	slices.Sort(late)
	res.LatenessP50, res.LatenessP99, res.LatenessMax = percentile(late, 0.5), percentile(late, 0.99), late[len(late)-1]
	return res
}

// Markdown renders the scale simulation as a level-3 section, with its
// assumptions.
func (s ScaleReport) Markdown() string {
	if len(s.Results) == 0 {
		return ""
	}
	c := s.Config
	out := fmt.Sprintf("\n### Scale: how late pauses land at %s sessions, %s due per %s\n\n",
		numfmt.Thousands(c.Sessions), numfmt.Thousands(c.DueRate), human(c.SweepInterval))
	out += fmt.Sprintf("%s pause deadlines (a Poisson process at %s per %s for %s, seed %d), each drained by a pauser "+
		"limited to the provider's %s lifecycle calls per %s (E2B's published figure) by a token bucket "+
		"(`golang.org/x/time/rate`) of depth %d, first come first served, on a simulated clock. A pause call takes no time "+
		"beyond its token; lateness = when it is granted − its deadline.\n\n",
		numfmt.Thousands(c.DueRate*c.Intervals), numfmt.Thousands(c.DueRate), human(c.SweepInterval), human(time.Duration(c.Intervals)*c.SweepInterval),
		c.Seed, numfmt.Thousands(c.RateLimit), human(c.RateWindow), c.Burst)
	out += "| row | pauses | pauser rate (calls/s) | most calls in one window | lateness p50 (s) | lateness p99 (s) | lateness max (s) | within 10 s |\n"
	out += "|---|---:|---:|---:|---:|---:|---:|---:|\n"
	for _, r := range s.Results {
		out += fmt.Sprintf("| %s | %s | %.0f | %s | %.1f | %.1f | %.1f | %.1f %% |\n", r.Name, numfmt.Thousands(r.Pauses), r.CallsPerSecond,
			numfmt.Thousands(r.PeakPerWindow), r.LatenessP50.Seconds(), r.LatenessP99.Seconds(), r.LatenessMax.Seconds(), 100*r.Within10s)
	}
	out += fmt.Sprintf("\n- *sweep only* requests each pause at the first tick at or after its deadline, so every tick "+
		"finds about %s due at once and drains them at the limit. *timers* request each at its deadline rounded up to a "+
		"whole second + %s. The timers' sweep arms at least %s timers per tick (the deadlines before the next tick, plus "+
		"those in the margin): at least %s SQS SendMessageBatch calls (10 messages each), which cost no provider calls.\n",
		numfmt.Thousands(c.DueRate), human(c.TimerLateness), numfmt.Thousands(c.DueRate), numfmt.Thousands((c.DueRate+9)/10))
	out += fmt.Sprintf("- The %s sessions enter only through the %s due per %s: the sparse index the sweep reads holds the "+
		"running ones, and paused sessions cost no calls until they resume.\n", numfmt.Thousands(c.Sessions), numfmt.Thousands(c.DueRate), human(c.SweepInterval))
	return out + s.callsMarkdown()
}
