package lifecycle

import (
	"context"
	"errors"
	"time"
)

// settleTimeout bounds the write that records a provider call's outcome. It
// runs even when the caller's context is done, so a cancelled request does not
// strand a session in a transitional state until its lease runs out.
const settleTimeout = 10 * time.Second

func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// Pause pauses a running session: running → pausing (conditional, plus guard),
// the provider's pause, then pausing → paused. The provider saying the
// sandbox is gone makes it expired; any other provider failure rolls it back
// to running so it is retried later. Used by snapshot (reason request) and
// the sweep (reason idle, guard.DueBy = now so a heartbeat that landed
// mid-sweep wins).
// Errors: conflict (lost the race or not running: nothing written),
// unavailable (TypeSandboxExpired or TypeSandboxUnreachable).
func (s *Service) Pause(ctx context.Context, sess *Session, reason string, guard Guard) error {
	if err := s.transition(ctx, sess, StatePausing, reason, guard); err != nil {
		return raced(err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	err := s.Provider.Pause(pctx, sess.SandboxID)
	cancel()
	wctx, wcancel := settleContext(ctx)
	defer wcancel()
	switch {
	case err == nil:
		if werr := s.transition(wctx, sess, StatePaused, reason, Guard{}); werr != nil {
			return s.settledElsewhere(wctx, sess, StatePaused, werr)
		}
		return nil
	case errors.Is(err, ErrSandboxGone):
		if werr := s.transition(wctx, sess, StateExpired, reason, Guard{}); werr != nil {
			s.log().ErrorContext(ctx, "mark session expired", "session_id", sess.ID, "err", werr)
		}
	default:
		if werr := s.transition(wctx, sess, StateRunning, reason, Guard{}); werr != nil {
			s.log().ErrorContext(ctx, "roll back failed pause", "session_id", sess.ID, "err", werr)
		}
	}
	return s.providerError(err, "pause the sandbox")
}

// settledElsewhere handles a lost race on the write that records a provider
// outcome: when someone else (a webhook, a reconcile) already recorded the
// same state, the operation succeeded; otherwise the conflict stands.
func (s *Service) settledElsewhere(ctx context.Context, sess *Session, want State, werr error) error {
	if !IsCode(werr, CodeConflict) {
		return werr
	}
	cur, err := s.Store.GetSession(ctx, sess.ID)
	if err != nil {
		return werr
	}
	if cur.State == want {
		*sess = *cur
		return nil
	}
	return werr
}

// Snapshot pauses the session now. It is idempotent: a paused session
// succeeds without a provider call (DESIGN.md). Errors: not_found,
// forbidden, conflict (transitional or final state), unavailable (provider
// failure: the session stays as it truly is).
func (s *Service) Snapshot(ctx context.Context, accountID, id string) (*Session, error) {
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
			return Errorf(CodeConflict, "the session is %s and has no sandbox to snapshot", sess.State)
		}
	})
}
