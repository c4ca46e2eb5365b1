package lifecycle

import (
	"context"
	"time"
)

// ReturnResumeInterval bounds resumes on return: at most one per session
// per interval (docs/WAKE.md "Resume on return").
const ReturnResumeInterval = time.Minute

// ResumeOnReturnDefault returns a create's resume_on_return: the flag as
// given, or when nil, on exactly when presence is on (away > 0).
func ResumeOnReturnDefault(flag *bool, away time.Duration) bool {
	if flag != nil {
		return *flag
	}
	return away > 0
}

// mayResumeOnReturn reports whether a visible client appearing at now
// resumes s with reason return: s is paused, resumes on return, its pause
// was not asked for by the API (PausedOnRequest, or a last transition of
// reason request: a resume the API asked for that failed back to paused,
// or an item written before PausedOnRequest existed), and no resume on
// return started within ReturnResumeInterval before now.
func (s *Session) mayResumeOnReturn(now time.Time) bool {
	return s.State == StatePaused && s.ResumeOnReturn && !s.PausedOnRequest && s.Reason != ReasonRequest &&
		(s.ReturnResumedAt.IsZero() || now.Sub(s.ReturnResumedAt) >= ReturnResumeInterval)
}

// ReturnVisible is what the client channel calls when a visible client
// appears (a hello, or a heartbeat with visible true): a paused session that
// may resume on return (see mayResumeOnReturn) is resumed with reason
// return; anything else is left as it is. The paused → resuming write
// stores ReturnResumedAt and is conditional on the version read, so of
// concurrent calls one resumes and the others find the session resuming (or
// the minute not passed) and do nothing. With Config.ResumeJobs or ReadinessJobs the
// resume finishes in the background, as an open's does (openResume): the
// channel answers at once and pushes the session's moves. It returns the session as it then
// is and whether it started a resume. Errors: not_found, forbidden, and a
// resume's (quota_exceeded, unavailable).
func (s *Service) ReturnVisible(ctx context.Context, accountID, id string) (*Session, bool, error) {
	resumed := false
	sess, err := s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		now := s.now()
		resumed = false
		if !sess.mayResumeOnReturn(now) {
			return nil
		}
		sess.ReturnResumedAt = now
		resumed = true
		return s.openResume(ctx, sess, ReasonReturn)
	})
	return sess, resumed, err
}
