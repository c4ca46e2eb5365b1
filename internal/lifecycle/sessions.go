package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Get returns one of accountID's sessions. Errors: not_found, forbidden.
func (s *Service) Get(ctx context.Context, accountID, id string) (*Session, error) {
	return s.owned(ctx, accountID, id)
}

// List returns accountID's sessions newest first, limit per page (1..100),
// after cursor. Errors: invalid (limit or cursor).
func (s *Service) List(ctx context.Context, accountID, cursor string, limit int) (SessionPage, error) {
	if limit < 1 || limit > 100 {
		return SessionPage{}, Errorf(CodeInvalid, "limit must be between 1 and 100")
	}
	return s.Store.ListSessions(ctx, accountID, cursor, limit)
}

// Status returns the session and its lifecycle envelope from the database
// alone: no provider call, not activity (DESIGN.md). Errors: not_found,
// forbidden.
func (s *Service) Status(ctx context.Context, accountID, id string) (*Session, Envelope, error) {
	sess, err := s.owned(ctx, accountID, id)
	if err != nil {
		return nil, Envelope{}, err
	}
	return sess, NewEnvelope(sess, s.now()), nil
}

// Heartbeat records activity on a running session. Heartbeats within
// Policy.ActivityGranularity of the last recorded one are answered without a
// write. When the provider would pause the sandbox before the new pause
// deadline plus grace, its timeout is pushed out (Policy.ProviderTimeout,
// with headroom; a failure there is logged, the heartbeat still counts). It returns whether a write happened.
// Errors: not_found, forbidden, conflict (TypeSandboxPaused when paused or
// pausing; plain conflict for any other non-running state).
func (s *Service) Heartbeat(ctx context.Context, accountID, id string) (bool, error) {
	wrote := false
	_, err := s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		switch sess.State {
		case StateRunning:
		case StatePaused, StatePausing:
			return &Error{Code: CodeConflict, Type: TypeSandboxPaused,
				Message: "the session is paused; resume it before sending activity"}
		default:
			return Errorf(CodeConflict, "the session is %s; only a running session takes activity", sess.State)
		}
		now := s.now()
		if !sess.RecordActivity(now, s.Policy.ActivityGranularity) {
			return nil
		}
		sess.UpdatedAt = now
		if s.Policy.NeedsProviderRefresh(sess, now) {
			s.refreshProviderTimeout(ctx, sess, now)
		}
		if err := s.commit(ctx, sess, StateRunning, Guard{}); err != nil {
			return raced(err)
		}
		wrote = true
		return nil
	})
	return wrote, err
}

// refreshProviderTimeout pushes the provider-side timeout out (see
// Policy.ProviderTimeout) and records it on sess (not yet written).
func (s *Service) refreshProviderTimeout(ctx context.Context, sess *Session, now time.Time) {
	timeout := s.Policy.ProviderTimeout(sess, now)
	pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	if err := s.Provider.SetTimeout(pctx, sess.SandboxID, timeout); err != nil {
		s.log().WarnContext(ctx, "extend provider timeout", "session_id", sess.ID, "sandbox_id", sess.SandboxID, "err", err)
		return
	}
	sess.SandboxExpiresAt = now.Add(timeout)
}

// Delete kills the session's sandbox and marks it killed. Deleting a killed
// session succeeds without a provider call. Errors: not_found, forbidden,
// unavailable (the provider could not kill it; nothing changed).
func (s *Service) Delete(ctx context.Context, accountID, id string) (*Session, error) {
	return s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		if sess.State == StateKilled {
			return nil
		}
		if sess.SandboxID != "" && !sess.State.Final() {
			pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
			err := s.Provider.Kill(pctx, sess.SandboxID)
			cancel()
			if err != nil && !errors.Is(err, ErrSandboxGone) {
				return s.providerError(err, "kill the sandbox")
			}
		}
		return raced(s.transition(ctx, sess, StateKilled, ReasonRequest, Guard{}))
	})
}
