package lifecycle

import (
	"context"
	"time"
)

// DefaultAwayTimeout is a session's away timeout when its create names
// none (docs/DESIGN.md "Client channel": 2 min).
const DefaultAwayTimeout = 2 * time.Minute

// MaxAwayTimeout bounds a per-session away timeout (24 h, the idle timeout's
// upper bound).
const MaxAwayTimeout = 24 * time.Hour

// AwayTimeout returns the away timeout a create asks for: nil seconds is
// DefaultAwayTimeout, 0 turns presence off, else 1..MaxAwayTimeout in
// seconds. Errors: invalid naming away_timeout_seconds.
func AwayTimeout(seconds *int64) (time.Duration, error) {
	if seconds == nil {
		return DefaultAwayTimeout, nil
	}
	if *seconds < 0 || *seconds > int64(MaxAwayTimeout/time.Second) {
		return 0, Errorf(CodeInvalid, "away_timeout_seconds must be 0 (off) or 1..%d", int64(MaxAwayTimeout/time.Second))
	}
	return time.Duration(*seconds) * time.Second, nil
}

// MarkAway records that the session's last visible client left at now: the
// away deadline becomes now + AwayTimeout unless one is set already (the
// earlier absence counts) or presence is off. Only a session that may run
// (provisioning, running, resuming) gets one: a paused session has nothing
// to pause. It returns whether s changed.
func (s *Session) MarkAway(now time.Time) bool {
	if s.AwayTimeout <= 0 || !s.AwayDeadline.IsZero() {
		return false
	}
	switch s.State {
	case StateProvisioning, StateRunning, StateResuming:
	default:
		return false
	}
	s.AwayDeadline = now.Add(s.AwayTimeout)
	return true
}

// MarkPresent records that a visible client is there: the away deadline is
// cleared. It returns whether s changed. Presence never keeps a session
// running: only activity moves the idle deadline.
func (s *Session) MarkPresent() bool {
	if s.AwayDeadline.IsZero() {
		return false
	}
	s.AwayDeadline = time.Time{}
	return true
}

// SetPresence records whether session id has a visible client
// (docs/DESIGN.md "Client channel"): present clears its away deadline, absent
// sets it (MarkAway). Presence changes no state; the write is conditional
// on the session's state and version like every other, retried on a lost
// race. It returns the session as stored and whether a write happened.
// It is called by the client channel, which has checked the caller's token
// for accountID. Errors: not_found, forbidden, conflict (lost every race).
func (s *Service) SetPresence(ctx context.Context, accountID, id string, present bool) (*Session, bool, error) {
	wrote := false
	sess, err := s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		now := s.now()
		changed := false
		if present {
			changed = sess.MarkPresent()
		} else {
			changed = sess.MarkAway(now)
		}
		if !changed {
			return nil
		}
		sess.UpdatedAt = now
		if err := s.commit(ctx, sess, sess.State, Guard{}); err != nil {
			return raced(err)
		}
		wrote = true
		return nil
	})
	return sess, wrote, err
}
