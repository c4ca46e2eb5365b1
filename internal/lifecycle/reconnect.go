package lifecycle

import (
	"context"
	"errors"
	"time"
)

// ReconnectStatus is the outcome of a live probe (DESIGN.md reconnect).
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
// gone sandbox marks the session expired (sandbox fields cleared); a
// transient failure changes nothing. When the probe shows the table is wrong
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
	pctx, cancel := context.WithTimeout(ctx, s.probeTimeout())
	probe, err := s.Provider.Probe(pctx, sess.SandboxID)
	cancel()
	if errors.Is(err, ErrSandboxGone) {
		// Confirm before clearing the sandbox for good (see observe).
		obs, oerr := s.observe(ctx, sess.SandboxID)
		switch {
		case oerr != nil:
			err = oerr
		case obs.state == StateExpired:
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

// reconcileTo records a state the provider reported, logging (not
// returning) a failure: the next probe or sweep tries again. sess changes
// only when the write commits. A paused sandbox found running was woken by
// traffic, which counts as activity (as the resumed webhook does).
func (s *Service) reconcileTo(ctx context.Context, sess *Session, to State) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	next := sess.Clone()
	if to == StateRunning {
		next.RecordActivity(s.now(), 0)
	}
	if err := s.transition(wctx, next, to, ReasonReconcile, Guard{}); err != nil {
		s.log().WarnContext(ctx, "reconcile session", "session_id", sess.ID, "to", to, "err", err)
		return
	}
	*sess = *next
}

// Reconcile puts one session into the state its provider reports, read
// through the control API (never waking a paused sandbox). The sweep calls it
// for sessions whose lease expired and for running sessions the provider's
// list disagrees with. A provisioning session without a sandbox becomes
// failed. It returns whether the session changed.
// Errors: unavailable (provider trouble: try next run), conflict (lost a
// race: someone else moved it).
func (s *Service) Reconcile(ctx context.Context, sess *Session) (bool, error) {
	if sess.State.Final() {
		return false, nil
	}
	if sess.SandboxID == "" {
		if sess.State != StateProvisioning {
			return false, nil
		}
		// The conditional write first: it fails if the create committed
		// meanwhile, and then its sandbox must not be killed.
		if err := s.transition(ctx, sess, StateFailed, ReasonReconcile, Guard{}); err != nil {
			return false, err
		}
		if err := s.killOrphans(ctx, sess.ID); err != nil {
			s.log().WarnContext(ctx, "kill the sandbox of a dead create; the sweep reaps it later", "session_id", sess.ID, "err", err)
		}
		return true, nil
	}
	obs, err := s.observe(ctx, sess.SandboxID)
	if err != nil {
		return false, s.providerError(err, "read the sandbox")
	}
	to, sb := obs.state, obs.sandbox
	if to == sess.State {
		return false, nil
	}
	if to == StatePaused && sess.State == StateProvisioning {
		to = StateRunning // the sandbox exists; the sweep pauses it when due
	}
	if to == StateRunning {
		sess.SandboxExpiresAt = sb.ExpiresAt
		if sb.PreviewURL != "" {
			sess.PreviewURL = sb.PreviewURL
		}
		if sess.State == StatePaused || sess.State == StateResuming {
			// Traffic woke it or a resume finished without us: activity.
			sess.RecordActivity(s.now(), 0)
		}
	}
	if err := s.transition(ctx, sess, to, ReasonReconcile, Guard{}); err != nil {
		return false, err
	}
	return true, nil
}

// killOrphans kills sandboxes the provider tagged with sessionID: a create
// that died between the provider call and the table write leaves one.
func (s *Service) killOrphans(ctx context.Context, sessionID string) error {
	pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	page, err := s.Provider.List(pctx, ListRequest{Metadata: map[string]string{MetadataSessionID: sessionID}})
	if err != nil {
		return s.providerError(err, "list sandboxes")
	}
	for _, sb := range page.Sandboxes {
		if err := s.Provider.Kill(pctx, sb.ID); err != nil && !errors.Is(err, ErrSandboxGone) {
			return s.providerError(err, "kill an orphaned sandbox")
		}
		s.log().InfoContext(ctx, "killed orphaned sandbox", "session_id", sessionID, "sandbox_id", sb.ID)
	}
	return nil
}

// ReapOrphan kills a provider sandbox that no live session holds, once it is
// older than a lease: one tagged (MetadataSessionID) with a session that is
// final, holds another sandbox, or never recorded it because its create died
// (the table is read strongly, so a create that just committed is safe). The
// sweep calls it for listed sandboxes the table does not know and for those
// of killed and failed sessions: it closes leaks such as a create whose answer was lost
// after the provider made the sandbox, or a resume that raced a delete (E2B:
// the delete answered 204 but the sandbox ended up running). A sandbox that
// is untagged, or tagged with another deployment (MetadataDeployment), is
// not this Sandman's and is left alone; so is one whose session expired
// (see below). It returns whether it killed.
// Errors: unavailable (provider trouble), or the store's.
func (s *Service) ReapOrphan(ctx context.Context, sb Sandbox) (bool, error) {
	id := sb.Metadata[MetadataSessionID]
	if id == "" || (s.Deployment != "" && sb.Metadata[MetadataDeployment] != s.Deployment) {
		return false, nil // not ours, or another deployment's
	}
	now := s.now()
	if !sb.StartedAt.IsZero() && now.Sub(sb.StartedAt) < s.Policy.LeaseDuration {
		return false, nil
	}
	sess, err := s.Store.GetSession(ctx, id)
	switch {
	case IsCode(err, CodeNotFound):
	case err != nil:
		return false, err
	case sess.SandboxID == sb.ID && !sess.State.Final():
		return false, nil // held: the index was behind
	case sess.State == StateExpired && sess.Reason != ReasonDormant:
		// The provider said it was gone, twice, yet it is here: killing it
		// could lose the user's files. Left for an operator (logged). A
		// dormant session's sandbox was meant to die: its kill is retried.
		s.log().WarnContext(ctx, "sandbox of an expired session is alive; left alone", "session_id", id, "sandbox_id", sb.ID)
		return false, nil
	case sess.State == StateProvisioning && now.Before(sess.LeaseExpiresAt):
		return false, nil // its create is still under way
	}
	pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	defer cancel()
	if err := s.Provider.Kill(pctx, sb.ID); err != nil && !errors.Is(err, ErrSandboxGone) {
		return false, s.providerError(err, "kill an orphaned sandbox")
	}
	s.log().InfoContext(ctx, "killed orphaned sandbox", "session_id", id, "sandbox_id", sb.ID)
	return true, nil
}
