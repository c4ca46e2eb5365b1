package lifecycle

import (
	"context"
	"time"
)

// The learned idle policy in the Service (docs/COST.md "The learned idle
// policy"): a create opts in (CreateInput.IdlePolicy, or
// Config.IdlePolicy for the deployment), its plan is made from the
// histograms of its keys (IdleKeys with Config.IdleUserField), a return
// learns (Learn) before its activity is recorded, a pause for idleness
// plans a pre-resume (Session.PausedIdle), and a pause timer armed for it
// pre-resumes the session (FireTimer). The histograms are written after
// the session's own write commits, best effort: a lost histogram write
// loses one gap, never a session write.

// idleStore returns the store's histograms, if it keeps them.
func (s *Service) idleStore() (IdleHistogramStore, bool) {
	if s.cfg.IdleHistograms != nil {
		return s.cfg.IdleHistograms, true
	}
	st, ok := s.cfg.Store.(IdleHistogramStore)
	return st, ok
}

// idlePolicy returns the policy a create asks for: in ("" for the
// deployment's, Config.IdlePolicy, itself fixed by default).
// Errors: invalid naming idle_policy.
func (s *Service) idlePolicy(in IdlePolicy) (IdlePolicy, error) {
	if in == "" {
		in = s.cfg.IdlePolicy
	}
	if in == "" {
		return IdlePolicyFixed, nil
	}
	if !in.Valid() {
		return "", Errorf(CodeInvalid, "idle_policy must be %s or %s", IdlePolicyFixed, IdlePolicyLearned)
	}
	return in, nil
}

// chainItems reads the histogram items of sess's keys, most specific
// first; a store without histograms, or a failed read, gives empty ones.
func (s *Service) chainItems(ctx context.Context, sess *Session) ([]IdleHistogramItem, []*IdleHistogram) {
	keys := IdleKeys(sess, s.cfg.IdleUserField)
	items := make([]IdleHistogramItem, len(keys))
	chain := make([]*IdleHistogram, len(keys))
	st, ok := s.idleStore()
	for i, k := range keys {
		items[i].Key = k
		if ok {
			it, err := st.GetIdleHistogram(ctx, k)
			if err != nil {
				s.log().WarnContext(ctx, "read idle histogram; planning without it", "key", k, "err", err)
			} else {
				items[i] = it
			}
		}
		chain[i] = &items[i].Histogram
	}
	return items, chain
}

// startLearning gives a new learned session its first plan.
func (s *Service) startLearning(ctx context.Context, sess *Session) {
	items, chain := s.chainItems(ctx, sess)
	s.cfg.Learned.StartLearning(sess, items[0].Key, chain...)
}

// pendingLearning is a return learned on sess that its histograms still
// have to take, once the session's write commits.
type pendingLearning struct {
	id      string
	gap     time.Duration
	outcome Outcome
	level   int  // the plan's level the outcome belongs to
	back    bool // a return after a pause: the user key's ends go down
	items   []IdleHistogramItem
}

// learnReturn learns from activity at now on learned session sess, before
// the activity is recorded: when it is a return, sess gets its new plan and
// the histograms' update is returned for save after the commit; nil
// otherwise.
func (s *Service) learnReturn(ctx context.Context, sess *Session, now time.Time) *pendingLearning {
	if !sess.Learned() {
		return nil
	}
	gap, ok := sess.ReturnGap(now)
	if !ok {
		return nil
	}
	items, chain := s.chainItems(ctx, sess)
	level, back := sess.Idle.Plan.Level, sess.backAfterPause()
	o := s.cfg.Learned.Learn(sess, gap, chain...)
	return &pendingLearning{id: sess.ID, gap: gap, outcome: o, level: level, back: back, items: items}
}

// save writes the histograms a committed return changed, each conditional
// on the version read; a lost race re-reads the item and applies the
// return again, up to three times. Failures are logged.
func (p *pendingLearning) save(ctx context.Context, s *Service) {
	st, ok := s.idleStore()
	if p == nil || !ok {
		return
	}
	for level, it := range p.items {
		observed := observes(p.id, level, p.gap)
		judged := p.outcome != OutcomeNone && level == p.level
		back := p.back && level == 0
		if !observed && !judged && !back {
			continue
		}
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				fresh, err := st.GetIdleHistogram(ctx, it.Key)
				if err != nil {
					s.log().WarnContext(ctx, "re-read idle histogram", "key", it.Key, "err", err)
					break
				}
				it = fresh
				if observed {
					it.Histogram.Observe(p.gap)
				}
				if judged {
					it.Histogram.RecordOutcome(p.outcome == OutcomeHit)
				}
				if back {
					it.Histogram.RecordBack()
				}
			}
			it.UpdatedAt = s.now()
			err := st.PutIdleHistogram(ctx, &it)
			if err == nil {
				break
			}
			if !IsCode(err, CodeConflict) || attempt == 2 {
				s.log().WarnContext(ctx, "write idle histogram; this return is not learned", "key", it.Key, "err", err)
				break
			}
		}
	}
}

// pauseRecord is what a committed pause of a learned session writes to its
// histograms: a miss on the plan's level (a pre-resume nobody came back
// to), or -1; and an end on the user key's (IdleHistogram.RecordPause).
type pauseRecord struct {
	miss int
	end  bool
}

// recordPause writes rec to sess's histograms, best effort, after the
// pause committed; a lost race re-reads, up to three times.
func (s *Service) recordPause(ctx context.Context, sess *Session, rec pauseRecord) {
	st, ok := s.idleStore()
	keys := IdleKeys(sess, s.cfg.IdleUserField)
	if !ok {
		return
	}
	for level, key := range keys {
		miss, end := rec.miss == level, rec.end && level == 0
		if !miss && !end {
			continue
		}
		for attempt := 0; attempt < 3; attempt++ {
			it, err := st.GetIdleHistogram(ctx, key)
			if err != nil {
				s.log().WarnContext(ctx, "read idle histogram for a pause", "key", key, "err", err)
				break
			}
			if miss {
				it.Histogram.RecordOutcome(false)
			}
			if end {
				it.Histogram.RecordPause()
			}
			it.UpdatedAt = s.now()
			if err = st.PutIdleHistogram(ctx, &it); err == nil {
				break
			}
			if !IsCode(err, CodeConflict) {
				s.log().WarnContext(ctx, "write idle histogram for a pause", "key", it.Key, "err", err)
				break
			}
		}
	}
}

// pausing applies a pause for reason to learned sess at now, before the
// write to paused: a pause for idleness or absence plans a pre-resume
// (Session.PausedIdle). It returns what the histograms take once the
// pause commits: a miss (a pre-resume nobody came back to) on the plan's
// level, or an end on the user key's (Session.CountsEnd).
func (s *Service) pausing(sess *Session, reason string) pauseRecord {
	if !sess.Learned() || (reason != ReasonIdle && reason != ReasonAway) {
		if sess.Learned() {
			sess.Idle.PreResumeAt, sess.Idle.PreResumed = time.Time{}, false
		}
		return pauseRecord{miss: -1}
	}
	rec := pauseRecord{miss: -1}
	late := sess.PausedIdle(s.now())
	if late {
		rec.miss = sess.Idle.Plan.Level
	}
	rec.end = sess.CountsEnd(late)
	return rec
}

// PreResume resumes paused sess before its user's predicted return
// (reason predicted): as a resume, but the activity stays the user's and
// the sandbox waits the plan's window for its user (MarkPreResumed).
// Errors: as Resume's.
func (s *Service) PreResume(ctx context.Context, sess *Session) error {
	if err := s.beginResume(ctx, sess, ReasonPredicted, false); err != nil {
		return err
	}
	return s.finishResume(ctx, sess, ReasonPredicted)
}

// resumedActivity records the activity of a resume that made sess running
// at now: a pre-resume waits for its user, any other resume is the user's
// activity, learned from first when it is a return. It returns the
// histograms' update to save after the commit.
func (s *Service) resumedActivity(ctx context.Context, sess *Session, reason string, now time.Time) *pendingLearning {
	if reason == ReasonPredicted {
		sess.MarkPreResumed(now)
		return nil
	}
	p := s.learnReturn(ctx, sess, now)
	sess.MarkActivity(now, s.cfg.Policy.ActivityGranularity)
	return p
}

// PauseDeadlineWhy says why a running session's pause deadline is what it
// is (status: pause_deadline_why): lifetime, away or hold when one of
// those sets it, the plan's reason under the learned policy (thin, missed,
// learned, predicted, cap, or pre_resumed while a pre-resumed sandbox
// waits for its user), fixed otherwise; "" when not running.
func PauseDeadlineWhy(sess *Session) string {
	if sess.State != StateRunning {
		return ""
	}
	switch r := sess.PauseReason(); {
	case r == ReasonAway, r == ReasonLifetime:
		return r
	case sess.HoldUntil.After(sess.IdleDeadline):
		return "hold"
	case !sess.Learned():
		return string(WhyFixed)
	case sess.Idle.PreResumed:
		return "pre_resumed"
	}
	return string(sess.Idle.Plan.Why)
}

// firePreResume is FireTimer on a paused session with a pre-resume: due,
// it is pre-resumed (a conflict means another writer won: TimerIdle);
// not yet, its timer is armed again.
func (s *Service) firePreResume(ctx context.Context, sess *Session) (TimerOutcome, error) {
	if !sess.PreResumeDue(s.now()) {
		if _, err := s.ArmTimer(ctx, sess); err != nil {
			return TimerIdle, err
		}
		return TimerRearmed, nil
	}
	if err := s.PreResume(ctx, sess); err != nil {
		if IsCode(err, CodeConflict) {
			return TimerIdle, nil
		}
		return TimerIdle, err
	}
	return TimerPreResumed, nil
}
