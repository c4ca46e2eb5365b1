package costsim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// CallKind is one kind of provider lifecycle call.
type CallKind uint8

// The provider calls that share a provider's lifecycle limit, in the
// priority order of a limiter that serves users first.
const (
	CallResume CallKind = iota
	CallCreate
	CallPause
	CallRefresh
	callKinds
)

// String names the kind.
func (k CallKind) String() string {
	return [...]string{"resume", "create", "pause", "refresh"}[k]
}

// CallDemand is the provider calls the target makes, per RateWindow.
type CallDemand [callKinds]float64

// Total is every call of d.
func (d CallDemand) Total() float64 {
	return d[CallResume] + d[CallCreate] + d[CallPause] + d[CallRefresh]
}

// ProviderLimit is one provider's published call limits, as calls per Window
// (0: none published).
type ProviderLimit struct {
	Name   string
	Window time.Duration
	// Lifecycle is the limit shared by lifecycle calls (E2B: create, pause,
	// connect, set-timeout all count; Daytona: start, stop, pause; creates
	// have a bucket of their own).
	Lifecycle int
	// Creates is the limit on creates alone, when the provider has one.
	Creates int
	// CreatesInLifecycle says creates also count against Lifecycle.
	CreatesInLifecycle bool
	// Source says where the figures come from.
	Source string
}

// DefaultProviderLimits are the report's published limits: E2B's rate-limits
// page (e2b.dev/docs/sandbox/rate-limits: lifecycle and management API
// 20,000 per 30 s on Hobby and Pro, creation 1/s Hobby and 5/s Pro,
// Enterprise custom) and Daytona's (daytona.io/docs/en/rate-limits, and
// docs/providers/daytona.md: tier 4 sandbox-lifecycle 50,000 and
// sandbox-create 600 per minute). Vercel Sandbox publishes no call limit but
// a vCPU allocation rate (Enterprise 400 per minute), which every create and
// resume of a 2-vCPU sandbox draws from; it is not a call limit and is noted
// in the report, not modelled.
var DefaultProviderLimits = []ProviderLimit{
	{Name: "e2b (Pro)", Window: 30 * time.Second, Lifecycle: 20_000, Creates: 150, CreatesInLifecycle: true,
		Source: "e2b.dev/docs/sandbox/rate-limits: lifecycle 20,000 / 30 s; creation 5/s"},
	{Name: "daytona (tier 4)", Window: time.Minute, Lifecycle: 50_000, Creates: 600,
		Source: "daytona.io/docs/en/rate-limits (tier 4): sandbox-lifecycle 50,000 / min; sandbox-create 600 / min"},
}

// CallRow is one limiter row: the target's calls through one shared limiter
// of ScaleConfig.RateLimit per RateWindow for one ScaleConfig.Intervals'
// first interval, then drained.
type CallRow struct {
	Name string
	// Demand is the calls per RateWindow; Limit the limiter's.
	Demand CallDemand
	Limit  int
	// Calls, DelayP50, DelayP99, DelayMax per kind: how long a call waited
	// for its token (granted - asked). Unserved counts calls still waiting
	// when the drain stopped (a kind starved by a priority limiter).
	Calls                        [callKinds]int
	DelayP50, DelayP99, DelayMax [callKinds]time.Duration
	Unserved                     [callKinds]int
	// Drained is when the last call was granted, from the interval's start.
	Drained time.Duration
}

// RefreshOption is one guard headroom at the target: the refresh interval
// the policy gives it, the calls it adds, the limit every call needs to stay
// within 80 % of it, and the guard's bound.
type RefreshOption struct {
	// Headroom is lifecycle.Policy.GuardHeadroom; 0 is no refresh (the
	// guard set only at create and resume). Default marks the policy's own.
	Headroom time.Duration
	Default  bool
	// Every is the refresh interval of an active session
	// (lifecycle.Policy.GuardRefreshInterval: the headroom, less when the
	// provider's timeout cap eats it).
	Every time.Duration
	// PerWindow is the refreshes per RateWindow
	// (lifecycle.Policy.GuardRefreshes); Total every call's.
	PerWindow, Total float64
	// Needed is the lifecycle limit per RateWindow at which Total is 80 %.
	Needed float64
	// Bound is how long past the idle timeout the provider's own timeout
	// pauses a sandbox when the control plane is down
	// (lifecycle.Policy.GuardBound: grace + Every + the coalescing window;
	// with no refresh, the guard set at the last create or resume, no
	// bound from activity). Holds is false when the provider cannot hold
	// the idle timeout at all.
	Bound time.Duration
	Holds bool
}

// demand is the calls of the target per RateWindow, with the refreshes of
// guard's policy (nil: none).
func (c ScaleConfig) demand(guard *lifecycle.Policy) CallDemand {
	perWindow := func(perInterval int) float64 {
		return float64(perInterval) * c.RateWindow.Seconds() / c.SweepInterval.Seconds()
	}
	var d CallDemand
	d[CallPause], d[CallResume], d[CallCreate] = perWindow(c.DueRate), perWindow(c.ResumeRate), perWindow(c.CreateRate)
	if guard != nil {
		d[CallRefresh] = guard.GuardRefreshes(c.Sessions, guard.DefaultIdleTimeout, c.RateWindow)
	}
	return d
}

// refreshEvery is the target's refresh interval under Guard.
func (c ScaleConfig) refreshEvery() time.Duration {
	return c.Guard.GuardRefreshInterval(c.Guard.DefaultIdleTimeout)
}

// refreshOptions returns the guard-refresh table: Guard with its own
// headroom and each of GuardHeadrooms, shortest first, then no refresh.
func (c ScaleConfig) refreshOptions() []RefreshOption {
	heads := slices.Sorted(slices.Values(append([]time.Duration{c.Guard.GuardHeadroom}, c.GuardHeadrooms...)))
	var out []RefreshOption
	for _, h := range slices.Compact(heads) {
		pol := c.Guard
		pol.GuardHeadroom = h
		d := c.demand(&pol)
		o := RefreshOption{Headroom: h, Default: h == c.Guard.GuardHeadroom,
			Every: pol.GuardRefreshInterval(pol.DefaultIdleTimeout), PerWindow: d[CallRefresh], Total: d.Total(), Needed: d.Total() / 0.8}
		o.Bound, o.Holds = pol.GuardBound(pol.DefaultIdleTimeout)
		out = append(out, o)
	}
	d := c.demand(nil)
	return append(out, RefreshOption{Total: d.Total(), Needed: d.Total() / 0.8})
}

// callArrivals draws one SweepInterval of the target's calls, each kind a
// Poisson process (uniform times), sorted by time.
type call struct {
	at   time.Duration
	kind CallKind
}

func (c ScaleConfig) callArrivals(d CallDemand, rng *rand.Rand) []call {
	var calls []call
	for k := range callKinds {
		n := int(math.Round(d[k] * c.SweepInterval.Seconds() / c.RateWindow.Seconds()))
		for range n {
			calls = append(calls, call{at: ms(rng.Float64() * float64(c.SweepInterval)), kind: k})
		}
	}
	slices.SortFunc(calls, func(a, b call) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.kind, b.kind)
	})
	return calls
}

// limiterEpoch is when the simulated clock of the limiter rows starts.
var limiterEpoch = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// classOf is the class a kind's call takes in the provider governor
// (governor.Wrap, as calllimit.Wrap before it): resumes and creates are
// user calls, pauses background work, refreshes refreshes.
func classOf(k CallKind) lifecycle.CallPriority {
	switch k {
	case CallResume, CallCreate:
		return lifecycle.PriorityUser
	case CallPause:
		return lifecycle.PriorityBackground
	}
	return lifecycle.PriorityRefresh
}

// limit runs calls through the fleet's provider governor's bucket itself
// (governor.Bucket: the leases' arithmetic, each rank limited to its share
// of the bucket's depth) on a simulated clock, one call a lease, the calls
// waiting for a token served as a governor's queue serves them: the best
// rank first, first come first served within it, each at the first moment
// the bucket has a token for its rank. With priority each kind takes its
// class's rank (classOf); without, every call takes one: first come first
// served, the limiter before it had classes. Granting stops at stop; it
// returns each call's delay (-1: not served by then).
func limit(calls []call, l calllimit.Limit, priority bool, stop time.Duration) []time.Duration {
	b := governor.Bucket{Shape: governor.Shape{Rate: l.PerSecond,
		Depth: time.Duration(float64(max(l.Burst, 1)) / l.PerSecond * float64(time.Second))}}
	delay := make([]time.Duration, len(calls))
	for i := range delay {
		delay[i] = -1
	}
	end := limiterEpoch.Add(stop)
	rankOf := func(k CallKind) governor.Rank {
		if !priority {
			return governor.RankOf(lifecycle.PriorityBackground, false)
		}
		return governor.RankOf(classOf(k), false)
	}
	var waiting [governor.NumRanks][]int // call indices, in arrival order
	arrival := func(i int) time.Time { return limiterEpoch.Add(calls[i].at) }
	now, next := limiterEpoch, 0
	for {
		r, any := governor.Rank(0), false
		for i := range governor.NumRanks {
			if len(waiting[i]) > 0 {
				r, any = i, true
				break
			}
		}
		if !any {
			if next == len(calls) {
				break
			}
			now = arrival(next)
			waiting[rankOf(calls[next].kind)] = append(waiting[rankOf(calls[next].kind)], next)
			next++
			continue
		}
		n, at := b.Lease(now, r, len(waiting[r]))
		if n > 0 {
			for _, i := range waiting[r][:n] {
				delay[i] = now.Sub(arrival(i))
			}
			waiting[r] = waiting[r][n:]
			continue
		}
		if next < len(calls) && arrival(next).Before(at) {
			now = arrival(next)
			waiting[rankOf(calls[next].kind)] = append(waiting[rankOf(calls[next].kind)], next)
			next++
			continue
		}
		if at.After(end) {
			break
		}
		now = at
	}
	return delay
}

// callRow runs one limiter row.
func (c ScaleConfig) callRow(name string, d CallDemand, priority bool) CallRow {
	rng := rand.New(rand.NewPCG(c.Seed, 1))
	calls := c.callArrivals(d, rng)
	perSecond := float64(c.RateLimit) / c.RateWindow.Seconds()
	delay := limit(calls, calllimit.Limit{PerSecond: perSecond, Burst: c.Burst}, priority, c.LimiterDrain)
	row := CallRow{Name: name, Demand: d, Limit: c.RateLimit}
	var by [callKinds][]time.Duration
	for i, cl := range calls {
		row.Calls[cl.kind]++
		if delay[i] < 0 {
			row.Unserved[cl.kind]++
			continue
		}
		by[cl.kind] = append(by[cl.kind], delay[i])
		row.Drained = max(row.Drained, cl.at+delay[i])
	}
	for k := range callKinds {
		slices.Sort(by[k])
		if len(by[k]) > 0 {
			row.DelayP50[k], row.DelayP99[k], row.DelayMax[k] = percentile(by[k], 0.5), percentile(by[k], 0.99), by[k][len(by[k])-1]
		}
	}
	return row
}

// runCalls runs the limiter rows: every call at the target with today's
// refresh interval through the limiter with one class (first come first
// served, as it was before it had classes) and with its classes as built;
// and with no refresh, as built.
func (c ScaleConfig) runCalls() []CallRow {
	today := c.demand(&c.Guard)
	none := c.demand(nil)
	return []CallRow{
		c.callRow(fmt.Sprintf("refresh every %s (today), one class: first come first served", human(c.refreshEvery())), today, false),
		c.callRow(fmt.Sprintf("refresh every %s (today), by class (built): resumes and creates, then pauses, then refreshes", human(c.refreshEvery())), today, true),
		c.callRow("no refresh, by class (built)", none, true),
	}
}

// callsMarkdown renders the provider-call budget: the demand at the target
// against each provider's published limits, the limiter rows, and the
// refresh options.
func (s ScaleReport) callsMarkdown() string {
	c := s.Config
	if len(s.Calls) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	today := c.demand(&c.Guard)
	w("\n### Scale: provider calls at the target\n\n")
	w("At the target (%s running sessions heartbeating, %s pauses, %s resumes and %s creates per %s) every lifecycle call "+
		"the control plane makes, per %s: %s pauses, %s resumes, %s creates and %s guard refreshes (each active session's "+
		"provider timeout is pushed out once per %s of activity, the guard headroom: `lifecycle.Policy.GuardRefreshInterval`; "+
		"refreshes per %s = active sessions × %s / headroom): %s calls.\n\n",
		numfmt.Thousands(c.Sessions), numfmt.Thousands(c.DueRate), numfmt.Thousands(c.ResumeRate), numfmt.Thousands(c.CreateRate),
		human(c.SweepInterval), human(c.RateWindow), numfmt.Thousands(int(today[CallPause])), numfmt.Thousands(int(today[CallResume])),
		numfmt.Thousands(int(today[CallCreate])), numfmt.Thousands(int(today[CallRefresh])), human(c.refreshEvery()),
		human(c.RateWindow), human(c.RateWindow), numfmt.Thousands(int(today.Total())))
	w("| provider | lifecycle limit per %s | calls per %s (today) | × limit | without refreshes | × limit | create limit per %s | creates | × limit | source |\n",
		human(c.RateWindow), human(c.RateWindow), human(c.RateWindow))
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, l := range c.Limits {
		scale := c.RateWindow.Seconds() / l.Window.Seconds()
		life, creates := float64(l.Lifecycle)*scale, float64(l.Creates)*scale
		on, off := today.Total(), c.demand(nil).Total()
		if !l.CreatesInLifecycle {
			on -= today[CallCreate]
			off -= today[CallCreate]
		}
		w("| %s | %s | %s | %.2f | %s | %.2f | %s | %s | %.1f | %s |\n", l.Name, numfmt.Thousands(int(life)),
			numfmt.Thousands(int(on)), ratio(on, life), numfmt.Thousands(int(off)), ratio(off, life),
			numfmt.Thousands(int(creates)), numfmt.Thousands(int(today[CallCreate])), ratio(today[CallCreate], creates), l.Source)
	}
	w("\nNeither published limit carries the target: E2B's 20,000 per 30 s is below the pauses, resumes and creates alone, "+
		"and both create limits are far below %s creates per %s (E2B's Enterprise limits are \"custom\"). Vercel Sandbox "+
		"publishes no call limit; its vCPU allocation rate (Enterprise 400 per minute) is drawn by every create and resume "+
		"(a resume boots a new session): %s vCPUs per minute at 2 vCPUs a sandbox, a limit of another kind, far below the target.\n\n",
		numfmt.Thousands(c.CreateRate), human(c.SweepInterval),
		numfmt.Thousands(int(2*(today[CallResume]+today[CallCreate])*time.Minute.Seconds()/c.RateWindow.Seconds())))

	w("**The fleet's one budget.** Every call of every process goes through the fleet's provider governor (sweep, "+
		"timers, resumes, creates and refreshes alike), one bucket per provider in the table that holds calls to %s per %s, "+
		"paced evenly (burst %d), and serves them by class: resumes and creates (user) first, then pauses (background), "+
		"then refreshes, each class held to its share of the bucket's depth. The rows drive that bucket's arithmetic "+
		"itself (`governor.Bucket`, what `governor.Wrap`'s leases are), one call a lease, the waiting calls served as a "+
		"governor's queue serves them, on the simulated clock. One interval (%s) of the "+
		"target's calls, drawn as Poisson processes (seed %d), then drained; a call's delay is its grant − its request; "+
		"calls still waiting %s after the interval began are counted unserved.\n\n",
		numfmt.Thousands(c.RateLimit), human(c.RateWindow), c.Burst, human(c.SweepInterval), c.Seed, human(c.LimiterDrain))
	w("| row | calls per %s | × limit | kind | calls | delay p50 (s) | delay p99 (s) | delay max (s) | unserved |\n", human(c.RateWindow))
	w("|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Calls {
		for k := range callKinds {
			if r.Calls[k] == 0 {
				continue
			}
			w("| %s | %s | %.2f | %s | %s | %.2f | %.2f | %.2f | %s |\n", r.Name, numfmt.Thousands(int(r.Demand.Total())),
				ratio(r.Demand.Total(), float64(r.Limit)), k, numfmt.Thousands(r.Calls[k]),
				r.DelayP50[k].Seconds(), r.DelayP99[k].Seconds(), r.DelayMax[k].Seconds(), numfmt.Thousands(r.Unserved[k]))
		}
	}
	w("\nOver the limit, a first-come limiter delays every kind alike and the delay grows by the excess for as long as the " +
		"load lasts (here one interval; at a steady target it has no bound). Serving by class keeps the users' calls " +
		"within a token or two while pauses and refreshes take the excess.\n\n")
	bound, _ := c.Guard.GuardBound(c.Guard.DefaultIdleTimeout)
	w("**The guard's headroom** (`lifecycle.Policy.GuardHeadroom`, `SANDMAN_GUARD_HEADROOM`) sets the refreshes: the "+
		"provider timeout is set to the pause deadline + grace %s + headroom, so an active session costs one refresh per "+
		"headroom of activity, and while the control plane is down a sandbox pauses itself at most grace + headroom + the "+
		"%s coalescing window past its idle timeout (the guard's bound). Create and resume set the guard with the headroom "+
		"too. A refresh comes due while the provider's timeout is still about the idle timeout + grace ahead (%s), and one "+
		"that fails or waits past its call's deadline is asked again by the next written heartbeat, so a refresh may wait "+
		"that long before the provider pauses an active user. The timeout never exceeds the plan's %s cap "+
		"(`SANDMAN_MAX_PROVIDER_TIMEOUT`): where idle timeout + %s + grace + headroom does not fit, the cap eats the headroom "+
		"(more refreshes, a smaller bound). Each row below is the policy with that headroom, at a %s idle timeout; with "+
		"this run's, %s, the bound is %s (docs/CAPACITY.md \"Provider calls\" gives the choice of the default).\n\n",
		human(c.Guard.ProviderGrace), human(c.Guard.ActivityGranularity),
		human(c.Guard.DefaultIdleTimeout+c.Guard.ProviderGrace), human(c.Guard.MaxProviderTimeout), human(c.Guard.ActivityGranularity),
		human(c.Guard.DefaultIdleTimeout), human(c.Guard.GuardHeadroom), human(bound))
	w("| guard headroom | refresh every | refreshes per %s | all calls per %s | limit needed (80 %%) | × E2B's 20,000 | guard bound past the idle timeout |\n",
		human(c.RateWindow), human(c.RateWindow))
	w("|---|---|---:|---:|---:|---:|---|\n")
	for _, o := range c.refreshOptions() {
		head, every, bound := human(o.Headroom), human(o.Every), human(o.Bound)
		if o.Default {
			head += " (today)"
		}
		if o.Every < o.Headroom {
			every += fmt.Sprintf(" (the %s cap)", human(c.Guard.MaxProviderTimeout))
		}
		if !o.Holds {
			bound = "none: the provider may pause before the idle timeout"
		}
		if o.Headroom == 0 {
			head, every, bound = "none", "never", "the longest run the plan allows (E2B: 1 h Hobby, 24 h Pro), set at create and resume so that no active user is paused"
		}
		w("| %s | %s | %s | %s | %s | %.1f | %s |\n", head, every, numfmt.Thousands(int(o.PerWindow)), numfmt.Thousands(int(o.Total)),
			numfmt.Thousands(int(o.Needed)), o.Needed/float64(c.RateLimit), bound)
	}
	return b.String()
}
