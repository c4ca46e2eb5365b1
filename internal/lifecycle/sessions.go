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

// List returns accountID's sessions newest first, limit per page (1..MaxListLimit),
// after cursor. Errors: invalid (limit or cursor).
func (s *Service) List(ctx context.Context, accountID, cursor string, limit int) (SessionPage, error) {
	if limit < 1 || limit > MaxListLimit {
		return SessionPage{}, Errorf(CodeInvalid, "limit must be between 1 and %d", MaxListLimit)
	}
	return s.cfg.Store.ListSessions(ctx, accountID, cursor, limit)
}

// Status returns the session and its lifecycle envelope from the database
// alone: no provider call, not activity (docs/DESIGN.md). Errors: not_found,
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
	return s.activity(ctx, accountID, id, 0)
}

// Hold is a heartbeat that also records a busy hold of holdSeconds
// (docs/DESIGN.md "Client channel"; API key only, the HTTP edge's rule): the
// session is not paused for idleness or absence before now + holdSeconds,
// and the provider-side timeout follows (Policy.ProviderTimeout). A hold
// never shortens one already recorded, and never postpones a max lifetime.
// It reports whether a write happened. Errors: invalid (holdSeconds out of
// Policy.HoldDuration's bounds), and as Heartbeat.
func (s *Service) Hold(ctx context.Context, accountID, id string, holdSeconds int64) (bool, error) {
	d, err := s.cfg.Policy.HoldDuration(holdSeconds)
	if err != nil {
		return false, err
	}
	return s.activity(ctx, accountID, id, d)
}

// activity records activity and, when hold > 0, a busy hold of hold.
func (s *Service) activity(ctx context.Context, accountID, id string, hold time.Duration) (bool, error) {
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
		learned := s.learnReturn(ctx, sess, now) // a return's new plan sets the deadline
		recorded := sess.RecordActivity(now, s.cfg.Policy.ActivityGranularity)
		held := hold > 0 && sess.Hold(now, hold)
		if !recorded && !held {
			return nil
		}
		sess.UpdatedAt = now
		if s.cfg.Policy.NeedsProviderRefresh(sess, now) {
			if err := s.refreshProviderTimeout(ctx, sess, now); errors.Is(err, ErrSandboxGone) {
				// E2B answers 404 for a sandbox that paused itself: the
				// table is behind. Put it right and answer as it truly is.
				if err := s.heartbeatOnMissing(ctx, sess); err != nil || sess.State != StateRunning {
					return err
				}
			}
		}
		if err := s.commit(ctx, sess, StateRunning, Guard{}); err != nil {
			return raced(err)
		}
		learned.save(ctx, s)
		wrote = true
		return nil
	})
	return wrote, err
}

// refreshProviderTimeout pushes the provider-side timeout out (see
// Policy.ProviderTimeout) and records it on sess (not yet written).
func (s *Service) refreshProviderTimeout(ctx context.Context, sess *Session, now time.Time) error {
	timeout := s.cfg.Policy.ProviderTimeout(sess, now)
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	expires, err := now.Add(timeout), error(nil)
	if r, ok := As[TimeoutReporter](s.provider(sess)); ok {
		expires, err = r.SetTimeoutUntil(pctx, sess.SandboxID, timeout)
	} else {
		err = s.provider(sess).SetTimeout(pctx, sess.SandboxID, timeout)
	}
	if err != nil {
		s.log().WarnContext(ctx, "extend provider timeout", "session_id", sess.ID, "sandbox_id", sess.SandboxID, "err", err)
		return err
	}
	sess.SandboxExpiresAt = expires
	return nil
}

// heartbeatOnMissing handles a heartbeat whose provider timeout refresh found
// no running sandbox: it reconciles the session with the provider and
// reports its true state (nil while it is still running: the heartbeat goes
// on).
func (s *Service) heartbeatOnMissing(ctx context.Context, sess *Session) error {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	if _, err := s.Reconcile(wctx, sess); err != nil {
		s.log().WarnContext(ctx, "reconcile after a failed timeout refresh", "session_id", sess.ID, "err", err)
		return raced(err)
	}
	switch sess.State {
	case StatePaused:
		return &Error{Code: CodeConflict, Type: TypeSandboxPaused,
			Message: "the session is paused; resume it before sending activity"}
	case StateExpired:
		return s.providerError(ErrSandboxGone, "extend the sandbox's timeout")
	}
	return nil
}

// Delete marks the session killed, then kills its sandbox. Deleting a
// killed session succeeds without a provider call; so does a delete that
// loses its race to another delete (deleting is idempotent).
//
// The kill is recorded before the provider is asked: the
// provider's own "killed" webhook, which may land before the provider's
// answer does, then finds the session killed and changes nothing, so a
// kill Sandman asked for is never taken for an expiry. A sandbox whose kill
// fails is killed by the sweep, which reaps every sandbox of a killed
// session (ReapOrphan); the failure is logged.
// A delete wins over a snapshot, resume or create in flight: it re-reads
// after each lost race (up to maxDeleteRetries times) until its write of
// killed commits; the operation in flight then loses its own next write.
// Errors: not_found, forbidden, conflict (lost maxDeleteRetries races in a
// row, to writers other than a delete).
func (s *Service) Delete(ctx context.Context, accountID, id string) (*Session, error) {
	// The caller waits on the kill: a user call in the provider's call
	// limiter, not a background one like the sweep's reaping.
	ctx = WithCallPriority(ctx, PriorityUser)
	sess, err := s.retryConflictsN(ctx, accountID, id, maxDeleteRetries, func(sess *Session) error {
		if sess.State == StateKilled {
			return nil
		}
		live := sess.SandboxID != "" && !sess.State.Final()
		if err := s.transition(ctx, sess, StateKilled, ReasonRequest, Guard{}); err != nil {
			return raced(err)
		}
		if live {
			s.killDeleted(ctx, sess)
		}
		return nil
	})
	if IsLostRace(err) {
		return s.deletedMeanwhile(ctx, accountID, id, err)
	}
	return sess, err
}

// deletedMeanwhile answers a delete that lost its last race: when the
// session is killed by now (another delete won), the delete succeeded.
func (s *Service) deletedMeanwhile(ctx context.Context, accountID, id string, raceErr error) (*Session, error) {
	cur, err := s.owned(ctx, accountID, id)
	if err == nil && cur.State == StateKilled {
		return cur, nil
	}
	return nil, raceErr
}

// killDeleted kills the sandbox of a session just marked killed, even when
// the caller has gone; a failure is logged and left to the sweep.
func (s *Service) killDeleted(ctx context.Context, sess *Session) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if err := s.provider(sess).Kill(pctx, sess.SandboxID); err != nil && !errors.Is(err, ErrSandboxGone) {
		s.log().WarnContext(ctx, "kill the sandbox of a deleted session; the sweep reaps it",
			"session_id", sess.ID, "sandbox_id", sess.SandboxID, "err", err)
	}
}
