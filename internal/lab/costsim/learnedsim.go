package costsim

import (
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The learned idle policy in the replay: the code of internal/lifecycle
// (LearnedPolicy.StartLearning, Learn, Session.PausedIdle, PreResumeDue,
// MarkPreResumed) driven on the simulated clock, with one histogram per
// key of lifecycle.IdleKeys kept in memory as the table keeps them.

// userField is the metadata field the replay's sessions carry their user
// in (the deployment's SANDMAN_IDLE_USER_FIELD).
const userField = "user"

// learnedState is a sim's learned-policy state: the histograms by key.
type learnedState struct {
	hist map[string]*lifecycle.IdleHistogram
}

// chain returns the histograms of s's keys, creating empty ones.
func (m *sim) chain(s *simSession) (string, []*lifecycle.IdleHistogram) {
	if m.learned.hist == nil {
		m.learned.hist = map[string]*lifecycle.IdleHistogram{}
	}
	row := lifecycle.Session{AccountID: s.tr.Account, Template: s.tr.Template}
	if s.tr.User != "" {
		row.Metadata = map[string]string{userField: s.tr.User}
	}
	if row.AccountID == "" {
		// The i.i.d. trace: every session a user of its own, one account.
		row.AccountID, row.Metadata = "-", map[string]string{userField: s.key()}
	}
	keys := lifecycle.IdleKeys(&row, userField)
	chain := make([]*lifecycle.IdleHistogram, len(keys))
	for i, k := range keys {
		h := m.learned.hist[k]
		if h == nil {
			h = &lifecycle.IdleHistogram{}
			m.learned.hist[k] = h
		}
		chain[i] = h
	}
	return keys[0], chain
}

// key names a session of the i.i.d. trace.
func (s *simSession) key() string { return "s" + strconv.Itoa(s.index) }

// startLearning gives a new session of a learned scenario its first plan.
func (m *sim) startLearning(s *simSession) {
	if !m.sc.Learned {
		return
	}
	key, chain := m.chain(s)
	m.cfg.Learned.StartLearning(&s.row, key, chain...)
	m.noPreResume(s)
}

// noPreResume drops the plan's pre-resume in a scenario without them.
func (m *sim) noPreResume(s *simSession) {
	if m.sc.NoPreResume {
		s.row.Idle.Plan.PreResume = false
	}
}

// learnReturn runs before activity at at is recorded: a return (a gap of
// lifecycle.MinReturnGap or more) is learned from.
func (m *sim) learnReturn(s *simSession, at time.Duration) {
	if !m.sc.Learned || !s.created {
		return
	}
	gap, ok := s.row.ReturnGap(m.now(at))
	if !ok {
		return
	}
	_, chain := m.chain(s)
	pre := s.row.Idle.PreResumed
	switch m.cfg.Learned.Learn(&s.row, gap, chain...) {
	case lifecycle.OutcomeEarly:
		if !m.sc.NoPreResume {
			m.res.PreResumeEarly++
		}
	case lifecycle.OutcomeHit:
		if pre {
			m.res.PreResumeHits++
			m.account(s).PreResumeHits++
		}
	}
	m.noPreResume(s)
}

// pausedLearned follows a pause for idleness or absence at at: a
// pre-resume ends unused, or one is planned.
func (m *sim) pausedLearned(s *simSession, at time.Duration) {
	if !m.sc.Learned {
		return
	}
	plan := s.row.Idle.Plan
	late := s.row.PausedIdle(m.now(at))
	_, chain := m.chain(s)
	if late {
		m.res.PreResumeFalse++
		if plan.Level >= 0 && plan.Level < len(chain) {
			chain[plan.Level].RecordOutcome(false)
		}
	}
	if s.row.CountsEnd(late) {
		chain[0].RecordPause()
	}
	if p := s.row.Idle.PreResumeAt; !p.IsZero() {
		m.push(event{at: p.Sub(m.cfg.Epoch), kind: evPreResume, sess: s.index})
	}
}

// preResume is a pre-resume timer firing at at: a session still paused and
// due is resumed with reason predicted, its idle deadline set to wait for
// its user (Session.MarkPreResumed). While the control plane is down the
// timer is lost.
func (m *sim) preResume(i int, at time.Duration) {
	s := &m.sessions[i]
	now := m.now(at)
	if m.sc.Outage.Down(at) || !s.row.PreResumeDue(now) {
		return
	}
	m.res.Resumes++
	m.res.PreResumes++
	m.account(s).PreResumes++
	m.transition(s, lifecycle.StateResuming, lifecycle.ReasonPredicted, at)
	s.row.MarkPreResumed(now)
	if m.guard {
		probe := s.row.Clone()
		probe.RunningSince = now
		s.row.SandboxExpiresAt = now.Add(m.pol.ProviderTimeout(probe, now))
	}
	m.transition(s, lifecycle.StateRunning, lifecycle.ReasonPredicted, at)
	m.startBilling(s, at)
	m.wrote(s, at)
	s.returnedAt, s.returned = at, true
}
