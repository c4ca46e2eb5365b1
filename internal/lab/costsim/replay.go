package costsim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// sweepStream is the PCG stream of the sweep-failure draws; session streams
// are their index, so it never collides with one.
const sweepStream = 1 << 63

// sandboxID is every simulated session's sandbox id: the lifecycle rules only
// ask that there is one.
const sandboxID = "sbx_sim"

// reasonAway is the transition reason of a pause at the away deadline
// (docs/DESIGN.md "Events out"); internal/lifecycle has no constant for it yet.
const reasonAway = "away"

// Run generates cfg's trace, replays every scenario on it, and adds the
// scale simulation of cfg.Scale and the held-out check on
// cfg.HeldOutSeeds. It is Replay(cfg, Generate(cfg)) plus
// RunScale(cfg.Scale) and HeldOut for configurations known to be good, such as
// DefaultConfig: it panics when cfg fails Validate (call Validate first on
// untrusted input) or when the replay breaks an invariant, which is a bug.
func Run(cfg Config) Report {
	tr, err := Generate(cfg)
	if err != nil {
		panic(err)
	}
	r, err := Replay(cfg, tr)
	if err != nil {
		panic(err)
	}
	if r.Scale, err = RunScale(cfg.Scale); err != nil {
		panic(err)
	}
	if r.HeldOut, r.Sensitivity, err = heldOutReport(cfg); err != nil {
		panic(err)
	}
	return r
}

// Replay runs every scenario of cfg over tr on a simulated clock and returns
// the report. The never-pause bill is always computed, for the savings column,
// whether or not a scenario asks for it.
// Errors: cfg fails Validate, tr is empty or not in time order, or (a bug) the
// replay asked the lifecycle table for a transition it forbids.
func Replay(cfg Config, tr Trace) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if err := tr.validate(); err != nil {
		return Report{}, err
	}
	r := Report{Config: cfg, Trace: stats(tr, cfg.Lifecycle.DefaultIdleTimeout, cfg.AwayTimeout)}
	base, err := replay(cfg, tr, Scenario{Name: "never pause", Policy: NeverPause})
	if err != nil {
		return Report{}, err
	}
	r.NeverPauseMinutes = base.BilledMinutes
	for _, sc := range cfg.Scenarios {
		res, err := replay(cfg, tr, sc)
		if err != nil {
			return Report{}, fmt.Errorf("scenario %q: %w", sc.Name, err)
		}
		res.RatioToFloor = ratio(res.BilledMinutes, r.Trace.ActiveMinutes)
		res.SavingsPercent = 100 * ratio(r.NeverPauseMinutes-res.BilledMinutes, r.NeverPauseMinutes)
		r.Results = append(r.Results, res)
	}
	r.Pools = runPools(cfg, tr)
	for _, t := range cfg.AwayFrontier {
		fc := cfg
		fc.AwayTimeout = t
		res, err := replay(fc, tr, Scenario{Name: "away frontier " + human(t), Policy: SandmanTimers,
			Presence: true, AwayProbability: targetAwayProbability})
		if err != nil {
			return Report{}, fmt.Errorf("away frontier %s: %w", t, err)
		}
		res.RatioToFloor = ratio(res.BilledMinutes, r.Trace.ActiveMinutes)
		res.SavingsPercent = 100 * ratio(r.NeverPauseMinutes-res.BilledMinutes, r.NeverPauseMinutes)
		r.Frontier = append(r.Frontier, FrontierPoint{AwayTimeout: t,
			GapsAwayToIdle: stats(tr, cfg.Lifecycle.DefaultIdleTimeout, t).GapsAwayToIdle, Result: res})
	}
	return r, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// eventKind orders events that fall on the same instant: the user's request
// first, then a client becoming visible again, then the provider's timeout,
// then a deadline timer, then the sweep. So a heartbeat landing on a timer
// or a sweep tick wins, as their conditional writes make it do.
type eventKind uint8

const (
	evHeartbeat eventKind = iota
	evReturn
	evPreResume
	evTimeout
	evTimer
	evSweep
)

// event is one entry of the replay's queue. at is an offset from the epoch.
type event struct {
	at   time.Duration
	kind eventKind
	sess int    // session index; unused for sweeps
	gen  uint64 // provider-timeout generation; a stale one is ignored
}

// eventQueue is a min-heap of events by (at, kind, sess): a total order, so
// the replay is deterministic.
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.sess < b.sess
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simSession is one session's replay state: the lifecycle row as the control
// plane would hold it, plus what the provider bills.
type simSession struct {
	index      int
	tr         *SessionTrace
	next       int // index of the next heartbeat to deliver
	burst      int // index of the burst of the last delivered heartbeat
	row        lifecycle.Session
	created    bool
	since      time.Duration // start of the current billed (running) span
	lastActive time.Duration // the user's real last heartbeat, recorded or not
	gen        uint64        // current provider-timeout generation
	// away is the away deadline (offset) while awaySet: the client left at
	// away - Config.AwayTimeout and has not come back (Scenario.Presence).
	away    time.Duration
	awaySet bool
	left    int // index of the last burst whose end was handled, -1 before
	// returnedAt is when a resume on return started for the gap being
	// closed, while returned (Scenario.ResumeOnReturn).
	returnedAt time.Duration
	returned   bool
}

// sim replays one scenario.
type sim struct {
	cfg       Config
	sc        Scenario
	pol       lifecycle.Policy
	gran      time.Duration // heartbeat coalescing granularity
	guard     bool          // provider-side timeout set and refreshed (Sandman, SandmanTimers)
	timers    bool          // deadline timers (SandmanTimers)
	presence  bool          // away deadlines (Scenario.Presence with an away timeout)
	ror       bool          // resume on return (Scenario.ResumeOnReturn)
	end       time.Duration // sweeps stop here (last activity + Tail)
	q         eventQueue
	sessions  []simSession
	sweepRNG  *rand.Rand
	pending   int // sessions with heartbeats still to deliver
	running   int // sandboxes running now
	billed    time.Duration
	overshoot []time.Duration
	learned   learnedState // Scenario.Learned: the histograms (learnedsim.go)
	res       Result
	err       error
}

func replay(cfg Config, tr Trace, sc Scenario) (Result, error) {
	m := &sim{
		cfg:      cfg,
		sc:       sc,
		pol:      cfg.Lifecycle,
		guard:    sc.Policy == Sandman || sc.Policy == SandmanTimers,
		timers:   sc.Policy.Timers(),
		presence: sc.Presence && cfg.AwayTimeout > 0,
		ror:      sc.ResumeOnReturn && sc.Presence && cfg.AwayTimeout > 0,
		sessions: make([]simSession, len(tr.Sessions)),
		sweepRNG: rand.New(rand.NewPCG(cfg.Seed, sweepStream)),
		res:      Result{Scenario: sc},
	}
	if m.guard {
		m.gran = cfg.Lifecycle.ActivityGranularity
	}
	var last time.Duration
	for i := range tr.Sessions {
		s := &tr.Sessions[i]
		m.sessions[i].index, m.sessions[i].tr, m.sessions[i].left = i, s, -1
		m.push(event{at: s.Heartbeats[0], kind: evHeartbeat, sess: i})
		last = max(last, s.Heartbeats[len(s.Heartbeats)-1])
	}
	m.pending = len(tr.Sessions)
	m.end = last + cfg.Tail
	if sc.Policy != NeverPause {
		m.push(event{at: 0, kind: evSweep})
	}
	for m.q.Len() > 0 && m.err == nil {
		e := heap.Pop(&m.q).(event)
		switch e.kind {
		case evHeartbeat:
			m.heartbeat(e.sess, e.at)
		case evReturn:
			m.clientReturns(e.sess, e.at)
		case evPreResume:
			m.preResume(e.sess, e.at)
		case evTimeout:
			m.timeout(e.sess, e.at, e.gen)
		case evTimer:
			m.timer(e.sess, e.at)
		case evSweep:
			m.sweep(e.at)
		}
	}
	if m.err != nil {
		return Result{}, m.err
	}
	for i := range m.sessions {
		if s := &m.sessions[i]; s.row.State == lifecycle.StateRunning {
			m.idle(s, m.end, s.why(), EndOther)
			m.bill(s, m.end-s.since)
			m.res.RunningAtEnd++
		}
	}
	m.finish()
	return m.res, nil
}

func (m *sim) push(e event) { heap.Push(&m.q, e) }

// now is the simulated wall-clock time of offset at.
func (m *sim) now(at time.Duration) time.Time { return m.cfg.Epoch.Add(at) }

// transition applies a lifecycle transition, remembering the first error.
func (m *sim) transition(s *simSession, to lifecycle.State, reason string, at time.Duration) {
	if err := s.row.Transition(to, reason, m.now(at), m.pol); err != nil && m.err == nil {
		m.err = fmt.Errorf("replay at %s: %w", at, err)
	}
}

// heartbeat delivers session i's next request and queues the one after.
func (m *sim) heartbeat(i int, at time.Duration) {
	s := &m.sessions[i]
	s.next++
	final := s.next == len(s.tr.Heartbeats)
	if final {
		m.pending--
	} else {
		m.push(event{at: s.tr.Heartbeats[s.next], kind: evHeartbeat, sess: i})
	}
	s.lastActive = at
	for s.tr.Bursts[s.burst].End < at && s.burst+1 < len(s.tr.Bursts) {
		s.burst++
	}
	m.res.Heartbeats++
	back := s.burst > 0 && at == s.tr.Bursts[s.burst].Start // the first request after a gap
	returned, returnedAt := s.returned, s.returnedAt
	if back {
		s.returned = false
	}

	if m.sc.Policy == NeverPause {
		if !s.created {
			m.create(s, at)
		}
		if final {
			m.transition(s, lifecycle.StateKilled, lifecycle.ReasonRequest, at)
			m.stopBilling(s, at)
		}
		return
	}
	if m.sc.Outage.Down(at) {
		// The API is down: the request fails. If the sandbox is running the
		// user keeps working in it; if it is paused (or was never created)
		// the user is blocked until the control plane is back. The client
		// channel is down too: presence changes are lost.
		m.res.RefusedRequests++
		if s.row.State != lifecycle.StateRunning {
			m.res.BlockedRequests++
		}
		return
	}
	// A client that comes back clears the away deadline.
	s.awaySet = false
	if back && s.created && s.row.State == lifecycle.StateRunning {
		m.idleBack(s, at, returned)
	}
	m.learnReturn(s, at)
	switch {
	case !s.created:
		m.create(s, at)
	case s.row.State == lifecycle.StatePaused:
		// The user meets the whole resume: a return with no lead (also
		// mid-burst, after an outage paused a working user).
		m.userReturns(s, 0, true)
		m.resume(s, at, lifecycle.ReasonRequest)
	default:
		if back {
			// Resumed on return or pre-resumed: the resume had this long
			// already.
			m.userReturns(s, at-returnedAt, returned)
		}
		m.touch(s, at)
	}
	if m.presence && at == s.tr.Bursts[s.burst].End && s.left < s.burst {
		m.leave(s, at)
	}
}

// leave handles the end of the burst of the heartbeat just delivered at at
// (Scenario.Presence): when the client is gone or hidden for the gap that
// follows (its draw is below Scenario.AwayProbability) or the user leaves
// for good and Config.LeaveClosesPage, the away deadline is set to at +
// Config.AwayTimeout and, with timers, the disconnect handler arms a timer
// for the session's deadline at once (docs/DESIGN.md "Precise pausing").
func (m *sim) leave(s *simSession, at time.Duration) {
	s.left = s.burst
	var away bool
	if s.burst == len(s.tr.Bursts)-1 {
		away = m.cfg.LeaveClosesPage
	} else if s.burst < len(s.tr.Away) {
		away = s.tr.Away[s.burst] < m.sc.AwayProbability
	}
	if away && s.burst < len(s.tr.Bursts)-1 {
		// The client is seen again the lead before the next burst's first
		// request (never before the gap starts).
		next := s.tr.Bursts[s.burst+1].Start
		var lead time.Duration
		if s.burst < len(s.tr.Lead) {
			lead = s.tr.Lead[s.burst]
		}
		m.push(event{at: max(next-lead, at), kind: evReturn, sess: s.index})
	}
	if !away || s.row.State != lifecycle.StateRunning {
		return
	}
	s.away, s.awaySet = at+m.cfg.AwayTimeout, true
	m.res.AwayDeadlines++
	if m.timers {
		d, _ := m.deadline(s)
		m.armTimer(s, at, d)
	}
}

// clientReturns is an away client becoming visible again at at (a hello, or
// a heartbeat saying visible): the away deadline is cleared and, with
// Scenario.ResumeOnReturn, a paused session is resumed at once, reason
// return (docs/WAKE.md "Resume on return"). Resumes on return are at most
// one per session per minute in the real code; the trace's away gaps are
// longer than the away timeout, so that bound never bites here. While the
// control plane is down the channel is too and the return is lost.
func (m *sim) clientReturns(i int, at time.Duration) {
	s := &m.sessions[i]
	if m.sc.Outage.Down(at) {
		return
	}
	s.awaySet = false
	if m.ror && s.row.State == lifecycle.StatePaused {
		m.res.ReturnResumes++
		m.resume(s, at, lifecycle.ReasonReturn)
		s.returnedAt, s.returned = at, true
	}
}

// create mirrors lifecycle.Service.Create: activity recorded, the provider
// timeout set by Policy.ProviderTimeout (Sandman only), running.
func (m *sim) create(s *simSession, at time.Duration) {
	now := m.now(at)
	s.created = true
	s.row = lifecycle.Session{
		ID: "ses_sim_" + strconv.Itoa(s.index), SandboxID: sandboxID, State: lifecycle.StateProvisioning,
		IdleTimeout: m.pol.DefaultIdleTimeout, CreatedAt: now, UpdatedAt: now,
	}
	m.startLearning(s)
	s.row.MarkActivity(now, m.gran)
	if m.guard {
		s.row.SandboxExpiresAt = now.Add(m.pol.ProviderTimeout(&s.row, now))
	}
	m.transition(s, lifecycle.StateRunning, lifecycle.ReasonRequest, at)
	m.startBilling(s, at)
	m.wrote(s, at)
}

// resume mirrors lifecycle.Service.Resume on a paused session, for reason:
// the user's request found it paused (lifecycle.ReasonRequest), or its
// client came back (lifecycle.ReasonReturn).
func (m *sim) resume(s *simSession, at time.Duration, reason string) {
	now := m.now(at)
	m.res.Resumes++
	m.transition(s, lifecycle.StateResuming, reason, at)
	var timeout time.Duration
	if m.guard {
		probe := s.row.Clone()
		probe.MarkActivity(now, m.gran)
		probe.RunningSince = now
		timeout = m.pol.ProviderTimeout(probe, now)
	}
	s.row.MarkActivity(now, m.gran)
	if m.guard {
		s.row.SandboxExpiresAt = now.Add(timeout)
	}
	m.transition(s, lifecycle.StateRunning, reason, at)
	m.startBilling(s, at)
	m.wrote(s, at)
}

// touch mirrors lifecycle.Service.Heartbeat on a running session: coalesced
// by the granularity, and the provider timeout pushed out when
// NeedsProviderRefresh says so (Sandman only).
func (m *sim) touch(s *simSession, at time.Duration) {
	now := m.now(at)
	if !s.row.RecordActivity(now, m.gran) {
		return
	}
	s.row.UpdatedAt = now
	m.res.HeartbeatWrites++
	if m.guard && m.pol.NeedsProviderRefresh(&s.row, now) {
		s.row.SandboxExpiresAt = now.Add(m.pol.ProviderTimeout(&s.row, now))
		m.res.ProviderRefreshes++
		m.armTimeout(s)
	}
	m.wrote(s, at)
}

// wrote follows a write at at that set the session's deadline (a create, a
// resume, a written heartbeat): with timers, one is armed at once when the
// deadline falls before the next sweep tick + Config.TimerMargin, the
// horizon the last tick armed for ("a write that sets a deadline
// before the next tick arms its timer at once").
func (m *sim) wrote(s *simSession, at time.Duration) {
	if !m.timers {
		return
	}
	if d, _ := m.deadline(s); d < m.horizon(at) {
		m.armTimer(s, at, d)
	}
}

// deadline returns the offset at which a running session is due and
// whether that is its away deadline: its pause deadline
// (lifecycle.Session.PauseDeadline), or the away deadline when that is set
// and earlier (docs/DESIGN.md "Client channel": presence only brings the pause
// forward, never back).
func (m *sim) deadline(s *simSession) (time.Duration, bool) {
	d := s.row.PauseDeadline().Sub(m.cfg.Epoch)
	if s.awaySet && s.away < d {
		return s.away, true
	}
	return d, false
}

// due reports whether session s is running and due at at, and the reason of
// its pause: lifecycle.ReasonIdle, or reasonAway at the away deadline.
// Without an away deadline it is lifecycle.Session.Due.
func (m *sim) due(s *simSession, at time.Duration) (bool, string) {
	if s.row.State != lifecycle.StateRunning {
		return false, ""
	}
	d, away := m.deadline(s)
	switch {
	case d > at:
		return false, ""
	case away:
		return true, reasonAway
	default:
		return true, lifecycle.ReasonIdle
	}
}

// horizon is the next sweep tick at or after at (ticks fall at epoch +
// k*SweepInterval; one at at itself runs after the requests and timers of
// that instant) plus Config.TimerMargin: a write before that tick arms a
// timer for a deadline before the horizon, as the tick before it did.
func (m *sim) horizon(at time.Duration) time.Duration {
	i := m.cfg.SweepInterval
	return (at+i-1)/i*i + m.cfg.TimerMargin
}

// armTimer sends a timer at at for a deadline: the delay is the time to the
// deadline rounded up to a whole second (SQS DelaySeconds), and the timer's
// pause lands Config.TimerLateness after the delay runs out.
func (m *sim) armTimer(s *simSession, at, deadline time.Duration) {
	delay := max(deadline-at, 0)
	delay = (delay + time.Second - 1).Truncate(time.Second)
	m.res.TimersArmed++
	m.push(event{at: at + delay + m.cfg.TimerLateness, kind: evTimer, sess: s.index})
}

// timer is a fired deadline timer: the pauser re-reads the session and
// pauses it only if it is still due (the sweep's conditional write), and
// re-arms when its deadline moved but still falls before the horizon; later
// deadlines are left to the next tick. A duplicate finds nothing to do. While
// the control plane is down the pauser cannot read the table and the timer
// is lost (taken to end in the dead-letter queue; the sweep and the provider
// timeout are the backstops).
func (m *sim) timer(i int, at time.Duration) {
	s := &m.sessions[i]
	if m.sc.Outage.Down(at) {
		m.res.TimersLost++
		return
	}
	if ok, reason := m.due(s, at); ok {
		m.res.TimerPauses++
		m.pause(s, at, reason)
		return
	}
	m.res.TimersIdle++
	if s.row.State != lifecycle.StateRunning {
		return
	}
	if d, _ := m.deadline(s); d < m.horizon(at) {
		m.res.TimerRearms++
		m.armTimer(s, at, d)
	}
}

// pause is the control plane's conditional pause of a due session at at
// (running → pausing → paused) for reason.
func (m *sim) pause(s *simSession, at time.Duration, reason string) {
	m.transition(s, lifecycle.StatePausing, reason, at)
	m.transition(s, lifecycle.StatePaused, reason, at)
	if reason == reasonAway {
		m.res.AwayPauses++
	}
	m.idlePaused(s, at, false)
	m.paused(s, at)
	m.pausedLearned(s, at)
}

// startBilling marks the sandbox running from at and, under Sandman, arms the
// provider timeout.
func (m *sim) startBilling(s *simSession, at time.Duration) {
	s.since = at
	m.running++
	if m.guard {
		m.armTimeout(s)
	}
}

// stopBilling ends the running span at at and disarms the provider timeout.
func (m *sim) stopBilling(s *simSession, at time.Duration) {
	m.bill(s, at-s.since)
	m.running--
	s.gen++
}

// armTimeout queues the provider's timeout at the row's SandboxExpiresAt; an
// earlier one still queued goes stale.
func (m *sim) armTimeout(s *simSession) {
	s.gen++
	m.push(event{at: s.row.SandboxExpiresAt.Sub(m.cfg.Epoch), kind: evTimeout, sess: s.index, gen: s.gen})
}

// timeout is the provider pausing a running sandbox at its timeout
// (pause-on-timeout). Its webhook is taken to reach the table at once.
func (m *sim) timeout(i int, at time.Duration, gen uint64) {
	s := &m.sessions[i]
	if gen != s.gen || s.row.State != lifecycle.StateRunning {
		return
	}
	m.res.ProviderPauses++
	m.idlePaused(s, at, true)
	m.transition(s, lifecycle.StatePaused, lifecycle.ReasonWebhook, at)
	if m.paused(s, at) < 0 {
		m.res.EarlyProviderPauses++
	}
}

// sweep is one scheduled idle-pause run: unless it fails or the control
// plane is down, every running session that is due (lifecycle.Session.Due,
// or its away deadline passed) is paused (running → pausing → paused,
// reason idle or away), and with timers a timer is armed for every other
// running session due before the next tick + Config.TimerMargin.
func (m *sim) sweep(at time.Duration) {
	failed := m.sweepRNG.Float64() < m.sc.SweepFailureRate
	if failed || m.sc.Outage.Down(at) {
		m.res.SweepsMissed++
	} else {
		m.res.SweepsRun++
		horizon := at + m.cfg.SweepInterval + m.cfg.TimerMargin
		for i := range m.sessions {
			s := &m.sessions[i]
			if ok, reason := m.due(s, at); ok {
				m.res.SweepPauses++
				m.pause(s, at, reason)
				continue
			}
			if m.timers && s.row.State == lifecycle.StateRunning {
				if d, _ := m.deadline(s); d < horizon {
					m.armTimer(s, at, d)
				}
			}
		}
	}
	if next := at + m.cfg.SweepInterval; (m.pending > 0 || m.running > 0) && next <= m.end {
		m.push(event{at: next, kind: evSweep})
	}
}

// paused records a pause at at: billing stops and the overshoot against the
// deadline the user's real behaviour gives (the real last activity + idle
// timeout, or the away deadline when the client is away and that is
// earlier) is sampled and returned.
func (m *sim) paused(s *simSession, at time.Duration) time.Duration {
	m.stopBilling(s, at)
	m.account(s).Pauses++
	target := s.lastActive + s.row.IdleTimeout
	if s.awaySet {
		target = min(target, s.away)
	}
	o := at - target
	m.overshoot = append(m.overshoot, o)
	if b := s.tr.Bursts[s.burst]; b.Start <= at && at < b.End {
		m.res.Interrupted++
	}
	return o
}

// finish turns the accumulators into the result's figures.
func (m *sim) finish() {
	r := &m.res
	r.BilledMinutes = m.billed.Minutes()
	r.CostUSD = m.billed.Seconds() * float64(m.cfg.VCPUs) * m.cfg.PricePerVCPUSecond
	r.UserWait = time.Duration(r.Resumes) * m.cfg.ResumeWait
	r.Pauses = len(m.overshoot)
	if r.Pauses == 0 {
		return
	}
	slices.Sort(m.overshoot)
	for _, o := range m.overshoot {
		if o < 0 {
			r.EarlyPauses++
		}
	}
	r.OvershootP50 = percentile(m.overshoot, 0.50)
	r.OvershootP99 = percentile(m.overshoot, 0.99)
	r.OvershootMin = m.overshoot[0]
	r.OvershootMax = m.overshoot[len(m.overshoot)-1]
}

// percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
