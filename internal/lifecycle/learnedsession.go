package lifecycle

import (
	"strings"
	"time"
)

// IdleState is a session's learned idle policy (docs/COST.md "The learned
// idle policy"): its plan, and where it stands between a pause and a
// pre-resume. A session under the fixed policy has none (Session.Idle nil).
type IdleState struct {
	// Policy is the session's idle policy (IdlePolicyLearned here).
	Policy IdlePolicy
	// Key is the session's user key (IdleKeys' first), for status.
	Key string
	// Plan is the current plan, made at create and at every return.
	Plan IdlePlan
	// PreResumeAt is when a paused session is pre-resumed; zero: not.
	PreResumeAt time.Time
	// PreResumed: running since a pre-resume, its user not back yet.
	PreResumed bool
}

// Learned reports whether s runs the learned idle policy.
func (s *Session) Learned() bool { return s.Idle != nil && s.Idle.Policy == IdlePolicyLearned }

// idleTimeout is the inactivity before s's idle deadline: the learned
// plan's PauseAfter when it is shorter, else IdleTimeout, the cap.
func (s *Session) idleTimeout() time.Duration {
	if s.Learned() && s.Idle.Plan.PauseAfter > 0 && s.Idle.Plan.PauseAfter < s.IdleTimeout {
		return s.Idle.Plan.PauseAfter
	}
	return s.IdleTimeout
}

// IdleKeys returns the histogram keys of a session, most specific first:
// the user key from its metadata field (when field is set and the session
// has it), its account (the account's sessions of its template: one app
// of the account), then its template (every account's sessions of it).
func IdleKeys(s *Session, field string) []string {
	var keys []string
	if v := s.Metadata[field]; field != "" && v != "" {
		keys = append(keys, "user#"+s.AccountID+"#"+v)
	}
	keys = append(keys, "account#"+s.AccountID+"#"+s.Template, "template#"+s.Template)
	return keys
}

// ReturnGap returns how long s was idle before activity at now, and
// whether that is a return (at least MinReturnGap). Call it before the
// activity is recorded.
func (s *Session) ReturnGap(now time.Time) (time.Duration, bool) {
	if s.LastActivityAt.IsZero() {
		return 0, false
	}
	gap := now.Sub(s.LastActivityAt)
	return gap, gap >= MinReturnGap
}

// StartLearning puts s under the learned policy with its first plan, from
// its keys' histograms (chain, as Plan takes them); key is its user key.
func (p LearnedPolicy) StartLearning(s *Session, key string, chain ...*IdleHistogram) {
	s.Idle = &IdleState{Policy: IdlePolicyLearned, Key: key, Plan: p.Plan(s.IdleTimeout, chain...)}
}

// Learn records a return of learned session s after gap: the outcome of
// its plan's window on the histogram the plan came from, the gap on the
// user key's histogram (chain[0]) and, one return in FallbackEvery, on the
// fallbacks (nil entries skipped), a return after a pause on the user
// key's ends (RecordBack), then a new plan. It returns
// the outcome. Call it before the return's activity is recorded, so the
// new plan sets the idle deadline.
func (p LearnedPolicy) Learn(s *Session, gap time.Duration, chain ...*IdleHistogram) Outcome {
	st := s.Idle
	o := st.Plan.Outcome(gap, st.PreResumed)
	if l := st.Plan.Level; o != OutcomeNone && l >= 0 && l < len(chain) && chain[l] != nil {
		chain[l].RecordOutcome(o == OutcomeHit)
	}
	for level, h := range chain {
		if h != nil && observes(s.ID, level, gap) {
			h.Observe(gap)
		}
	}
	if len(chain) > 0 && chain[0] != nil && s.backAfterPause() {
		chain[0].RecordBack()
	}
	st.PreResumed, st.PreResumeAt = false, time.Time{}
	st.Plan = p.Plan(s.IdleTimeout, chain...)
	return o
}

// PausedIdle updates a learned session that pauses at now for idleness or
// absence: a pre-resume is planned at the last activity + PreResumeAfter
// when the plan acts on a window that lies ahead. It reports whether the
// pause ends a pre-resume its user never came back to, a late outcome the
// caller records on the plan's histogram (RecordOutcome(false)); such a
// gap gets no second pre-resume.
func (s *Session) PausedIdle(now time.Time) (late bool) {
	if !s.Learned() {
		return false
	}
	st := s.Idle
	st.PreResumeAt = time.Time{}
	if st.PreResumed {
		st.PreResumed = false
		return true
	}
	if st.Plan.PreResume && st.Plan.PreResumeAfter > 0 {
		if at := s.LastActivityAt.Add(st.Plan.PreResumeAfter); at.After(now) {
			st.PreResumeAt = at
		}
	}
	return false
}

// PreResumeDue reports whether paused session s is due for its
// pre-resume at now.
func (s *Session) PreResumeDue(now time.Time) bool {
	return s.State == StatePaused && s.Learned() && !s.Idle.PreResumeAt.IsZero() && !s.Idle.PreResumeAt.After(now)
}

// MarkPreResumed records that a pre-resume made s running at now: the
// sandbox waits the plan's PreResumeKeep for its user (the idle deadline
// moves there; the last activity stays the user's, so the return's gap is
// the user's own).
func (s *Session) MarkPreResumed(now time.Time) {
	if !s.Learned() {
		return
	}
	s.Idle.PreResumed, s.Idle.PreResumeAt = true, time.Time{}
	if d := now.Add(s.Idle.Plan.PreResumeKeep); d.After(s.IdleDeadline) {
		s.IdleDeadline = d
	}
}

// FallbackEvery is how many of a session's returns one adds its gap to
// the fallback histograms (the account's and the template's): 1 in 8,
// picked by a hash of the session and the gap, so those shared items take
// an eighth of the writes and still see every user alike (docs/CAPACITY.md
// "Idle histograms"). The user key's histogram takes every return.
const FallbackEvery = 8

// observes reports whether a return of session id after gap is added to
// the histogram at level of its chain.
func observes(id string, level int, gap time.Duration) bool {
	if level == 0 {
		return true
	}
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	h = (h ^ uint64(gap/time.Millisecond)) * 1099511628211
	return h%FallbackEvery == 0
}

// backAfterPause reports whether a return of learned s is one after a
// pause its user key counted as an end: s paused since its last activity
// (it is paused or resuming, or running again since a resume or
// pre-resume), under a user key.
func (s *Session) backAfterPause() bool {
	paused := s.PausedAt.After(s.LastActivityAt) || s.RunningSince.After(s.LastActivityAt)
	return paused && userKeyed(s.Idle.Key)
}

// userKeyed reports whether key is a user key (IdleKeys): only a user
// key's histogram counts ends, so a pause never writes a shared item.
func userKeyed(key string) bool { return strings.HasPrefix(key, "user#") }

// CountsEnd reports whether the pause of learned session s being recorded
// (PausedIdle returned late) is counted on its user key's histogram as an
// end (IdleHistogram.RecordPause): the first pause of a gap, under a user
// key.
func (s *Session) CountsEnd(late bool) bool { return s.Learned() && !late && userKeyed(s.Idle.Key) }
