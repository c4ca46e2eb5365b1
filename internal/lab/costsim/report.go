package costsim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// Report is the outcome of a replay: the trace's shape and one Result per
// scenario, in Config.Scenarios order.
type Report struct {
	// Config is the configuration that produced the report.
	Config Config
	// Trace describes the replayed trace; Trace.ActiveMinutes is the floor.
	Trace TraceStats
	// NeverPauseMinutes is what never pausing bills, the baseline of
	// Result.SavingsPercent.
	NeverPauseMinutes float64
	// Results holds one entry per scenario.
	Results []Result
	// Frontier holds one replay per Config.AwayFrontier entry, in order.
	Frontier []FrontierPoint
	// Pools holds one row per Config.Pools entry and provider, in that
	// order.
	Pools []PoolResult
	// Scale is the scale simulation (Run only; Replay leaves it empty).
	Scale ScaleReport
	// HeldOut is the resume-on-return target on Config.HeldOutSeeds, and
	// Sensitivity how it fares on the first five when one assumption
	// changes (Run only).
	HeldOut     []HeldOutRow
	Sensitivity []SensitivityRow
}

// FrontierPoint is the timers-and-presence row (away_prob 0.5, no faults)
// replayed with one away timeout.
type FrontierPoint struct {
	AwayTimeout time.Duration
	// GapsAwayToIdle counts the trace's gaps longer than AwayTimeout but not
	// the idle timeout: where presence adds a pause and a resume.
	GapsAwayToIdle int
	Result         Result
}

// TraceStats describes a trace. Durations are time.Duration; percentiles
// are nearest-rank.
type TraceStats struct {
	Sessions   int
	Bursts     int
	Heartbeats int
	// Gaps is the number of idle gaps between bursts (the leave after the
	// last burst is not a gap).
	Gaps int
	// GapsOverIdleTimeout counts gaps longer than the idle timeout: the ones
	// a pausing policy can save on.
	GapsOverIdleTimeout int
	// GapsAwayToIdle counts gaps longer than the away timeout but not the
	// idle timeout: the ones where presence turns no pause into a pause and
	// a resume when the client is away.
	GapsAwayToIdle int
	// ActiveMinutes is the sum of burst lengths in minutes: the floor, the
	// least any policy can bill.
	ActiveMinutes float64
	// BurstP50..GapP99 are the percentiles of burst and gap lengths.
	BurstP50, BurstP90, BurstP99 time.Duration
	GapP50, GapP90, GapP99       time.Duration
	// LeadP10, LeadP50 and LeadP90 are percentiles of the return leads
	// (SessionTrace.Lead) over every gap; zero for a trace without leads.
	LeadP10, LeadP50, LeadP90 time.Duration
	// SessionP50 and SessionP90 are percentiles of a session's length, first
	// to last activity.
	SessionP50, SessionP90 time.Duration
	// LastActivity is the offset from the epoch of the trace's last heartbeat.
	LastActivity time.Duration
	// LastStart is the offset from the epoch of the trace's last session
	// start (a session's first request).
	LastStart time.Duration
}

// Result is what one scenario bills and what it costs the users.
type Result struct {
	// Scenario is the row's policy and faults.
	Scenario Scenario
	// BilledMinutes is the sum, in minutes, of the time sandboxes ran.
	// Paused time is not billed for compute.
	BilledMinutes float64
	// RatioToFloor is BilledMinutes over Report.Trace.ActiveMinutes.
	RatioToFloor float64
	// SavingsPercent is 100 * (never-pause - BilledMinutes) / never-pause.
	SavingsPercent float64
	// CostUSD is BilledMinutes priced at Config.PricePerVCPUSecond for
	// Config.VCPUs (an assumption, US dollars).
	CostUSD float64
	// Resumes counts user requests that found the sandbox paused and waited
	// for a resume; UserWait is Resumes * Config.ResumeWait.
	Resumes  int
	UserWait time.Duration
	// Pauses counts pauses, by the sweep (SweepPauses), by the provider's
	// own timeout (ProviderPauses) or by a deadline timer (TimerPauses).
	// Never pause has none.
	Pauses, SweepPauses, ProviderPauses int
	// EarlyPauses counts pauses that came before the idle timeout had run
	// from the user's real last activity (negative overshoot);
	// EarlyProviderPauses those of them made by the provider's timeout.
	// Outside an outage Sandman's rules allow no early pause: the recorded
	// idle deadline counts the ActivityGranularity coalescing window
	// (lifecycle.Session.MarkActivity), so it is never before the real one,
	// and the provider timeout stays at least ProviderGrace past it. A
	// pause at an away deadline is early only if it comes before that
	// deadline.
	EarlyPauses, EarlyProviderPauses int
	// Overshoot of a pause is pause time - (real last activity + idle
	// timeout): how long the sandbox ran past the idle timeout. Negative
	// when it paused early. P50 and P99 are nearest-rank over all pauses.
	OvershootP50, OvershootP99, OvershootMin, OvershootMax time.Duration
	// SweepsRun and SweepsMissed count sweep ticks that ran and that did not
	// (a failure draw or the control plane down).
	SweepsRun, SweepsMissed int
	// Heartbeats counts user requests delivered; HeartbeatWrites those that
	// were written (not coalesced, not a create or resume).
	Heartbeats, HeartbeatWrites int
	// ProviderRefreshes counts provider set-timeout calls made by heartbeats.
	ProviderRefreshes int
	// RefusedRequests counts user requests that failed because the control
	// plane was down; BlockedRequests those of them that found no running
	// sandbox, so the user could not work until it came back.
	RefusedRequests, BlockedRequests int
	// Interrupted counts pauses that came while the user was in the middle
	// of a burst of activity. Only an outage causes them: no heartbeat gets
	// through to push the provider timeout out.
	Interrupted int
	// RunningAtEnd counts sandboxes still running when the replay stopped
	// (Config.Tail after the last activity); they are billed up to then.
	RunningAtEnd int
	// TimersArmed counts deadline timers sent (SandmanTimers): by sweep
	// ticks, by writes, by disconnects and by re-arms. TimerPauses counts
	// the pauses they made; TimersIdle the fired timers that found nothing
	// due (duplicates, moved deadlines), TimerRearms those of them that
	// armed again, and TimersLost the timers that fired while the control
	// plane was down.
	TimersArmed, TimerPauses, TimersIdle, TimerRearms, TimersLost int
	// AwayDeadlines counts away deadlines set (Scenario.Presence: a client
	// that left at the end of a burst); AwayPauses the pauses at one
	// (reason "away").
	AwayDeadlines, AwayPauses int
	// Returns counts user returns: the first request after each idle gap,
	// and any later request that found the sandbox paused (after an
	// outage). ReturnResumes counts resumes started on return
	// (Scenario.ResumeOnReturn), before the user's request.
	Returns, ReturnResumes int
	// PreResumes counts pre-resumes (Scenario.Learned); PreResumeHits the
	// returns that met a pre-resumed sandbox, PreResumeFalse the
	// pre-resumed sandboxes that paused again before their user came back,
	// PreResumeEarly the returns that came before their pre-resume.
	PreResumes, PreResumeHits, PreResumeFalse, PreResumeEarly int
	// IdleBy is the idle-running time by cause (idlecause.go).
	IdleBy map[IdleCause]time.Duration
	// Accounts holds the figures of each account (SessionTrace.Account;
	// "-" for sessions without one).
	Accounts map[string]*AccountResult
	// ResumeLeads holds, for each return that met a resume, how long before
	// the user's request the resume started: 0 when the request found the
	// sandbox paused, the return lead when it was resumed on return. The
	// user waits max(0, resume-to-ready - lead) (Result.Waited).
	ResumeLeads []time.Duration
}

// Waited returns what the users of res waited on provider p: the sum over
// returns of max(0, p.ResumeToReady() - lead), the nearest-rank p95 of that
// wait per return (returns that met no resume waited 0), and how many
// returns waited at all.
func (res Result) Waited(p ProviderProfile) (sum, p95 time.Duration, waited int) {
	w := p.ResumeToReady()
	waits := make([]time.Duration, 0, max(res.Returns, len(res.ResumeLeads)))
	for _, lead := range res.ResumeLeads {
		d := max(w-lead, 0)
		if d > 0 {
			waited++
		}
		sum += d
		waits = append(waits, d)
	}
	for len(waits) < res.Returns {
		waits = append(waits, 0)
	}
	slices.Sort(waits)
	return sum, percentile(waits, 0.95), waited
}

// stats describes tr; gaps longer than idle count as pausable, those
// between away and idle as pausable only by presence.
func stats(tr Trace, idle, away time.Duration) TraceStats {
	st := TraceStats{Sessions: len(tr.Sessions)}
	var bursts, gaps, spans, leads []time.Duration
	var active time.Duration
	for _, s := range tr.Sessions {
		st.Heartbeats += len(s.Heartbeats)
		for j, b := range s.Bursts {
			bursts = append(bursts, b.End-b.Start)
			active += b.End - b.Start
			if j > 0 {
				g := b.Start - s.Bursts[j-1].End
				gaps = append(gaps, g)
				if g > idle {
					st.GapsOverIdleTimeout++
				} else if away > 0 && g > away {
					st.GapsAwayToIdle++
				}
			}
		}
		leads = append(leads, s.Lead...)
		first, last := s.Heartbeats[0], s.Heartbeats[len(s.Heartbeats)-1]
		spans = append(spans, last-first)
		st.LastActivity = max(st.LastActivity, last)
		st.LastStart = max(st.LastStart, first)
	}
	slices.Sort(bursts)
	slices.Sort(gaps)
	slices.Sort(spans)
	slices.Sort(leads)
	st.LeadP10, st.LeadP50, st.LeadP90 = percentile(leads, 0.1), percentile(leads, 0.5), percentile(leads, 0.9)
	st.Bursts, st.Gaps, st.ActiveMinutes = len(bursts), len(gaps), active.Minutes()
	st.BurstP50, st.BurstP90, st.BurstP99 = percentile(bursts, 0.5), percentile(bursts, 0.9), percentile(bursts, 0.99)
	st.GapP50, st.GapP90, st.GapP99 = percentile(gaps, 0.5), percentile(gaps, 0.9), percentile(gaps, 0.99)
	st.SessionP50, st.SessionP90 = percentile(spans, 0.5), percentile(spans, 0.9)
	return st
}

// Markdown renders the report as a Markdown section (level-2 heading): the
// results table, an operations table, and the method with every parameter
// and the seed, so the figures can be reproduced.
func (r Report) Markdown() string {
	var b strings.Builder
	c, t, st := r.Config, r.Config.Trace, r.Trace
	pol := c.Lifecycle
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("## Cost replay: what pausing idle sandboxes saves\n\n")
	w("%s sessions starting over %d simulated days (seed %d, %s heartbeats), replayed on a simulated clock "+
		"under each policy. The floor is the time users were actually active (the sum of their bursts), the least "+
		"any policy can bill. Prices assume %d vCPUs at $%s per vCPU-second (an assumption; memory not priced).\n\n",
		numfmt.Thousands(st.Sessions), c.Days, c.Seed, numfmt.Thousands(st.Heartbeats), c.VCPUs, strconv.FormatFloat(c.PricePerVCPUSecond, 'f', -1, 64))

	w("| policy | billed sandbox-min | × floor | saved vs never pause | cost (USD) | resumes | pauses | early pauses | overshoot p50 (s) | overshoot p99 (s) | overshoot max (s) | sweeps run / missed |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	floorCost := st.ActiveMinutes * 60 * float64(c.VCPUs) * c.PricePerVCPUSecond
	w("| floor (active time) | %s | 1.00 | %s | %s | — | — | — | — | — | — | — |\n",
		numfmt.Thousands(int(st.ActiveMinutes+0.5)), pct(100*ratio(r.NeverPauseMinutes-st.ActiveMinutes, r.NeverPauseMinutes)), usd(floorCost))
	for _, res := range r.Results {
		if res.Scenario.Policy == NeverPause {
			w("| %s | %s | %.2f | %s | %s | — | — | — | — | — | — | — |\n", res.Scenario.Name,
				numfmt.Thousands(int(res.BilledMinutes+0.5)), res.RatioToFloor, pct(res.SavingsPercent), usd(res.CostUSD))
			continue
		}
		w("| %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", res.Scenario.Name,
			numfmt.Thousands(int(res.BilledMinutes+0.5)), res.RatioToFloor, pct(res.SavingsPercent), usd(res.CostUSD),
			numfmt.Thousands(res.Resumes), numfmt.Thousands(res.Pauses), numfmt.Thousands(res.EarlyPauses),
			secs(res.OvershootP50), secs(res.OvershootP99), secs(res.OvershootMax),
			numfmt.Thousands(res.SweepsRun), numfmt.Thousands(res.SweepsMissed))
	}

	w("\n### Operations\n\n")
	w("| policy | heartbeats | heartbeat writes | provider timeout refreshes | pauses by sweep | pauses by provider timeout | of which early | earliest pause (s) | requests refused (outage) | of which blocked | pauses under an active user | resumes × resume wait (s) | running at end |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		if res.Scenario.Policy == NeverPause {
			continue
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", res.Scenario.Name,
			numfmt.Thousands(res.Heartbeats), numfmt.Thousands(res.HeartbeatWrites), numfmt.Thousands(res.ProviderRefreshes),
			numfmt.Thousands(res.SweepPauses), numfmt.Thousands(res.ProviderPauses), numfmt.Thousands(res.EarlyProviderPauses), secs(res.OvershootMin),
			numfmt.Thousands(res.RefusedRequests), numfmt.Thousands(res.BlockedRequests), numfmt.Thousands(res.Interrupted),
			secs(res.UserWait), numfmt.Thousands(res.RunningAtEnd))
	}
	r.timersMarkdown(w)
	r.waitsMarkdown(w)
	r.targetsMarkdown(w)
	r.frontierMarkdown(w)
	r.heldOutMarkdown(w)
	r.poolsMarkdown(w)

	w("\n### Method\n\n")
	w("- **Trace** (`internal/lab/costsim`, seed %d; each session draws from its own PCG stream seeded by (seed, index)). "+
		"Session starts are spread over %d days by a diurnal rate: a raised cosine from %g× at 03:00 UTC to 1× at 15:00 UTC, "+
		"times %g on Saturday and Sunday. A session is a run of activity bursts, log-normal with median %s and σ %g "+
		"(clamped to 1 s..%s), separated by idle gaps from a mixture: %.0f%% log-normal with median %s and σ %g "+
		"(seconds to minutes), %.0f%% Pareto with x_m %s and α %g (tens of minutes to hours; heavy-tailed), all gaps clamped to 1 s..%s. "+
		"After each burst the user leaves for good with probability %g (geometric, mean %.1f bursts). While active the client "+
		"sends a heartbeat every %s ± %s (uniform), plus one at the burst's end. Drawn times have 1 ms resolution.\n",
		c.Seed, c.Days, t.DiurnalTrough, t.WeekendFactor, human(t.BurstMedian), t.BurstSigma, human(t.BurstMax),
		100*t.ShortGapShare, human(t.ShortGapMedian), t.ShortGapSigma, 100*(1-t.ShortGapShare), human(t.LongGapMin),
		t.LongGapAlpha, human(t.GapMax), t.LeaveProbability, 1/t.LeaveProbability,
		human(t.HeartbeatInterval), human(t.HeartbeatJitter))
	w("- **This trace**: %s bursts (p50 %s, p90 %s, p99 %s), %s gaps (p50 %s, p90 %s, p99 %s; %s longer than the %s idle timeout), "+
		"session length first to last activity p50 %s, p90 %s; last activity %s after the epoch.\n",
		numfmt.Thousands(st.Bursts), human(st.BurstP50), human(st.BurstP90), human(st.BurstP99),
		numfmt.Thousands(st.Gaps), human(st.GapP50), human(st.GapP90), human(st.GapP99), numfmt.Thousands(st.GapsOverIdleTimeout),
		human(pol.DefaultIdleTimeout), human(st.SessionP50), human(st.SessionP90), human(st.LastActivity))
	w("- **Replay**: event-driven on a simulated clock (no real time): one priority queue of user requests, sweep ticks "+
		"(every %s, at epoch + k·%s), provider timeouts and deadline timers, exact to the nanosecond. At the same instant a "+
		"user request goes first, then a provider timeout, then a timer, then the sweep. Pauses and resumes take no simulated time; a resume's wait is "+
		"reported as %s per resume (E2B's published figure) and the provider's paused webhook reaches the table at once. "+
		"The replay ends when every sandbox is paused or killed, or %s after the last activity.\n",
		human(c.SweepInterval), human(c.SweepInterval), human(c.ResumeWait), human(c.Tail))
	headroom := pol.GuardHeadroom
	every := pol.GuardRefreshInterval(pol.DefaultIdleTimeout)
	bound, holds := pol.GuardBound(pol.DefaultIdleTimeout)
	w("- **Policies**: *never pause* runs each sandbox from the session's first activity to its last and kills it there "+
		"(a perfect kill, so its bill is a lower bound of never pausing). *cron sweep* (the seeds' design) writes every "+
		"heartbeat and pauses a sandbox when a sweep sees last activity + %s passed; no provider-side guard. *sandman* "+
		"runs the real rules of `internal/lifecycle` (`Session.RecordActivity` with %s coalescing, `Session.Due`/`PauseDeadline`, "+
		"`Policy.ProviderTimeout` and `Policy.NeedsProviderRefresh`): at create and resume the provider timeout is set to the "+
		"idle deadline + %s grace + %s headroom (`Policy.GuardHeadroom`), and a written heartbeat pushes it out again when the "+
		"provider would otherwise pause before the pause deadline + grace, at most once per %s of running time; at it the "+
		"provider pauses the sandbox itself. A user request that finds the sandbox paused resumes it (a resume waited for). "+
		"Missed sweeps are independent draws per tick; an outage stops sweeps and fails every request (create, heartbeat, resume) "+
		"while the provider keeps running.\n",
		human(pol.DefaultIdleTimeout), human(pol.ActivityGranularity), human(pol.ProviderGrace), human(headroom), human(every))
	w("- **Measures**: billed = time running (paused time is not billed for compute; storage of paused snapshots is not priced). " +
		"Overshoot of a pause = pause time − (the user's real last request + idle timeout); negative means the sandbox paused " +
		"before the idle timeout had run (an early pause). Percentiles are nearest-rank over all pauses.\n")
	w("- **Guard bounds** (Sandman): the recorded idle deadline is the last written activity + the idle timeout + the %s "+
		"coalescing window, so it is never before the user's real one (a coalesced heartbeat comes less than the window after "+
		"the written one) and at most the window after it. After every written heartbeat the provider timeout lies between %s "+
		"and %s past the recorded idle deadline. So while the control plane is up nothing pauses a sandbox before its idle "+
		"timeout. Whatever the sweep does (missed ticks, an outage), no sandbox runs more than %s (grace + headroom + window, `Policy.GuardBound`) "+
		"past its idle timeout. During an outage heartbeats are refused and do not move the deadline, so the provider also pauses "+
		"users who are still working (pauses under an active user) and they stay blocked until the control plane is back.\n",
		human(pol.ActivityGranularity), human(pol.ProviderGrace), human(pol.ProviderGrace+every),
		human(bound))
	if !holds {
		w("  These bounds do not hold here: the idle timeout + window + grace exceeds the provider's %s maximum timeout, "+
			"so the provider can pause a sandbox before its idle timeout (see `Policy.NeedsProviderRefresh`).\n", human(pol.MaxProviderTimeout))
	} else if every < headroom {
		w("  The provider's %s maximum timeout cuts the headroom to %s here (`Policy.GuardRefreshInterval`).\n",
			human(pol.MaxProviderTimeout), human(every))
	}
	w("- **Timers** (*+ timers*, modelled on docs/DESIGN.md \"Precise pausing\"; in the real code `lifecycle.Timers` with `internal/timer/localtimer` or `internal/timer/sqstimer`): each sweep tick "+
		"that runs arms a timer for every running session whose deadline falls before the next tick + %s margin; a write that "+
		"sets a deadline before the next tick + margin (a create, a resume, a written heartbeat) arms one at once, and so does "+
		"every disconnect. A timer's delay is the time to the deadline rounded up to a whole second (SQS DelaySeconds) and "+
		"its pause lands %s later (assumed delivery and pauser start-up, `-timer-lateness`), so within %s of the deadline it "+
		"was armed for. A fired timer re-reads the session and pauses it only if it is still due (reason idle, or away), "+
		"re-arming when the deadline moved within the horizon; duplicates find nothing to do. The pauser has no rate limit "+
		"here (see the scale simulation for one). While the control plane is down a firing timer is lost (assumed to end in "+
		"the dead-letter queue); the sweep and the provider timeout stay the backstops, unchanged.\n",
		human(c.TimerMargin), human(c.TimerLateness), human(time.Second+c.TimerLateness))
	w("- **Presence** (*+ presence*, modelled on docs/DESIGN.md \"Client channel\"; in the real code `lifecycle.Service.SetPresence` fed by `internal/channel`): at the start of each idle "+
		"gap (the burst's last heartbeat) the client is gone or hidden with probability away_prob, drawn once per gap from a "+
		"stream of its own (seed, 2^62 | index), independent of the gap's length, so the away gaps at 0.5 are among those at 1. "+
		"%s Its away deadline is then that moment + %s (away_timeout) and it pauses at the earlier of that and its idle "+
		"deadline, reason away; the next burst's first request clears it and, if the sandbox was paused, resumes it (a resume "+
		"waited for). Presence never keeps a session running. During an outage presence changes are lost. Overshoot is "+
		"measured against the away deadline for a pause while the client is away.\n",
		map[bool]string{true: "The user who leaves for good after the last burst closes the page (`-leave-closes-page`).",
			false: "The user who leaves for good is not taken to close the page (`-leave-closes-page=false`)."}[c.LeaveClosesPage],
		human(c.AwayTimeout))
	var outages []Outage
	for _, res := range r.Results {
		if o := res.Scenario.Outage; o.Duration > 0 && !slices.Contains(outages, o) {
			outages = append(outages, o)
			w("- **Outage**: the control plane is down %s from %s (offset %s from the epoch) in the scenarios that name it.\n",
				human(o.Duration), c.Epoch.Add(o.Start).Format("Mon 15:04 MST"), human(o.Start))
		}
	}
	b.WriteString(r.Scale.Markdown())
	r.otherCallsMarkdown(w)
	return b.String()
}

func pct(p float64) string { return fmt.Sprintf("%.1f %%", p) }

func usd(v float64) string { return "$" + fmt.Sprintf("%.2f", v) }

// secs renders d in whole seconds, rounded.
func secs(d time.Duration) string { return numfmt.Thousands(int(d.Round(time.Second) / time.Second)) }

// human renders d compactly: "36 h", "3 d 4 h", "2 h 7 min", "8 min", "1.5 s".
func human(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d h", d/time.Hour)
	case d >= 48*time.Hour:
		h := d.Round(time.Hour)
		return fmt.Sprintf("%d d %d h", h/(24*time.Hour), (h%(24*time.Hour))/time.Hour)
	case d >= time.Hour:
		m := d.Round(time.Minute)
		return fmt.Sprintf("%d h %d min", m/time.Hour, (m%time.Hour)/time.Minute)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	default:
		return fmt.Sprintf("%g s", d.Round(100*time.Millisecond).Seconds())
	}
}

// timersMarkdown renders the timers and presence operations of the rows
// that have either.
func (r Report) timersMarkdown(w func(string, ...any)) {
	head := false
	for _, res := range r.Results {
		if !res.Scenario.Policy.Timers() && !res.Scenario.Presence {
			continue
		}
		if !head {
			w("\n### Timers and presence\n\n")
			w("| policy | timers armed | pauses by timer | fired, nothing due | re-armed | lost (outage) | away deadlines set | pauses at an away deadline | assumptions |\n")
			w("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
			head = true
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", res.Scenario.Name,
			numfmt.Thousands(res.TimersArmed), numfmt.Thousands(res.TimerPauses), numfmt.Thousands(res.TimersIdle), numfmt.Thousands(res.TimerRearms),
			numfmt.Thousands(res.TimersLost), numfmt.Thousands(res.AwayDeadlines), numfmt.Thousands(res.AwayPauses), r.assumptions(res.Scenario))
	}
}

// assumptions lists the modelled parameters a timers or presence row rests
// on, for the cell next to its figures.
func (r Report) assumptions(sc Scenario) string {
	c := r.Config
	var a []string
	if sc.Policy.Timers() {
		a = append(a, fmt.Sprintf("timers armed to next tick + %s, land ≤ 1 s + %s late", human(c.TimerMargin), human(c.TimerLateness)))
	}
	if sc.Presence {
		leave := "leaving user closes the page"
		if !c.LeaveClosesPage {
			leave = "leaving user keeps the page"
		}
		a = append(a, fmt.Sprintf("away for a gap with p = %g (independent of its length), away_timeout %s, %s",
			sc.AwayProbability, human(c.AwayTimeout), leave))
	}
	if sc.SweepFailureRate > 0 {
		a = append(a, fmt.Sprintf("%g %% of ticks missed (a missed tick arms nothing)", 100*sc.SweepFailureRate))
	}
	if sc.Outage.Duration > 0 {
		a = append(a, "timers firing in the outage are lost")
	}
	return strings.Join(a, "; ")
}

// The targets for the cost replay.
const (
	// targetTimersP99 is the overshoot p99 that timers alone must reach.
	targetTimersP99 = 10 * time.Second
	// targetPresenceRatio is the most a session may bill, times the floor,
	// with timers and presence at targetAwayProbability.
	targetPresenceRatio = 1.25
	// targetAwayProbability is the away_prob of the presence target.
	targetAwayProbability = 0.5
	// targetResumeSpread is how far (a fraction) the resumes with timers and
	// presence may stray from the cron sweep's.
	targetResumeSpread = 0.05
)

// find returns the first result matching ok.
func (r Report) find(ok func(Result) bool) (Result, bool) {
	for _, res := range r.Results {
		if ok(res) {
			return res, true
		}
	}
	return Result{}, false
}

// noFaults reports whether res ran with no missed sweeps and no outage.
func noFaults(res Result) bool {
	return res.Scenario.SweepFailureRate == 0 && res.Scenario.Outage.Duration == 0
}

func met(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// targetsMarkdown renders the cost targets against the figures of this
// run, each with the assumptions it rests on; a target whose rows are not in
// the report is left out.
func (r Report) targetsMarkdown(w func(string, ...any)) {
	c := r.Config
	timers, okT := r.find(func(res Result) bool {
		return res.Scenario.Policy == SandmanTimers && !res.Scenario.Presence && noFaults(res)
	})
	presence, okP := r.find(func(res Result) bool {
		return res.Scenario.Policy == SandmanTimers && res.Scenario.Presence &&
			res.Scenario.AwayProbability == targetAwayProbability && noFaults(res)
	})
	cron, okC := r.find(func(res Result) bool { return res.Scenario.Policy == CronSweep && noFaults(res) })
	today, okO := r.find(func(res Result) bool {
		return res.Scenario.Policy == Sandman && !res.Scenario.Presence && res.Scenario.Outage.Duration > 0
	})
	outT, okOT := r.find(func(res Result) bool {
		return res.Scenario.Policy == SandmanTimers && !res.Scenario.Presence && res.Scenario.Outage.Duration > 0 &&
			res.Scenario.Outage == today.Scenario.Outage
	})
	if _, okR := r.returnTarget(); !okT && !okP && !okR && !(okO && okOT) {
		return
	}
	w("\n### Targets\n\n")
	if okT {
		w("- *%s*: overshoot p99 %s s (target ≤ %s s): %s. Assumes a timer pause lands %s after its delay, rounded up "+
			"to a whole second, runs out, and a %s margin over the %s sweep. %s of its %s pauses come before the user's "+
			"real idle timeout (earliest %s s): the deadline counts the %s coalescing window, since the last *recorded* "+
			"heartbeat lags the real one by up to that much; the window is also the overshoot's floor when the heartbeats "+
			"stop just after a written one.\n",
			timers.Scenario.Name, secs(timers.OvershootP99), secs(targetTimersP99), met(timers.OvershootP99 <= targetTimersP99),
			human(c.TimerLateness), human(c.TimerMargin), human(c.SweepInterval), numfmt.Thousands(timers.EarlyPauses),
			numfmt.Thousands(timers.Pauses), secs(timers.OvershootMin), human(c.Lifecycle.ActivityGranularity))
	}
	if okP {
		w("- *%s*: billed %.2f× the floor (target ≤ %.2f×): %s. Assumes an away timeout of %s, a client gone or hidden "+
			"at the start of a gap with probability %g whatever the gap's length, and %s.\n",
			presence.Scenario.Name, presence.RatioToFloor, targetPresenceRatio, met(presence.RatioToFloor <= targetPresenceRatio),
			human(c.AwayTimeout), presence.Scenario.AwayProbability,
			map[bool]string{true: "the user who leaves for good closing the page", false: "the user who leaves for good not closing the page"}[c.LeaveClosesPage])
		if okC {
			spread := ratio(float64(presence.Resumes-cron.Resumes), float64(cron.Resumes))
			w("- *%s*: %s resumes waited for against the cron sweep's %s (%+.1f %%; target within ±%.0f %%): %s. ",
				presence.Scenario.Name, numfmt.Thousands(presence.Resumes), numfmt.Thousands(cron.Resumes), 100*spread,
				100*targetResumeSpread, met(math.Abs(spread) <= targetResumeSpread))
			w("An away client's gap that outlasts the away timeout ends in a pause and a resume; %s of this trace's %s gaps "+
				"last between the away timeout (%s) and the idle timeout (%s), so at away_prob %g about %s of them become resumes "+
				"that the cron sweep (or timers without presence) never makes. Presence trades those waits (%s each, "+
				"assumed) for the billed minutes above; a faithful model cannot have both unless absence is told apart from a "+
				"short look away (a longer away timeout, or away only for a closed page).\n",
				numfmt.Thousands(r.Trace.GapsAwayToIdle), numfmt.Thousands(r.Trace.Gaps), human(c.AwayTimeout),
				human(c.Lifecycle.DefaultIdleTimeout), presence.Scenario.AwayProbability,
				numfmt.Thousands(int(presence.Scenario.AwayProbability*float64(r.Trace.GapsAwayToIdle)+0.5)), human(c.ResumeWait))
		}
	}
	if rt, ok := r.returnTarget(); ok {
		var parts []string
		for i, p := range c.Providers {
			a, _, _ := rt.row.Waited(p)
			b, _, _ := rt.cron.Waited(p)
			parts = append(parts, fmt.Sprintf("%s %s s against %s s %s", p.Name, numfmt.Thousands(int(a.Seconds()+0.5)),
				numfmt.Thousands(int(b.Seconds()+0.5)), mark(rt.waitOK[i])))
		}
		w("- *%s* (target: billed ≤ %.2f× the floor and users wait no more seconds than with the cron sweep on the same "+
			"trace, on every provider): billed %.2f× %s; seconds waited: %s: %s. Assumes the lead model above (median %s) "+
			"and the provider profiles above.\n",
			rt.row.Scenario.Name, targetPresenceRatio, rt.row.RatioToFloor, mark(rt.billedOK), strings.Join(parts, "; "),
			met(rt.met()), fmt.Sprintf("%g s", c.Trace.ReturnLeadMedian.Seconds()))
	}
	if okO && okOT {
		ok := outT.BilledMinutes <= today.BilledMinutes && outT.OvershootMax <= today.OvershootMax &&
			outT.BlockedRequests <= today.BlockedRequests && outT.Interrupted <= today.Interrupted
		w("- *%s* against *%s* (target: no worse than today in billed time, overshoot max, requests blocked and pauses "+
			"under an active user): billed %s against %s sandbox-min, overshoot max %s against %s s, %s against %s requests "+
			"blocked, %s against %s pauses under an active user: %s. Resumes waited for: %s against %s (%+.1f %%), the "+
			"price of pausing on the deadline that timers pay in every row. Assumes timers that fire during the outage are "+
			"lost; the provider timeout bounds the overshoot as before.\n",
			outT.Scenario.Name, today.Scenario.Name, numfmt.Thousands(int(outT.BilledMinutes+0.5)), numfmt.Thousands(int(today.BilledMinutes+0.5)),
			secs(outT.OvershootMax), secs(today.OvershootMax), numfmt.Thousands(outT.BlockedRequests), numfmt.Thousands(today.BlockedRequests),
			numfmt.Thousands(outT.Interrupted), numfmt.Thousands(today.Interrupted), met(ok), numfmt.Thousands(outT.Resumes), numfmt.Thousands(today.Resumes),
			100*ratio(float64(outT.Resumes-today.Resumes), float64(today.Resumes)))
	}
}

// frontierMarkdown renders the away-timeout trade-off: for each
// Config.AwayFrontier entry, the billed ratio and the resumes against the
// cron sweep's, each checked against its target.
func (r Report) frontierMarkdown(w func(string, ...any)) {
	cron, ok := r.find(func(res Result) bool { return res.Scenario.Policy == CronSweep && noFaults(res) })
	if len(r.Frontier) == 0 || !ok {
		return
	}
	w("\n### Presence trade-off: the away timeout\n\n")
	w("Timers and presence at away_prob %g, no faults, replayed once per away timeout on the same trace. A longer away "+
		"timeout turns fewer short absences into a pause and a resume, and saves less.\n\n", targetAwayProbability)
	w("| away timeout | gaps between it and the idle timeout | billed sandbox-min | × floor (target ≤ %.2f) | resumes waited for | vs cron sweep (target ±%.0f %%) | both targets |\n",
		targetPresenceRatio, 100*targetResumeSpread)
	w("|---:|---:|---:|---:|---:|---:|---|\n")
	both := 0
	for _, p := range r.Frontier {
		res := p.Result
		spread := ratio(float64(res.Resumes-cron.Resumes), float64(cron.Resumes))
		okBilled, okResumes := res.RatioToFloor <= targetPresenceRatio, math.Abs(spread) <= targetResumeSpread
		if okBilled && okResumes {
			both++
		}
		w("| %s | %s | %s | %.2f %s | %s | %+.1f %% %s | %s |\n", human(p.AwayTimeout), numfmt.Thousands(p.GapsAwayToIdle),
			numfmt.Thousands(int(res.BilledMinutes+0.5)), res.RatioToFloor, mark(okBilled), numfmt.Thousands(res.Resumes),
			100*spread, mark(okResumes), map[bool]string{true: "met", false: "not met"}[okBilled && okResumes])
	}
	if both == 0 {
		w("\nNo away timeout in the table meets both targets on this trace: the billed target needs short absences to pause, " +
			"and every such pause is a resume the cron sweep never makes.\n")
	}
}

// mark is a check or a cross for a target cell.
func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// otherCallsMarkdown puts the scale simulation's load next to the other
// provider calls the replay's timers row makes per pause, scaled to the
// scale simulation's pauses.
func (r Report) otherCallsMarkdown(w func(string, ...any)) {
	sc := r.Scale.Config
	timers, ok := r.find(func(res Result) bool {
		return res.Scenario.Policy == SandmanTimers && !res.Scenario.Presence && noFaults(res)
	})
	if len(r.Scale.Results) == 0 || !ok || timers.Pauses == 0 {
		return
	}
	perPause := func(n int) float64 { return float64(n) / float64(timers.Pauses) }
	other := timers.Resumes + timers.ProviderRefreshes + r.Trace.Sessions
	perWindow := perPause(other) * float64(sc.DueRate) * (sc.RateWindow.Seconds() / sc.SweepInterval.Seconds())
	w("\nA cross-check from the replay: per pause, its *%s* row makes %.2f resumes, %.2f provider-timeout "+
		"refreshes and %.2f creates (%s, %s and %s in all). Scaled with the pauses, %s pauses per %s bring %s of "+
		"them per %s: %.1f× the limit on their own, before any pause (the target above counts every running session as "+
		"active, so its refreshes are higher). E2B counts set-timeout (an update) against its lifecycle limit.\n",
		timers.Scenario.Name, perPause(timers.Resumes), perPause(timers.ProviderRefreshes), perPause(r.Trace.Sessions),
		numfmt.Thousands(timers.Resumes), numfmt.Thousands(timers.ProviderRefreshes), numfmt.Thousands(r.Trace.Sessions),
		numfmt.Thousands(sc.DueRate), human(sc.SweepInterval), numfmt.Thousands(int(perWindow+0.5)), human(sc.RateWindow),
		perWindow/float64(sc.RateLimit))
}
