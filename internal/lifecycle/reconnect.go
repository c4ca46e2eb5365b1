package lifecycle

import (
	"context"
	"errors"
	"time"
)

// ReconnectStatus is the outcome of a live probe (docs/DESIGN.md reconnect).
type ReconnectStatus string

// The reconnect outcomes.
const (
	ReconnectConnected   ReconnectStatus = "connected"   // running and answering; ExpiresAt set
	ReconnectPaused      ReconnectStatus = "paused"      // paused (checked without waking it)
	ReconnectExpired     ReconnectStatus = "expired"     // gone: the session is now expired
	ReconnectNoSandbox   ReconnectStatus = "no_sandbox"  // the session has no sandbox to probe
	ReconnectUnreachable ReconnectStatus = "unreachable" // transient: nothing changed
)

// ReconnectResult is what reconnect found. Session is the session after any
// reconcile the probe caused.
type ReconnectResult struct {
	Status    ReconnectStatus
	ExpiresAt time.Time // connected: when the provider-side timeout fires
	Session   *Session
}

// Reconnect probes the session's sandbox live, within ProbeTimeout. A paused
// sandbox is checked through the provider's control API and never woken. A
// gone sandbox (confirmed by a second read) keeps the session on its newest
// ready checkpoint when it has one (keepLost: archived while paused,
// restoring in place while running; status no_sandbox), and otherwise
// marks it expired (sandbox fields cleared); a transient failure changes
// nothing. When the probe shows the table is wrong
// about running versus paused, the table is reconciled. Not activity.
// Errors: not_found, forbidden.
func (s *Service) Reconnect(ctx context.Context, accountID, id string) (ReconnectResult, error) {
	sess, err := s.owned(ctx, accountID, id)
	if err != nil {
		return ReconnectResult{}, err
	}
	res := ReconnectResult{Session: sess}
	if sess.State == StateExpired {
		res.Status = ReconnectExpired
		return res, nil
	}
	if sess.SandboxID == "" || sess.State.Final() {
		res.Status = ReconnectNoSandbox
		return res, nil
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	probe, err := s.provider(sess).Probe(pctx, sess.SandboxID)
	cancel()
	if errors.Is(err, ErrSandboxGone) {
		// Confirm before clearing the sandbox for good (see observe).
		obs, oerr := s.observe(ctx, sess)
		switch {
		case oerr != nil:
			err = oerr
		case obs.state == StateExpired:
			switch kept, kerr := s.keepLostNow(ctx, sess); {
			case kerr != nil:
				res.Status = ReconnectUnreachable // the next probe or sweep tries again
				return res, nil
			case kept:
				res.Status = ReconnectNoSandbox // archived or restoring: nothing to probe now
				return res, nil
			}
			res.Status = ReconnectExpired
			s.reconcileTo(ctx, sess, StateExpired)
			return res, nil
		case obs.state == StatePaused:
			err, probe = nil, Probe{State: SandboxPaused}
		default:
			err = Transientf("probe", sess.SandboxID, 0, "the provider reported the sandbox gone, then running")
		}
	}
	switch {
	case err != nil:
		s.log().WarnContext(ctx, "reconnect probe failed", "session_id", sess.ID, "sandbox_id", sess.SandboxID, "err", err)
		res.Status = ReconnectUnreachable
		return res, nil
	case probe.State == SandboxPaused:
		res.Status = ReconnectPaused
		if sess.State == StateRunning {
			s.reconcileTo(ctx, sess, StatePaused)
		}
	default:
		res.Status, res.ExpiresAt = ReconnectConnected, probe.ExpiresAt
		if sess.State == StatePaused {
			s.reconcileTo(ctx, sess, StateRunning)
		}
	}
	return res, nil
}

// keepLostNow is keepLost for a reconnect that found sess's sandbox gone:
// it reports whether the session was kept on its checkpoint (sess then
// is as written). A failed write is logged and returned; the session is
// left as it was, and the next probe or sweep tries again.
func (s *Service) keepLostNow(ctx context.Context, sess *Session) (bool, error) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	next := sess.Clone()
	kept, err := s.keepLost(wctx, next)
	if err != nil {
		s.log().WarnContext(ctx, "keep a session whose sandbox is gone", "session_id", sess.ID, "err", err)
		return false, err
	}
	if kept {
		*sess = *next
	}
	return kept, nil
}

// reconcileTo records a state the provider reported, logging (not
// returning) a failure: the next probe or sweep tries again. sess changes
// only when the write commits. A paused sandbox found running was woken by
// traffic, which counts as activity (as the resumed webhook does).
func (s *Service) reconcileTo(ctx context.Context, sess *Session, to State) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	next := sess.Clone()
	if to == StateRunning {
		next.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	}
	if err := s.transition(wctx, next, to, ReasonReconcile, Guard{}); err != nil {
		s.log().WarnContext(ctx, "reconcile session", "session_id", sess.ID, "to", to, "err", err)
		return
	}
	*sess = *next
}
