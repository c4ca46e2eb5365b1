package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Resume brings a paused session back: paused → resuming (with a lease), the
// provider's resume (ResumeAttempts tries with backoff) with the provider
// timeout set to the new pause deadline plus grace, then running with a fresh
// preview URL. It counts as activity. A running session is returned as it is;
// an archived one is unarchived (a restore of its newest ready checkpoint,
// reason unarchive: tiers_service.go) and returned restoring.
// Errors: not_found, forbidden, conflict (pausing, resuming, or a final
// state), quota_exceeded (the account is at Config.MaxRunning), unavailable (TypeSandboxExpired: the provider lost the sandbox and
// the session is now expired; TypeSandboxUnreachable: back to paused, with a
// retry-after).
func (s *Service) Resume(ctx context.Context, accountID, id string) (*Session, error) {
	return s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		switch sess.State {
		case StateRunning:
			return nil
		case StatePaused:
			return s.resume(ctx, sess, ReasonRequest)
		case StateArchived:
			return s.unarchive(ctx, sess) // answers the session restoring
		case StatePausing, StateResuming, StateProvisioning:
			return &Error{Code: CodeConflict, RetryAfter: time.Second,
				Message: "the session is " + string(sess.State) + "; retry shortly"}
		default:
			return Errorf(CodeConflict, "the session is %s and cannot be resumed", sess.State)
		}
	})
}

// resume runs the resume of paused sess, its transitions carrying reason
// (ReasonRequest, or ReasonReturn with sess.ReturnResumedAt set by the
// caller: the paused → resuming write stores it, conditional on the version
// it was read at).
func (s *Service) resume(ctx context.Context, sess *Session, reason string) error {
	if err := s.beginResume(ctx, sess, reason, false); err != nil {
		return err
	}
	return s.finishResume(ctx, sess, reason)
}

// beginResume commits paused sess → resuming for reason, conditional on the
// version it was read at, taking a running slot. queued marks the resume
// as handed to a background job (Session.ResumeQueued: the job finishes
// it, BringUp). Errors: conflict (raced), quota_exceeded, the store's.
func (s *Service) beginResume(ctx context.Context, sess *Session, reason string, queued bool) error {
	sess.RunningLimit = s.maxRunning(ctx) // paused → resuming takes a running slot
	from := sess.State
	if err := sess.Transition(StateResuming, reason, s.now(), s.cfg.Policy); err != nil {
		return raced(err)
	}
	sess.ResumeQueued = queued
	if err := s.commit(ctx, sess, from, Guard{}); err != nil {
		return raced(err)
	}
	return nil
}

// finishResume is the rest of a resume begun by beginResume: the
// provider's resume, then resuming → running (or the state the provider
// shows after a failure), both transitions carrying reason.
func (s *Service) finishResume(ctx context.Context, sess *Session, reason string) error {
	// No bound on the whole call: each attempt has its own (resumeWithRetry).
	return settle(ctx, 0, func(ctx context.Context) (Sandbox, error) {
		return s.resumeWithRetry(ctx, sess)
	}, func(wctx context.Context, sb Sandbox, err error) error {
		to := StateRunning
		var learned *pendingLearning
		if err != nil {
			// As for pause: ask again before believing a failure, unless
			// the provider refused it before acting.
			obs, oerr := s.afterFailure(wctx, sess, err, StatePaused)
			if oerr != nil {
				s.log().WarnContext(ctx, "resume outcome unknown; the lease reconciles it",
					"session_id", sess.ID, "err", err, "observe_err", oerr)
				return s.providerError(err, "resume the sandbox")
			}
			to, sb = obs.state, obs.sandbox
		}
		if recovering, rerr := s.lost(wctx, sess, to); recovering {
			return rerr
		} else if rerr != nil {
			to = StateExpired // lost and nothing to recover with: expired as before
		}
		if to == StateRunning {
			learned = s.resumedActivity(wctx, sess, reason, s.now())
			if sb.PreviewURL != "" {
				sess.PreviewURL = sb.PreviewURL
			}
			sess.PreviewURL = s.appPreviewURL(wctx, sess, sess.PreviewURL)
			sess.SandboxExpiresAt = sb.ExpiresAt
		}
		if werr := s.transition(wctx, sess, to, reason, Guard{}); werr != nil {
			if to != StateRunning {
				s.log().ErrorContext(ctx, "record failed resume", "session_id", sess.ID, "to", to, "err", werr)
				return s.providerError(err, "resume the sandbox")
			}
			serr := s.settledElsewhere(wctx, sess, StateRunning, werr)
			if serr != nil {
				// Someone else moved it meanwhile (a delete): do not leave a
				// running sandbox behind a session that no longer wants it.
				if cur, gerr := s.cfg.Store.GetSession(wctx, sess.ID); gerr == nil && cur.State.Final() {
					s.killQuietly(wctx, sess, sess.SandboxID)
				}
			}
			return serr
		}
		switch to {
		case StateRunning:
			learned.save(wctx, s)
			return nil
		case StateExpired:
			return s.providerError(ErrSandboxGone, "resume the sandbox")
		}
		return s.providerError(notGone(err, "resume", sess.SandboxID), "resume the sandbox")
	})
}

// resumeWithRetry asks the provider to resume, retrying transient failures.
func (s *Service) resumeWithRetry(ctx context.Context, sess *Session) (Sandbox, error) {
	attempts, backoff := s.cfg.ResumeAttempts, s.cfg.ResumeBackoff
	provider := s.provider(sess)
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			wait := backoff << (i - 1)
			if ra := RetryAfter(err); ra > wait {
				wait = ra
			}
			if serr := s.sleep(ctx, wait); serr != nil {
				return Sandbox{}, err
			}
		}
		now := s.now()
		probe := sess.Clone()
		probe.MarkActivity(now, s.cfg.Policy.ActivityGranularity)
		probe.RunningSince = now
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		var sb Sandbox
		sb, err = provider.Resume(pctx, sess.SandboxID, s.cfg.Policy.ProviderTimeout(probe, now))
		cancel()
		if err == nil {
			return sb, nil
		}
		if !errors.Is(err, ErrProviderTransient) && !errors.Is(err, context.DeadlineExceeded) {
			return Sandbox{}, err
		}
		s.log().WarnContext(ctx, "resume attempt failed", "session_id", sess.ID, "attempt", i+1, "err", err)
	}
	return Sandbox{}, err
}
