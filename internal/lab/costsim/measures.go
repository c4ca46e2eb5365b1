package costsim

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Measures are one scenario's figures on one trace as docs/COST.md
// "Measured honestly" defines them: idle-running time, waited returns,
// cost against the clairvoyant optimum at B (Config.Learned.BreakEven),
// pre-resume precision and recall; overall and per account.
type Measures struct {
	Scenario Scenario
	// Interrupted counts pauses that came while a user was active or an
	// agent's turn ran (Result.Interrupted): none may.
	Interrupted int
	Overall     MeasureSet
	// Accounts holds each account's figures, by name, sorted.
	Accounts []AccountMeasures
	// IdleBy is Result.IdleBy: the idle-running time by cause.
	IdleBy map[IdleCause]time.Duration
}

// AccountMeasures is one account's MeasureSet.
type AccountMeasures struct {
	Account string
	MeasureSet
}

// MeasureSet is the figures of a set of sessions. Minutes are float64.
type MeasureSet struct {
	// ActiveMinutes is the floor (the bursts); BilledMinutes the running
	// time; IdleMinutes the difference: every idle minute, a pre-resumed
	// sandbox's wait for its user and a false pre-resume's included.
	ActiveMinutes, BilledMinutes, IdleMinutes float64
	// Returns counts the first requests after a gap.
	Returns int
	// Waits has one entry per Config.Providers profile.
	Waits []WaitMeasure
	// CostMinutes is billed + B × pauses, OptimumMinutes the clairvoyant
	// optimum: the floor + min(gap, B) per gap + B per session (its last
	// pause), in running minutes at B.
	Pauses                      int
	CostMinutes, OptimumMinutes float64
	// FloorOptimumMinutes is the clairvoyant optimum of a policy that
	// must wait the learned policy's floor before a pause (the floor +
	// min(gap - floor, B) per gap, the floor + B per session); at half
	// the coalescing window past the floor, WindowOptimumMinutes (a pause
	// lands up to that window after the floor: the table does not know
	// the last heartbeat inside it). No policy here can cost less.
	FloorOptimumMinutes, WindowOptimumMinutes float64
	// PreResumes, Hits (returns that met a pre-resumed sandbox) and
	// FoundPaused (returns whose request found the sandbox paused).
	PreResumes, Hits, FoundPaused int
}

// WaitMeasure is what users waited on one provider profile.
type WaitMeasure struct {
	Provider string
	// Waited counts returns that waited at all; P50 and P95 are over every
	// return (a return that waited for nothing counts 0), P95Waited over
	// those that waited.
	Waited              int
	P50, P95, P95Waited time.Duration
}

// CostRatio is CostMinutes over OptimumMinutes.
func (m MeasureSet) CostRatio() float64 { return ratio(m.CostMinutes, m.OptimumMinutes) }

// Precision is hits per pre-resume (1 when there were none).
func (m MeasureSet) Precision() float64 {
	if m.PreResumes == 0 {
		return 1
	}
	return float64(m.Hits) / float64(m.PreResumes)
}

// Recall is the share of returns that needed a resume (found the sandbox
// paused, or met a pre-resume) whose resume was a pre-resume.
func (m MeasureSet) Recall() float64 { return ratio(float64(m.Hits), float64(m.Hits+m.FoundPaused)) }

// measure computes res's Measures on tr at cfg.Learned.BreakEven.
func measure(cfg Config, tr Trace, res Result) Measures {
	b := cfg.Learned.BreakEven
	base := map[string]*MeasureSet{}
	for i := range tr.Sessions {
		s := &tr.Sessions[i]
		name := accountOf(s)
		m := base[name]
		if m == nil {
			m = &MeasureSet{}
			base[name] = m
		}
		floor, window := cfg.Learned.Floor, cfg.Learned.Floor+cfg.Lifecycle.ActivityGranularity/2
		var active, opt, optFloor, optWindow time.Duration
		for j, burst := range s.Bursts {
			active += burst.End - burst.Start
			if j > 0 {
				gap := burst.Start - s.Bursts[j-1].End
				opt += min(gap, b)
				optFloor += min(gap, floor+b)
				optWindow += min(gap, window+b)
			}
		}
		m.ActiveMinutes += active.Minutes()
		m.OptimumMinutes += (active + opt + b).Minutes()
		m.FloorOptimumMinutes += (active + optFloor + floor + b).Minutes()
		m.WindowOptimumMinutes += (active + optWindow + window + b).Minutes()
	}
	out := Measures{Scenario: res.Scenario, Interrupted: res.Interrupted, IdleBy: res.IdleBy}
	all := &out.Overall
	var leads []time.Duration
	for _, name := range sortedKeys(base) {
		m := base[name]
		a := res.Accounts[name]
		if a == nil {
			a = &AccountResult{}
		}
		m.fill(cfg, a.Billed, a.Pauses, a.Returns, a.ResumeLeads, a.PreResumes, a.PreResumeHits)
		out.Accounts = append(out.Accounts, AccountMeasures{Account: name, MeasureSet: *m})
		all.ActiveMinutes += m.ActiveMinutes
		all.OptimumMinutes += m.OptimumMinutes
		all.FloorOptimumMinutes += m.FloorOptimumMinutes
		all.WindowOptimumMinutes += m.WindowOptimumMinutes
		all.Billed(a.Billed)
		all.Pauses += a.Pauses
		all.Returns += a.Returns
		leads = append(leads, a.ResumeLeads...)
		all.PreResumes += a.PreResumes
		all.Hits += a.PreResumeHits
	}
	all.fill(cfg, time.Duration(all.BilledMinutes*float64(time.Minute)), all.Pauses, all.Returns, leads, all.PreResumes, all.Hits)
	return out
}

// Billed adds d to BilledMinutes.
func (m *MeasureSet) Billed(d time.Duration) { m.BilledMinutes += d.Minutes() }

// fill sets the figures that follow from the billed time, pauses, returns
// and resume leads.
func (m *MeasureSet) fill(cfg Config, billed time.Duration, pauses, returns int, leads []time.Duration, pre, hits int) {
	m.BilledMinutes = billed.Minutes()
	m.IdleMinutes = m.BilledMinutes - m.ActiveMinutes
	m.Pauses, m.Returns, m.PreResumes, m.Hits = pauses, returns, pre, hits
	m.CostMinutes = m.BilledMinutes + float64(pauses)*cfg.Learned.BreakEven.Minutes()
	m.FoundPaused = 0
	for _, l := range leads {
		if l == 0 {
			m.FoundPaused++
		}
	}
	m.Waits = m.Waits[:0]
	for _, p := range cfg.Providers {
		w := p.ResumeToReady()
		all := make([]time.Duration, 0, returns)
		var waited []time.Duration
		for _, l := range leads {
			d := max(w-l, 0)
			all = append(all, d)
			if d > 0 {
				waited = append(waited, d)
			}
		}
		for len(all) < returns {
			all = append(all, 0)
		}
		slices.Sort(all)
		slices.Sort(waited)
		m.Waits = append(m.Waits, WaitMeasure{Provider: p.Name, Waited: len(waited),
			P50: percentile(all, 0.5), P95: percentile(all, 0.95), P95Waited: percentile(waited, 0.95)})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The targets of the learned policy against the fixed timer (docs/COST.md
// "Targets").
const (
	targetIdleCut        = 0.60 // at least 60 % fewer idle-running minutes
	targetCostOverall    = 1.15 // cost at most 1.15× the clairvoyant optimum
	targetCostAccount    = 2.0  // and at most 2× on every account
	targetPrecision      = 0.7
	targetRecall         = 0.5
	targetAccountQuantil = 0.75 // waited returns judged at p75 across accounts
)

// Verdict judges learned against fixed on one trace.
type Verdict struct {
	// IdleCut is 1 - learned idle / fixed idle.
	IdleCut float64
	// WaitedDelta[i] is learned - fixed waited returns on provider i;
	// AccountP75[i] the p75 across accounts of that change per account;
	// P95OK[i] whether learned's waited-seconds p95 (over returns) is no
	// higher than fixed's.
	WaitedDelta, AccountP75 []int
	P95OK                   []bool
	// CostRatio overall and WorstAccount (its name and ratio);
	// FloorBound the least cost ratio any policy that waits the floor
	// reaches (MeasureSet.FloorOptimumMinutes over the optimum).
	CostRatio, FloorBound float64
	WorstAccount          string
	WorstAccountRatio     float64
	Precision, Recall     float64
	// RecallCeiling bounds Recall from above: the returns a window could
	// hold with hindsight (PredictableReturns) over those that needed a
	// resume (hits and returns that found the sandbox paused), at most 1.
	RecallCeiling float64
}

// Judge compares learned and fixed Measures of one trace.
func Judge(fixed, learned Measures) Verdict {
	f, l := fixed.Overall, learned.Overall
	v := Verdict{IdleCut: 1 - ratio(l.IdleMinutes, f.IdleMinutes), CostRatio: l.CostRatio(),
		FloorBound: ratio(l.FloorOptimumMinutes, l.OptimumMinutes),
		Precision:  l.Precision(), Recall: l.Recall()}
	for i := range l.Waits {
		v.WaitedDelta = append(v.WaitedDelta, l.Waits[i].Waited-f.Waits[i].Waited)
		v.P95OK = append(v.P95OK, l.Waits[i].P95 <= f.Waits[i].P95)
		var deltas []int
		for j, a := range learned.Accounts {
			deltas = append(deltas, a.Waits[i].Waited-fixed.Accounts[j].Waits[i].Waited)
		}
		slices.Sort(deltas)
		k := int(math.Ceil(float64(len(deltas))*targetAccountQuantil)) - 1
		v.AccountP75 = append(v.AccountP75, deltas[min(max(k, 0), len(deltas)-1)])
	}
	for _, a := range learned.Accounts {
		if r := a.CostRatio(); r > v.WorstAccountRatio {
			v.WorstAccount, v.WorstAccountRatio = a.Account, r
		}
	}
	return v
}

// The parts of the target, each met or not.
func (v Verdict) idleOK() bool { return v.IdleCut >= targetIdleCut }
func (v Verdict) waitsOK() bool {
	for i := range v.WaitedDelta {
		if v.WaitedDelta[i] > 0 || v.AccountP75[i] > 0 || !v.P95OK[i] {
			return false
		}
	}
	return true
}
func (v Verdict) costOK() bool {
	return v.CostRatio <= targetCostOverall && v.WorstAccountRatio <= targetCostAccount
}
func (v Verdict) preResumeOK() bool {
	return v.Precision >= targetPrecision && v.Recall >= targetRecall
}

// Met reports whether every part of the target holds.
func (v Verdict) Met() bool { return v.idleOK() && v.waitsOK() && v.costOK() && v.preResumeOK() }
