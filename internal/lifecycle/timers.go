package lifecycle

import (
	"context"
	"time"
)

// Timers arms one-shot timers that call Service.FireTimer for a session at
// a given time (docs/DESIGN.md "Precise pausing"): an SQS message with a delay in
// AWS (internal/timer/sqstimer), an in-process timer locally (internal/timer/localtimer).
// A timer is a hint, never the record: the fired timer re-reads the session
// and pauses only if it is still due, so a duplicate, early or late timer is
// harmless, and the sweep stays the backstop for a lost one.
type Timers interface {
	// Arm asks for Service.FireTimer(sessionID) at or shortly after at (UTC).
	// Arming twice, or for a time already past (fire as soon as possible),
	// is allowed. Errors: unavailable when the timer could not be armed; the
	// caller logs it and the sweep covers the session.
	Arm(ctx context.Context, sessionID string, at time.Time) error
}

// DefaultTimerHorizon is how far ahead a committed pause deadline arms its
// timer at once (Config.TimerHorizon): the sweep interval of docs/DESIGN.md
// (5 min) plus a 1 min margin, so every deadline the next tick could miss is
// armed either by the write that set it or by the tick before it.
const DefaultTimerHorizon = 6 * time.Minute

// armIfSoon arms sess's timer when it is running with a pause deadline
// before now + TimerHorizon. It is called on every committed write (commit),
// the one place every deadline change passes through: create, resume,
// heartbeat, webhook, and any later deadline (an away deadline) alike. A
// failed arm is logged, not returned: the write stands and the sweep, which
// arms again each tick, pauses the session if no timer does.
func (s *Service) armIfSoon(ctx context.Context, sess *Session) {
	if _, err := s.ArmTimer(ctx, sess); err != nil {
		s.log().WarnContext(ctx, "arm pause timer; the sweep covers it", "session_id", sess.ID,
			"at", sess.PauseDeadline(), "err", err)
	}
}

// ArmTimer arms sess's timer at its pause deadline when it is running and
// the deadline falls before now + TimerHorizon; the sweep calls it for every
// session its window finds (internal/sweep). It reports whether a timer was
// asked for. Errors: as Timers.Arm.
func (s *Service) ArmTimer(ctx context.Context, sess *Session) (bool, error) {
	if s.cfg.Timers != nil && sess.State == StatePaused && sess.Learned() && !sess.Idle.PreResumeAt.IsZero() {
		// A pre-resume: armed however far ahead (a transport with a
		// shorter delay fires early and FireTimer arms again).
		if err := s.cfg.Timers.Arm(ctx, sess.ID, sess.Idle.PreResumeAt); err != nil {
			return false, err
		}
		return true, nil
	}
	if s.cfg.Timers == nil || sess.State != StateRunning {
		return false, nil
	}
	at := sess.PauseDeadline()
	if at.IsZero() || !at.Before(s.now().Add(s.cfg.TimerHorizon)) {
		return false, nil
	}
	if err := s.cfg.Timers.Arm(ctx, sess.ID, at); err != nil {
		return false, err
	}
	return true, nil
}

// TimerOutcome says what a fired timer did.
type TimerOutcome string

// The outcomes of FireTimer.
const (
	TimerPaused  TimerOutcome = "paused"  // the session was due and is now paused
	TimerRearmed TimerOutcome = "rearmed" // the deadline moved: a timer is armed for the new one
	TimerIdle    TimerOutcome = "noop"    // nothing to do: gone, not running, deadline beyond the horizon, or another writer won
	// TimerPreResumed: a paused learned session was pre-resumed before
	// its user's predicted return (learnedservice.go).
	TimerPreResumed TimerOutcome = "pre_resumed"
)

// FireTimer is what a fired timer calls: it re-reads the session and pauses
// it only if it is still running and due (PauseIfDue: the write's condition
// re-checks the deadline, so a heartbeat landing meanwhile wins). When the
// deadline moved but still falls before now + TimerHorizon it re-arms for
// the new deadline; further out, the sweep arms it when its window reaches
// it. Unknown, paused or otherwise non-running sessions are left alone, so
// a duplicate timer pauses once.
//
// Accuracy (ours, see the package doc of internal/lab/costsim): the deadline is
// the recorded one, which counts the heartbeat coalescing window
// (Policy.ActivityGranularity, 30 s; Session.MarkActivity), so a timer never
// pauses before the user's real idle timeout runs out, and at most the
// window plus its own lateness after it.
// Errors: as PauseIfDue except conflicts (a lost race is TimerIdle), and as
// Store.GetSession except not_found; a returned error asks the timer's
// transport to deliver it again.
func (s *Service) FireTimer(ctx context.Context, sessionID string) (TimerOutcome, error) {
	ctx = WithActor(ctx, ActorTimer)
	sess, err := s.cfg.Store.GetSession(ctx, sessionID)
	if IsCode(err, CodeNotFound) {
		return TimerIdle, nil
	}
	if err != nil {
		return TimerIdle, err
	}
	if sess.State == StatePaused && sess.Learned() && !sess.Idle.PreResumeAt.IsZero() {
		return s.firePreResume(ctx, sess)
	}
	if sess.State != StateRunning {
		return TimerIdle, nil
	}
	now := s.now()
	if !sess.Due(now) {
		armed, err := s.ArmTimer(ctx, sess)
		if err != nil || !armed {
			return TimerIdle, err
		}
		return TimerRearmed, nil
	}
	if err := s.PauseIfDue(ctx, sess, now); err != nil {
		if IsCode(err, CodeConflict) {
			// A heartbeat, a snapshot or another timer won; the write that
			// won armed whatever timer it needs.
			return TimerIdle, nil
		}
		return TimerIdle, err
	}
	return TimerPaused, nil
}
