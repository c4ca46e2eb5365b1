package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Pause pauses a running session: running → pausing (conditional, plus guard),
// the provider's pause, then pausing → paused. Used by snapshot (reason
// request) and the sweep (reason idle, guard.DueBy = now so a heartbeat that
// landed mid-sweep wins).
//
// A failed pause is not taken at its word: a timeout may hide a pause that
// happened, and "gone" may be one of E2B's spurious 404s. The session is put
// in the state the provider reports when asked again (Service.observe):
// paused (the pause happened: success), running (rolled back, retried later),
// expired (gone, confirmed). When the provider cannot say, the session stays
// pausing and the sweep reconciles it once its lease runs out.
// Errors: conflict (lost the race or not running: nothing written),
// unavailable (TypeSandboxExpired or TypeSandboxUnreachable).
func (s *Service) Pause(ctx context.Context, sess *Session, reason string, guard Guard) error {
	if err := s.transition(ctx, sess, StatePausing, reason, guard); err != nil {
		return raced(err)
	}
	// An automatic pause may record a checkpoint (docs/CHECKPOINTS.md
	// "Automatic checkpoints"): before the pause where the provider
	// snapshots only running sandboxes, else once it is paused.
	taken := s.preparePauseCheckpoint(ctx, sess, reason)
	provider := s.provider(sess)
	return settle(ctx, s.cfg.CallTimeout, func(pctx context.Context) (struct{}, error) {
		return struct{}{}, provider.Pause(pctx, sess.SandboxID)
	}, func(wctx context.Context, _ struct{}, err error) error {
		to := StatePaused
		if err != nil {
			obs, oerr := s.afterFailure(wctx, sess, err, StateRunning)
			if oerr != nil {
				s.log().WarnContext(ctx, "pause outcome unknown; the lease reconciles it",
					"session_id", sess.ID, "err", err, "observe_err", oerr)
				return s.providerError(err, "pause the sandbox")
			}
			to = obs.state
		}
		rec := pauseRecord{miss: -1}
		if to == StatePaused {
			rec = s.pausing(sess, reason) // a pre-resume planned, or one spent
		}
		if werr := s.transition(wctx, sess, to, reason, Guard{}); werr != nil {
			if err == nil || to == StatePaused {
				return s.settledElsewhere(wctx, sess, to, werr)
			}
			s.log().ErrorContext(ctx, "record failed pause", "session_id", sess.ID, "to", to, "err", werr)
		}
		switch to {
		case StatePaused:
			s.checkpointAfterPause(wctx, sess, reason, taken)
			s.recordPause(wctx, sess, rec)
			return nil
		case StateExpired:
			return s.providerError(ErrSandboxGone, "pause the sandbox")
		}
		return s.providerError(notGone(err, "pause", sess.SandboxID), "pause the sandbox")
	})
}

// PauseIfDue pauses a running session whose pause deadline is at or before
// now (the sweep's idle phase, reason idle). The write's condition re-checks
// the deadline, so a heartbeat that landed since sess was read wins. A pause
// it records reports its lag (Metrics.PauseLag: the service's clock when the
// pause was recorded minus the deadline).
// Errors: as Pause; conflict also when sess is no longer due.
func (s *Service) PauseIfDue(ctx context.Context, sess *Session, now time.Time) error {
	if !sess.Due(now) {
		return Errorf(CodeConflict, "session %s is %s and not due to pause", sess.ID, sess.State)
	}
	deadline := sess.PauseDeadline()
	if err := s.Pause(ctx, sess, sess.PauseReason(), Guard{DueBy: now}); err != nil {
		return err
	}
	s.cfg.Metrics.PauseLag(max(s.now().Sub(deadline), 0))
	return nil
}

// notGone turns a "gone" that a second look contradicted into a transient
// failure, so the caller hears "retry" rather than "expired".
func notGone(err error, op, sandboxID string) error {
	if errors.Is(err, ErrSandboxGone) {
		return Transientf(op, sandboxID, 0, "the provider reported the sandbox gone, then present")
	}
	return err
}

// afterFailure says what a failed provider call left the sandbox as: was,
// the state before the call, when the provider refused the request before
// acting on it (Refused: a 429), without another call; otherwise what the
// provider says when asked again (observe). A rate-limited pause thus rolls
// back to running at once and stays due, instead of waiting in pausing for
// its lease to run out because the second look was rate limited too.
func (s *Service) afterFailure(ctx context.Context, sess *Session, err error, was State) (observation, error) {
	if Refused(err) {
		return observation{state: was}, nil
	}
	return s.observe(ctx, sess)
}

// observation is what the provider says of a sandbox when asked again.
type observation struct {
	state   State   // StateRunning, StatePaused or StateExpired
	sandbox Sandbox // when it exists
}

// observe reads a sandbox's state through the provider's control API (never
// waking it). "Gone" is confirmed by a second read after ConfirmGoneDelay:
// E2B reports 1-3 % of sandboxes "not found" long before their timeout
// (docs/providers/e2b.md), and expiring a session clears its sandbox for good.
// Errors: the provider could not say (transient, or the second read failed).
func (s *Service) observe(ctx context.Context, sess *Session) (observation, error) {
	provider := s.provider(sess)
	for attempt := 0; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		sb, err := provider.Get(pctx, sess.SandboxID)
		cancel()
		switch {
		case err == nil && sb.State == SandboxPaused:
			return observation{state: StatePaused, sandbox: sb}, nil
		case err == nil:
			return observation{state: StateRunning, sandbox: sb}, nil
		case !errors.Is(err, ErrSandboxGone):
			return observation{}, err
		case attempt > 0:
			return observation{state: StateExpired}, nil
		}
		if err := s.sleep(ctx, s.cfg.ConfirmGoneDelay); err != nil {
			return observation{}, err
		}
	}
}

// settledElsewhere handles a lost race on the write that records a provider
// outcome: when someone else (a webhook, a reconcile) already recorded the
// same state, the operation succeeded; otherwise the conflict stands.
func (s *Service) settledElsewhere(ctx context.Context, sess *Session, want State, werr error) error {
	if !IsCode(werr, CodeConflict) {
		return werr
	}
	cur, err := s.cfg.Store.GetSession(ctx, sess.ID)
	if err != nil {
		return werr
	}
	if cur.State == want {
		*sess = *cur
		return nil
	}
	return werr
}

// PauseNow pauses the session now, for POST /v1/sessions/{id}/pause. It is
// idempotent: a paused session succeeds without a provider call
// (docs/DESIGN.md). Errors: not_found, forbidden, conflict (transitional or
// final state), unavailable (provider failure: the session stays as it
// truly is).
func (s *Service) PauseNow(ctx context.Context, accountID, id string) (*Session, error) {
	// The caller waits on this pause (and on the reads after a failed
	// one): user calls in the provider's call limiter, not the sweep's
	// background pauses.
	ctx = WithCallPriority(ctx, PriorityUser)
	return s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		switch sess.State {
		case StatePaused:
			return nil
		case StateRunning:
			return s.Pause(ctx, sess, ReasonRequest, Guard{})
		case StatePausing, StateResuming, StateProvisioning:
			return &Error{Code: CodeConflict, RetryAfter: time.Second,
				Message: "the session is " + string(sess.State) + "; retry shortly"}
		default:
			return Errorf(CodeConflict, "the session is %s and has no sandbox to pause", sess.State)
		}
	})
}
