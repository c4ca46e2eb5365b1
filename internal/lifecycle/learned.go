package lifecycle

import (
	"fmt"
	"math"
	"time"
)

// IdlePolicy is how a session's idle deadline is set (idle_policy of
// POST /v1/sessions): fixed, the idle timeout alone; or learned, a pause
// deadline learned from the idle gaps of the session's user key, never
// past the idle timeout (docs/COST.md "The learned idle policy").
type IdlePolicy string

// The idle policies.
const (
	IdlePolicyFixed   IdlePolicy = "fixed"
	IdlePolicyLearned IdlePolicy = "learned"
)

// Valid reports whether p is a known idle policy.
func (p IdlePolicy) Valid() bool { return p == IdlePolicyFixed || p == IdlePolicyLearned }

// PlanWhy says why a session's pause deadline is what it is (status:
// pause_deadline_why).
type PlanWhy string

// The reasons of an IdlePlan.
const (
	// WhyFixed: the fixed idle policy, the idle timeout.
	WhyFixed PlanWhy = "fixed"
	// WhyCap: the idle timeout is at or below the learned policy's floor,
	// and the idle timeout, the customer's cap, wins.
	WhyCap PlanWhy = "cap"
	// WhyThin: every histogram of the key chain holds too few returns to
	// learn from: the break-even timeout.
	WhyThin PlanWhy = "thin"
	// WhyMissed: the last pre-resume predictions missed: the deadline
	// chosen without pre-resumes, and none.
	WhyMissed PlanWhy = "missed"
	// WhyLearned: the deadline of least expected cost under the user's
	// distribution of gaps (LearnedPolicy.Plan).
	WhyLearned PlanWhy = "learned"
	// WhyPredicted: as learned, with a pre-resume before the predicted
	// return: the user's longer gaps are regular enough to pay for it.
	WhyPredicted PlanWhy = "predicted"
)

// LearnedPolicy holds the learned idle policy's settings (docs/COST.md
// "The learned idle policy"). The zero value is not useful: start from
// DefaultLearnedPolicy.
type LearnedPolicy struct {
	// Floor is the shortest learned idle timeout (ours: 1 min, the
	// shortest idle timeout a create may ask for).
	Floor time.Duration
	// BreakEven is B/r: what a pause and its resume cost, in running
	// time. Waiting it out, then pausing, costs at most twice the
	// clairvoyant optimum (the ski-rental bound); it is the timeout while
	// every histogram is thin. Ours: 2 min (docs/COST.md "The break-even
	// time").
	BreakEven time.Duration
	// WaitCost is what a return that meets a paused sandbox is worth
	// against running time: the plan weighs each expected wait at it
	// (ours: 4 min, chosen with MissLimit on the tuning traces of
	// docs/COST.md: the least that keeps the learned policy's waited
	// returns below the fixed timer's overall with 60 % fewer idle-running
	// minutes).
	WaitCost time.Duration
	// MinReturns: a histogram with fewer returns is thin (ours: 6). While
	// every histogram of the chain is thin the plan is the break-even
	// timeout.
	MinReturns int
	// Prior is how many returns the next histogram of the chain weighs in
	// a user's distribution (ours: 4): a user with n returns is (n
	// returns + Prior × the account's distribution) / (n + Prior).
	Prior int
	// PreResumeLead is how long before a window's head a pre-resume
	// starts: the slowest provider's resume to ready (about 3.2 s in the
	// cost replay's profiles, Daytona's and Vercel Sandbox's) plus a pause
	// timer's rounding and lateness (about 2 s), with margin (ours: 10 s).
	PreResumeLead time.Duration
	// MaxWindow is the widest window worth a pre-resume: a pre-resumed
	// sandbox may run idle that long waiting for its user (ours: 10 min,
	// the default idle timeout).
	MaxWindow time.Duration
	// MinFar is the fewest returns of a histogram inside a window before
	// it is acted on (ours: 4).
	MinFar int
	// Precision is the least share of a window's pre-resumes that its
	// histogram says meet their user: of the returns after the window's
	// head and the ends (IdleHistogram.Ends), those inside it (ours: 0.8;
	// on the training trace the windows that pay are above it anyway).
	Precision float64
	// MissLimit: this many misses among the last four predictions stop
	// the pre-resumes (ours: 4: a regular user who leaves once in a
	// while, each a miss, keeps their pre-resumes; 2 cost a fifth of the
	// hits on the tuning traces at the same precision).
	MissLimit int
}

// DefaultLearnedPolicy returns the settings above.
func DefaultLearnedPolicy() LearnedPolicy {
	return LearnedPolicy{
		Floor: time.Minute, BreakEven: 2 * time.Minute, WaitCost: 4 * time.Minute, MinReturns: 6, Prior: 4,
		PreResumeLead: 10 * time.Second, MaxWindow: 10 * time.Minute, MinFar: 4, Precision: 0.8, MissLimit: 4,
	}
}

// Validate reports whether p can plan. Errors: plain, naming the field.
func (p LearnedPolicy) Validate() error {
	switch {
	case p.Floor < MinReturnGap || p.BreakEven <= 0 || p.WaitCost < 0:
		return fmt.Errorf("learned idle policy: floor at least %v, break-even positive, wait cost not negative", MinReturnGap)
	case p.MinReturns < 1 || p.MinFar < 1 || p.Prior < 0 || p.MissLimit < 1 || p.MissLimit > 4:
		return fmt.Errorf("learned idle policy: min returns and min far at least 1, prior not negative, miss limit 1..4")
	case p.Precision <= 0 || p.Precision > 1:
		return fmt.Errorf("learned idle policy: precision in (0, 1]")
	case p.PreResumeLead < 0 || p.MaxWindow <= 0:
		return fmt.Errorf("learned idle policy: lead not negative, max window positive")
	}
	return nil
}

// IdlePlan is a session's learned idle plan: after how long without
// activity it pauses and, for a predictable user, when it is resumed
// again before the user is back. Durations count from the last activity.
type IdlePlan struct {
	Why PlanWhy
	// PauseAfter is the learned idle timeout, Floor..the idle timeout.
	PauseAfter time.Duration
	// PreResumeAfter, when positive, is the pre-resume time: the head of
	// the predicted return less the lead. PreResumeKeep is how long a
	// pre-resumed sandbox waits for its user before it pauses again.
	PreResumeAfter time.Duration
	PreResumeKeep  time.Duration
	// PreResume says the window is acted on. A window with PreResume false
	// (WhyMissed) is only judged, so a user who becomes predictable again
	// gets pre-resumes back.
	PreResume bool
	// Level is which histogram of the key chain the plan came from (0 the
	// first, the user key's); Returns how many returns it held.
	Level, Returns int
}

// Outcome is how a return fared against its plan's pre-resume window.
type Outcome int

// The outcomes of IdlePlan.Outcome.
const (
	OutcomeNone  Outcome = iota // no window, a gap the plan kept alive, or already judged
	OutcomeHit                  // back inside the window: the pre-resume was right
	OutcomeEarly                // back before the pre-resume: the user waited
	OutcomeLate                 // back after the window: the pre-resume ran for nothing
)

// Outcome judges a return after gap against p's window. preResumed says
// the sandbox was pre-resumed for this gap; its late outcome was judged
// when it paused again (OutcomeLate there), so it is OutcomeNone here.
func (p IdlePlan) Outcome(gap time.Duration, preResumed bool) Outcome {
	switch {
	case p.PreResumeAfter <= 0 || gap < p.PauseAfter:
		return OutcomeNone
	case gap < p.PreResumeAfter:
		return OutcomeEarly
	case gap <= p.PreResumeAfter+p.PreResumeKeep:
		return OutcomeHit
	case preResumed:
		return OutcomeNone
	default:
		return OutcomeLate
	}
}

// Plan returns the idle plan of a session whose idle timeout (the
// customer's cap) is capT, from the histograms of its key chain (the user
// key's, then the account's, then the template's; nil entries are
// skipped):
//
//   - capT at or below Floor: capT (WhyCap);
//   - every histogram thin: BreakEven, clamped to Floor..capT (WhyThin);
//   - else the pause deadline e, a whole minute from Floor to capT (or
//     capT), that minimises the expected cost of a gap under the user's
//     distribution (the ski rental with a learned distribution): a gap
//     shorter than e costs itself, a longer one e + BreakEven + WaitCost
//     (the pause and resume, and a return that waits). The user's
//     distribution is the user key's returns plus Prior returns' weight
//     of the next histogram's distribution, and so down the chain: a user
//     with few returns leans on the account's, the account on the
//     template's (WhyLearned; Level is the first histogram that is not
//     thin).
//   - a pre-resume window [a, b) of whole minutes after e, from the
//     user key's histogram when it is not thin (Level 0: a shared
//     histogram predicts no one's return, and its items then take only
//     the sampled gaps, never an outcome), lowers the cost of the gaps
//     it holds: a return inside it does not wait and costs its time
//     since the pre-resume; a return after it costs the window and
//     another pause. The window that
//     lowers the expected cost most, among those no wider than MaxWindow
//     holding MinFar returns and at least Precision of the returns after
//     its head, is taken with the e that suits it best (WhyPredicted).
//     When MissLimit of the last four predictions missed, e is chosen
//     without windows and the window after it is only judged (WhyMissed).
func (p LearnedPolicy) Plan(capT time.Duration, chain ...*IdleHistogram) IdlePlan {
	if capT <= p.Floor {
		return IdlePlan{Why: WhyCap, PauseAfter: capT}
	}
	level, n := -1, 0
	for l, h := range chain {
		if h != nil && h.Returns() >= p.MinReturns {
			level, n = l, h.Returns()
			break
		}
	}
	if level < 0 {
		return IdlePlan{Why: WhyThin, PauseAfter: min(max(p.BreakEven, p.Floor), capT), Level: -1}
	}
	first := int((p.Floor + IdleBin - 1) / IdleBin)
	capBin := min(int(capT/IdleBin), IdleBins) // whole minutes below the cap
	var win windowSet                          // a pre-resume is a user's own: only from the user key's histogram
	if level == 0 {
		win = p.windows(chain[0], n, first)
	}
	missed := chain[level].RecentMisses(4) >= p.MissLimit
	e, w := p.deadline(p.blend(chain), first, capBin, capT, win, !missed)
	plan := IdlePlan{Why: WhyLearned, PauseAfter: capT, Level: level, Returns: n}
	if e < capBin {
		plan.PauseAfter = max(time.Duration(e)*IdleBin, p.Floor)
	}
	if missed {
		w = win.from(e + 1)
	}
	if w.ok {
		plan.PreResumeAfter = time.Duration(w.a)*IdleBin - p.PreResumeLead
		plan.PreResumeKeep = time.Duration(w.b-w.a)*IdleBin + p.PreResumeLead
		plan.Why, plan.PreResume = WhyPredicted, true
		if missed {
			plan.Why, plan.PreResume = WhyMissed, false
		}
	}
	return plan
}

// idleDist is a distribution of gaps over the histogram's bins, the last
// entry the returns out of bounds.
type idleDist [IdleBins + 1]float64

// blend returns the user's distribution of gaps: from the last histogram
// of chain to the first, each one's returns plus Prior returns' weight of
// the distribution so far.
func (p LearnedPolicy) blend(chain []*IdleHistogram) *idleDist {
	var d idleDist
	have := false
	for i := len(chain) - 1; i >= 0; i-- {
		h := chain[i]
		if h == nil || h.Returns() == 0 {
			continue
		}
		prior := 0.0
		if have {
			prior = float64(p.Prior)
		}
		inv := 1 / (float64(h.Returns()+int(h.Ends)) + prior)
		for b := range IdleBins {
			d[b] = (float64(h.Counts[b]) + prior*d[b]) * inv
		}
		d[IdleBins] = (float64(h.Over) + float64(h.Ends) + prior*d[IdleBins]) * inv
		have = true
	}
	return &d
}

// deadline returns the pause deadline in whole minutes (capBin: the cap
// itself) minimising the expected cost of a gap under d, and the window
// taken with it when withWindows.
func (p LearnedPolicy) deadline(d *idleDist, first, capBin int, capT time.Duration, win windowSet, withWindows bool) (int, window) {
	b, lambda := p.BreakEven.Minutes(), p.WaitCost.Minutes()
	var below, moment [IdleBins + 1]float64 // mass and mass × minutes of the bins below i
	for i := range IdleBins {
		below[i+1] = below[i] + d[i]
		moment[i+1] = moment[i] + d[i]*(float64(i)+0.5)
	}
	total := below[IdleBins] + d[IdleBins]
	cost := func(e int, at float64) float64 { return moment[e] + (total-below[e])*(at+b+lambda) }
	var bestE int
	var bestW window
	best := math.Inf(1)
	for e := min(first, capBin); e <= capBin; e++ { // the least e of equal cost
		at := float64(e)
		if e == capBin {
			at = capT.Minutes()
		}
		c, w := cost(e, at), window{}
		if withWindows {
			if w = win.from(e + 1); w.ok {
				c -= w.value
			}
		}
		if c < best-1e-9 {
			best, bestE, bestW = c, e, w
		}
	}
	return bestE, bestW
}

// window is a pre-resume window [a, b) in whole minutes and what it
// lowers the expected cost of a gap by, in minutes.
type window struct {
	a, b  int
	value float64
	ok    bool
}

// windowSet holds, for each start minute, the best window starting there
// or later.
type windowSet []window

// from returns the best window starting at minute a or later.
func (s windowSet) from(a int) window {
	if a < 0 || a >= len(s) {
		return window{}
	}
	return s[a]
}

// windows returns the acceptable pre-resume windows of h (n returns)
// starting after minute first: each start's best, as from reads them.
func (p LearnedPolicy) windows(h *IdleHistogram, n, first int) windowSet {
	set := make(windowSet, IdleBins+1)
	var q, m [IdleBins + 1]float64 // mass and mass × minutes of the bins below i
	n += int(h.Ends)               // an end is a gap that never ends: after every window
	inv := 1 / float64(n)
	for i := range IdleBins {
		c := float64(h.Counts[i]) * inv
		q[i+1], m[i+1] = q[i]+c, m[i]+c*(float64(i)+0.5)
	}
	over := float64(int(h.Over)+int(h.Ends)) * inv
	b, lambda, lead := p.BreakEven.Minutes(), p.WaitCost.Minutes(), p.PreResumeLead.Minutes()
	wmax := max(int(p.MaxWindow/IdleBin), 1)
	for a := IdleBins - 1; a > first; a-- {
		set[a] = set[a+1]
		after := q[IdleBins] - q[a] + over
		for w := 1; w <= wmax && a+w <= IdleBins; w++ {
			hit := q[a+w] - q[a]
			if hit*float64(n) < float64(p.MinFar)-1e-9 || hit < p.Precision*after {
				continue
			}
			spend := m[a+w] - m[a] - float64(a)*hit + lead*hit
			v := lambda*hit - spend - (after-hit)*(float64(w)+lead+b)
			if v > 0 && (!set[a].ok || v > set[a].value) {
				set[a] = window{a: a, b: a + w, value: v, ok: true}
			}
		}
	}
	return set
}

// ReasonPredicted is the transition reason of a pre-resume: a paused
// session resumed before its user's predicted return (IdlePlan).
const ReasonPredicted = "predicted"
