package costsim

import (
	"cmp"
	"slices"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Where the idle-running time of a learned scenario goes (docs/COST.md
// "Where the idle minutes go"): each stretch of a gap that a sandbox ran
// through is put down to the plan that kept it running.

// IdleCause names one share of the idle-running time: the plan's reason
// (lifecycle.PlanWhy, or "fixed") and how the gap ended.
type IdleCause struct {
	// Why is the reason of the plan in force during the gap ("fixed" for
	// a session under the fixed policy).
	Why string
	// End is how the stretch ended: EndKept (the user came back to a
	// running sandbox), EndPaused (it paused; the user came back later),
	// EndLast (it paused after the session's last burst), EndPreHit (a
	// pre-resumed sandbox met its user), EndPreFalse (a pre-resumed
	// sandbox paused again unused), EndOther (the provider's timeout, the
	// end of the replay).
	End string
}

// The ends of an IdleCause.
const (
	EndKept     = "kept alive, user back"
	EndPaused   = "waited to pause"
	EndLast     = "waited to pause after the last burst"
	EndPreHit   = "pre-resumed, waited for its user"
	EndPreFalse = "pre-resumed for nothing"
	EndOther    = "other"
)

// why is the reason of s's plan now.
func (s *simSession) why() string {
	if s.row.Idle == nil {
		return string(lifecycle.WhyFixed)
	}
	return string(s.row.Idle.Plan.Why)
}

// idleSince is the start of the idle stretch ending at at: the later of
// the running span's start and the end of the last burst before at.
func (s *simSession) idleSince(at time.Duration) time.Duration {
	end := time.Duration(0)
	for j := min(s.burst, len(s.tr.Bursts)-1); j >= 0; j-- {
		if b := s.tr.Bursts[j]; b.End <= at {
			end = b.End
			break
		}
	}
	return max(end, s.since)
}

// idle puts the idle stretch ending at at down to cause.
func (m *sim) idle(s *simSession, at time.Duration, why, end string) {
	d := at - s.idleSince(at)
	if d <= 0 {
		return
	}
	if m.res.IdleBy == nil {
		m.res.IdleBy = map[IdleCause]time.Duration{}
	}
	m.res.IdleBy[IdleCause{Why: why, End: end}] += d
}

// idleBack is the first request after a gap reaching a running sandbox at
// at; preResumed says it was pre-resumed (or resumed on return) for it.
// Call it before the return is learned from (the plan of the gap).
func (m *sim) idleBack(s *simSession, at time.Duration, preResumed bool) {
	if preResumed {
		m.idle(s, at, s.why(), EndPreHit)
		return
	}
	m.idle(s, at, s.why(), EndKept)
}

// idlePaused is a pause at at, before the session's learned state moves.
func (m *sim) idlePaused(s *simSession, at time.Duration, webhook bool) {
	switch {
	case webhook:
		m.idle(s, at, s.why(), EndOther)
	case s.row.Idle != nil && s.row.Idle.PreResumed:
		m.idle(s, at, s.why(), EndPreFalse)
	case s.burst == len(s.tr.Bursts)-1:
		m.idle(s, at, s.why(), EndLast)
	default:
		m.idle(s, at, s.why(), EndPaused)
	}
}

// causeTable renders the idle-running minutes of ms by cause, one column
// per policy, and what no cause covers (idle between bursts less than a
// minute apart is put down to the plan too; the rest is rounding).
func causeTable(w func(string, ...any), ms []Measures) {
	var causes []IdleCause
	seen := map[IdleCause]bool{}
	for _, m := range ms {
		for c := range m.IdleBy {
			if !seen[c] {
				seen[c] = true
				causes = append(causes, c)
			}
		}
	}
	slices.SortFunc(causes, func(a, b IdleCause) int {
		return cmp.Or(cmp.Compare(a.Why, b.Why), cmp.Compare(a.End, b.End))
	})
	w("\nIdle-running minutes by cause: the plan's reason during the gap, and how the stretch ended.\n\n| plan | stretch |")
	for _, m := range ms {
		w(" %s |", m.Scenario.Name)
	}
	w("\n|---|---|")
	for range ms {
		w("---:|")
	}
	w("\n")
	for _, c := range causes {
		w("| %s | %s |", c.Why, c.End)
		for _, m := range ms {
			w(" %s |", numfmt.Thousands(int(m.IdleBy[c].Minutes()+0.5)))
		}
		w("\n")
	}
	w("| total | |")
	for _, m := range ms {
		var sum time.Duration
		for _, d := range m.IdleBy {
			sum += d
		}
		w(" %s of %s |", numfmt.Thousands(int(sum.Minutes()+0.5)), numfmt.Thousands(int(m.Overall.IdleMinutes+0.5)))
	}
	w("\n")
}
