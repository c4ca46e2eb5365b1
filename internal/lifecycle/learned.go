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
	// WhyThin: the histogram holds too few returns to learn from: the
	// break-even timeout.
	WhyThin PlanWhy = "thin"
	// WhyMissed: the last pre-resume predictions missed: the break-even
	// timeout, no pre-resume.
	WhyMissed PlanWhy = "missed"
	// WhyLearned: kept alive to the tail of the user's gaps below the cap.
	WhyLearned PlanWhy = "learned"
	// WhyPredicted: as learned, and the user's longer gaps are regular
	// enough to pre-resume before the predicted return.
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
	// the histogram is thin or its predictions miss. Ours: 2 min
	// (docs/COST.md "The break-even time").
	BreakEven time.Duration
	// MinReturns: a histogram with fewer returns is thin (ours: 6; keepAlive
	// stretches the timeout of a histogram with few returns).
	MinReturns int
	// TailShare is the share of returns the learned timeout may leave to
	// wait among those the idle timeout would have kept (ours: 0.01, the
	// hybrid policy's 99th percentile); also the tail of a pre-resume
	// window.
	TailShare float64
	// HeadShare is the share of the longer gaps that may end before a
	// pre-resume (ours: 0.05, the hybrid policy's 5th percentile).
	HeadShare float64
	// PreResumeLead is how long before the window's head a pre-resume
	// starts: the resume to ready and a timer's lateness (ours: 15 s).
	PreResumeLead time.Duration
	// MaxWindow is the widest window worth a pre-resume: a pre-resumed
	// sandbox may run idle that long waiting for its user (ours: 10 min,
	// the default idle timeout).
	MaxWindow time.Duration
	// MinFar is the fewest longer gaps a window is drawn from (ours: 6).
	MinFar int
	// MissLimit: this many misses among the last four predictions fall
	// back to the break-even timeout (ours: 2).
	MissLimit int
}

// DefaultLearnedPolicy returns the settings above.
func DefaultLearnedPolicy() LearnedPolicy {
	return LearnedPolicy{
		Floor: time.Minute, BreakEven: 2 * time.Minute, MinReturns: 6,
		TailShare: 0.01, HeadShare: 0.05, PreResumeLead: 15 * time.Second,
		MaxWindow: 10 * time.Minute, MinFar: 6, MissLimit: 2,
	}
}

// Validate reports whether p can plan. Errors: plain, naming the field.
func (p LearnedPolicy) Validate() error {
	switch {
	case p.Floor < MinReturnGap || p.BreakEven <= 0:
		return fmt.Errorf("learned idle policy: floor at least %v and break-even positive", MinReturnGap)
	case p.MinReturns < 1 || p.MinFar < 1 || p.MissLimit < 1 || p.MissLimit > 4:
		return fmt.Errorf("learned idle policy: min returns and min far at least 1, miss limit 1..4")
	case p.TailShare < 0 || p.TailShare >= 1 || p.HeadShare < 0 || p.HeadShare >= 1:
		return fmt.Errorf("learned idle policy: tail and head shares in [0, 1)")
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
// customer's cap) is capT, from the first histogram of chain that is not
// thin (the user key's, then the account's, then the template's; nil
// entries are skipped):
//
//   - capT at or below Floor: capT (WhyCap);
//   - every histogram thin, or the chosen one's last predictions missing
//     (MissLimit of the last four): BreakEven, clamped to Floor..capT
//     (WhyThin, WhyMissed);
//   - else the learned timeout: the least whole minute e ≥ Floor such
//     that the returns after a gap in [e, capT) are at most TailShare of
//     all: the idle timeout's waits plus at most that share (WhyLearned).
//     The returns after e are the longer gaps; when at least MinFar of
//     them fall in a window from their HeadShare to their 1-TailShare
//     quantile no wider than MaxWindow, and that window starts after the
//     pause, the plan pre-resumes PreResumeLead before its head and
//     keeps the sandbox waiting to its end (WhyPredicted).
func (p LearnedPolicy) Plan(capT time.Duration, chain ...*IdleHistogram) IdlePlan {
	if capT <= p.Floor {
		return IdlePlan{Why: WhyCap, PauseAfter: capT}
	}
	breakEven := min(max(p.BreakEven, p.Floor), capT)
	for level, h := range chain {
		if h == nil {
			continue
		}
		n := h.Returns()
		if n < p.MinReturns {
			continue
		}
		plan := p.learn(h, n, capT)
		plan.Level, plan.Returns = level, n
		if h.RecentMisses(4) >= p.MissLimit && plan.PreResumeAfter > 0 {
			// The window is not trusted: the longer gaps get the
			// break-even timeout, the shorter ones still their keep-alive.
			plan.Why, plan.PauseAfter, plan.PreResume = WhyMissed, max(plan.PauseAfter, breakEven), false
		}
		return plan
	}
	return IdlePlan{Why: WhyThin, PauseAfter: breakEven, Level: -1}
}

// learn is Plan on one histogram holding n returns.
func (p LearnedPolicy) learn(h *IdleHistogram, n int, capT time.Duration) IdlePlan {
	capBin := min(int(capT/IdleBin), IdleBins) // bins below it return before the cap
	first := min(int((p.Floor+IdleBin-1)/IdleBin), capBin)
	plan := IdlePlan{Why: WhyLearned, PauseAfter: max(p.keepAlive(h, n, first, capBin, capT), p.Floor)}
	e := min(int((plan.PauseAfter+IdleBin-1)/IdleBin), IdleBins)
	if a, b, ok := p.window(h, e); ok {
		start := time.Duration(a)*IdleBin - p.PreResumeLead
		if start > plan.PauseAfter {
			plan.Why, plan.PreResume = WhyPredicted, true
			plan.PreResumeAfter, plan.PreResumeKeep = start, time.Duration(b-a)*IdleBin+p.PreResumeLead
		}
	}
	return plan
}

// keepAlive returns the learned timeout: the least whole minute e ≥ first
// such that the returns after a gap in [e, capBin) are at most TailShare
// of all n. A handful of returns cannot show a 1 % tail: while the
// returns below the cap are fewer than that share needs, the timeout is
// their largest gap stretched by a log-normal fitted to them, out to the
// quantile the share asks for (never past capT).
func (p LearnedPolicy) keepAlive(h *IdleHistogram, n, first, capBin int, capT time.Duration) time.Duration {
	allowed := p.TailShare * float64(n)
	var tail float64
	near, last := 0, -1
	var sum, sq float64 // of ln(bin midpoint in minutes), below the cap
	for i := 1; i < capBin; i++ {
		c := float64(h.Counts[i])
		if c == 0 {
			continue
		}
		if i >= first {
			tail += c
		}
		near += int(h.Counts[i])
		last = i
		l := math.Log(float64(i) + 0.5)
		sum, sq = sum+c*l, sq+c*l*l
	}
	e := first
	for ; e < capBin && tail > allowed; e++ {
		tail -= float64(h.Counts[e])
	}
	if e >= capBin {
		return capT
	}
	keep := time.Duration(e) * IdleBin
	if near < 2 || last < first {
		return keep
	}
	// The share of near returns that may run past the timeout, against
	// what the largest of near returns shows (about 1/(near+1)).
	share := min(allowed/float64(near), 0.5)
	seen := 1 / float64(near+1)
	if share >= seen {
		return keep
	}
	mean := sum / float64(near)
	// A few returns may sit close together by chance: the spread is taken
	// as at least minSigma.
	sigma := max(math.Sqrt(max(sq/float64(near)-mean*mean, 0)), minSigma)
	stretch := math.Exp(sigma * (normalQuantile(1-share) - normalQuantile(1-seen)))
	ext := time.Duration(float64(last+1) * stretch * float64(IdleBin)).Truncate(IdleBin)
	if ext >= time.Duration(capBin)*IdleBin {
		return capT
	}
	return max(keep, ext)
}

// minSigma is the least spread keepAlive assumes of the logarithm of a
// user's gaps: 0.7, about what a user's own short gaps show in the trace
// of people (docs/COST.md: 0.7 to 0.9 within a user).
const minSigma = 0.7

// window returns the pre-resume window [a, b) in whole minutes for the
// returns after a gap of e minutes or more (the longer gaps), if they are
// regular: the MaxWindow-wide run of bins holding the most of them, when
// it holds at least half of them and MinFar, trimmed to its HeadShare and
// 1-TailShare quantiles.
func (p LearnedPolicy) window(h *IdleHistogram, e int) (a, b int, ok bool) {
	far := int(h.Over)
	for i := e; i < IdleBins; i++ {
		far += int(h.Counts[i])
	}
	w := max(int(p.MaxWindow/IdleBin), 1)
	best, bestAt, run := 0, -1, 0
	for i := e; i < IdleBins; i++ {
		run += int(h.Counts[i])
		if i-w >= e {
			run -= int(h.Counts[i-w])
		}
		if run > best {
			best, bestAt = run, max(i-w+1, e)
		}
	}
	if best < p.MinFar || 2*best < far {
		return 0, 0, false
	}
	headAt, tailAt := p.HeadShare*float64(best), (1-p.TailShare)*float64(best)
	a, b = -1, -1
	cum := 0
	for i := bestAt; i < bestAt+w && i < IdleBins && b < 0; i++ {
		cum += int(h.Counts[i])
		if a < 0 && float64(cum) > headAt {
			a = i
		}
		if float64(cum) >= tailAt {
			b = i + 1
		}
	}
	return a, b, a >= 0 && b > a
}

// normalQuantile is the standard normal's quantile function (Acklam's
// rational approximation, relative error below 1.2e-9), for 0 < q < 1.
func normalQuantile(q float64) float64 {
	const (
		a1, a2, a3, a4, a5, a6 = -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00
		b1, b2, b3, b4, b5     = -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01
		c1, c2, c3, c4, c5, c6 = -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00
		d1, d2, d3, d4         = 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00
		low                    = 0.02425
	)
	switch {
	case q < low:
		r := math.Sqrt(-2 * math.Log(q))
		return (((((c1*r+c2)*r+c3)*r+c4)*r+c5)*r + c6) / ((((d1*r+d2)*r+d3)*r+d4)*r + 1)
	case q > 1-low:
		r := math.Sqrt(-2 * math.Log(1-q))
		return -(((((c1*r+c2)*r+c3)*r+c4)*r+c5)*r + c6) / ((((d1*r+d2)*r+d3)*r+d4)*r + 1)
	default:
		r := q - 0.5
		t := r * r
		return (((((a1*t+a2)*t+a3)*t+a4)*t+a5)*t + a6) * r / (((((b1*t+b2)*t+b3)*t+b4)*t+b5)*t + 1)
	}
}

// ReasonPredicted is the transition reason of a pre-resume: a paused
// session resumed before its user's predicted return (IdlePlan).
const ReasonPredicted = "predicted"
