package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Reconcile puts one session into the state its provider reports, read
// through the control API (never waking a paused sandbox). The sweep calls it
// for sessions whose lease expired and for running sessions the provider's
// list disagrees with. A provisioning session without a sandbox becomes
// failed. It returns whether the session changed.
// Errors: unavailable (provider trouble: try next run), conflict (lost a
// race: someone else moved it).
func (s *Service) Reconcile(ctx context.Context, sess *Session) (bool, error) {
	// Nobody waits on a reconcile (a heartbeat that finds its sandbox gone
	// reconciles too, rarely): even the resume that completes a pool
	// claim is background work in the provider's call limiter.
	ctx = WithCallPriority(ctx, PriorityBackground)
	if sess.State.Final() {
		return false, nil
	}
	if sess.State == StateRestoring && sess.RestoreFrom == StateArchived {
		// An unarchive whose job died: back to archived (its sandbox, if
		// it made one, is reaped as an orphan); the next open tries again.
		sess.RestoreError = "the restore did not finish within its lease"
		return true, s.transition(ctx, sess, StateArchived, ReasonReconcile, Guard{})
	}
	if sess.State == StateProvisioning && sess.FromPool && sess.SandboxID != "" {
		return s.reconcileClaim(ctx, sess) // a claim whose create died before the resume
	}
	if sess.State == StateRestoring && sess.Reason == ReasonLost {
		return s.reconcileRecovery(ctx, sess) // a recovery whose job died or was lost
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
		if err := s.killOrphans(ctx, sess); err != nil {
			s.log().WarnContext(ctx, "kill the sandbox of a dead create; the sweep reaps it later", "session_id", sess.ID, "err", err)
		}
		return true, nil
	}
	obs, err := s.observe(ctx, sess)
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
	if to == StateExpired && (sess.State == StatePaused || sess.State == StateRunning) {
		// Gone: kept on its checkpoint when it has one (archived while
		// paused, recovered in place while running), never expired while
		// a checkpoint exists (docs/RELIABILITY.md "Recovery").
		if kept, err := s.keepLost(ctx, sess); kept || err != nil {
			return kept && err == nil, err
		}
	}
	if sess.State == StateResuming && (to == StateRunning || to == StateExpired) {
		// A resume that died before it committed: its sandbox is verified
		// as the resume would have (docs/RELIABILITY.md "Recovery"), never
		// adopted when lost.
		if recovering, lerr := s.lost(ctx, sess, to); recovering {
			return lerr == nil, lerr
		} else if lerr != nil {
			to = StateExpired
		}
	}
	if sess.State == StateRestoring {
		// The restore's job died or was lost: the session keeps its old
		// sandbox, as the provider has it; the restore's own sandbox is
		// reaped as an orphan (ReapOrphan).
		sess.RestoreError = "the restore did not finish within its lease"
	}
	if to == StateRunning {
		sess.SandboxExpiresAt = sb.ExpiresAt
		if sb.PreviewURL != "" {
			sess.PreviewURL = sb.PreviewURL
		}
		if sess.State == StatePaused || sess.State == StateResuming {
			// Traffic woke it or a resume finished without us: activity.
			sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
		}
	}
	if err := s.transition(ctx, sess, to, ReasonReconcile, Guard{}); err != nil {
		return false, err
	}
	return true, nil
}

// killOrphans kills sandboxes the provider tagged with sessionID: a create
// that died between the provider call and the table write leaves one.
func (s *Service) killOrphans(ctx context.Context, sess *Session) error {
	sessionID, provider := sess.ID, s.provider(sess)
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	page, err := provider.List(pctx, ListRequest{Metadata: map[string]string{MetadataSessionID: sessionID}})
	if err != nil {
		return s.providerError(err, "list sandboxes")
	}
	for _, sb := range page.Sandboxes {
		if err := provider.Kill(pctx, sb.ID); err != nil && !errors.Is(err, ErrSandboxGone) {
			return s.providerError(err, "kill an orphaned sandbox")
		}
		s.log().InfoContext(ctx, "killed orphaned sandbox", "session_id", sessionID, "sandbox_id", sb.ID)
	}
	return nil
}

// ReapOrphan kills a provider sandbox (on its provider, Sandbox.Provider)
// that no live session holds, once it is
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
	if s.cfg.Deployment != "" && sb.Metadata[MetadataDeployment] != s.cfg.Deployment {
		return false, nil // another deployment's
	}
	if pool := sb.Metadata[MetadataPool]; id == "" && pool != "" {
		return s.reapPoolSandbox(ctx, sb, pool, true)
	}
	if id == "" {
		return false, nil // not ours
	}
	now := s.now()
	if !sb.StartedAt.IsZero() && now.Sub(sb.StartedAt) < s.cfg.Policy.LeaseDuration {
		return false, nil
	}
	sess, err := s.cfg.Store.GetSession(ctx, id)
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
	case (sess.State == StateProvisioning || sess.State == StateRestoring) && now.Before(sess.LeaseExpiresAt):
		return false, nil // its create (or restore's sandbox) is still under way
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.providerFor(sb.Provider).Kill(pctx, sb.ID); err != nil && !errors.Is(err, ErrSandboxGone) {
		return false, s.providerError(err, "kill an orphaned sandbox")
	}
	s.log().InfoContext(ctx, "killed orphaned sandbox", "session_id", id, "sandbox_id", sb.ID)
	return true, nil
}

// FindDue returns one page of the sessions of a due index (Store.FindDue):
// the sweep's work lists. Errors: the store's (invalid for a foreign cursor).
func (s *Service) FindDue(ctx context.Context, q DueQuery) (SessionPage, error) {
	return s.cfg.Store.FindDue(ctx, q)
}

// ListSandboxes returns one page of the running and paused sandboxes of the
// provider named provider ("" for the default; one of ProviderNames), only
// this deployment's when the service names one, within CallTimeout. Each
// sandbox carries the provider's name (Sandbox.Provider).
// Errors: the provider's.
func (s *Service) ListSandboxes(ctx context.Context, provider, pageToken string, limit int) (SandboxPage, error) {
	var filter map[string]string
	if d := s.cfg.Deployment; d != "" {
		filter = map[string]string{MetadataDeployment: d}
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	p := s.providerFor(provider)
	page, err := p.List(pctx, ListRequest{
		States:    []SandboxState{SandboxRunning, SandboxPaused},
		Metadata:  filter,
		Limit:     limit,
		PageToken: pageToken,
	})
	for i := range page.Sandboxes {
		page.Sandboxes[i].Provider = p.Name()
	}
	return page, err
}

// SessionOfSandbox returns the session that holds a listed sandbox of its
// provider (Sandbox.Provider; Store.FindBySandbox). Errors: not_found, the
// store's.
func (s *Service) SessionOfSandbox(ctx context.Context, sb Sandbox) (*Session, error) {
	return s.cfg.Store.FindBySandbox(ctx, s.providerFor(sb.Provider).Name(), sb.ID)
}

// ExpireDormant marks session id expired (reason dormant) if it is still
// paused and was paused at or before pausedBefore: the sweep's dormancy rule
// (ours: sessions paused longer than SANDMAN_SWEEP_DORMANCY_AGE give their
// sandbox up). The session is read again first, and the conditional write
// acts as the lock: a session resumed since the (eventually consistent)
// index was read fails it and keeps its sandbox. It returns the expired
// session and the id of the sandbox it held ("" for none), which the caller
// then kills (KillDormantSandbox); a nil session when it moved meanwhile.
// Errors: the store's read.
func (s *Service) ExpireDormant(ctx context.Context, id string, pausedBefore time.Time) (*Session, string, error) {
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if err != nil {
		return nil, "", err
	}
	if sess.State != StatePaused || sess.PausedAt.After(pausedBefore) {
		s.log().DebugContext(ctx, "dormant candidate moved meanwhile", "session_id", id, "state", sess.State)
		return nil, "", nil
	}
	sandboxID := sess.SandboxID
	if err := s.transition(ctx, sess, StateExpired, ReasonDormant, Guard{}); err != nil {
		s.log().DebugContext(ctx, "dormant candidate moved meanwhile", "session_id", id, "err", err)
		return nil, "", nil
	}
	return sess, sandboxID, nil
}

// KillDormantSandbox kills sandboxID, the sandbox of sess that
// ExpireDormant retired, within CallTimeout. A sandbox already gone is
// success. A kill that fails leaves the sandbox of an expired session with
// reason dormant, which ReapOrphan kills on a later sweep.
// Errors: the provider's.
func (s *Service) KillDormantSandbox(ctx context.Context, sess *Session, sandboxID string) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.provider(sess).Kill(pctx, sandboxID); err != nil && !errors.Is(err, ErrSandboxGone) {
		return err
	}
	return nil
}

// reapPoolSandbox is ReapOrphan for a sandbox made for a warm pool
// (MetadataPool; docs/POOLS.md "Reconcile"). Its spare item says whose it
// is: a making or ready spare of a configured pool is the filler's and is
// left alone; a claimed one belongs to the session the marker names and is
// killed only when that session is final (an expired one, as for any
// session, is left for an operator); a spare of a pool no longer
// configured is dropped. A pool sandbox with no item at all (a fill that
// died before recording it, a kill that failed) is an orphan and is killed
// once older than a lease (when leased; DrainRemovedPools does not wait),
// unless a live session holds it.
func (s *Service) reapPoolSandbox(ctx context.Context, sb Sandbox, poolID string, leased bool) (bool, error) {
	ps, ok := s.cfg.Store.(PoolStore)
	if !ok {
		return false, nil
	}
	now := s.now()
	if leased && !sb.StartedAt.IsZero() && now.Sub(sb.StartedAt) < s.cfg.Policy.LeaseDuration {
		return false, nil
	}
	sp, err := ps.GetSpare(ctx, poolID, sb.ID)
	switch {
	case IsCode(err, CodeNotFound):
		if sess, err := s.SessionOfSandbox(ctx, sb); err == nil && (!sess.State.Final() ||
			(sess.State == StateExpired && sess.Reason != ReasonDormant)) {
			return false, nil // a session holds it (its claimed marker expired), or an operator must look
		}
	case err != nil:
		return false, err
	case sp.Status == SpareClaimed:
		sess, err := s.cfg.Store.GetSession(ctx, sp.SessionID)
		switch {
		case IsCode(err, CodeNotFound):
		case err != nil:
			return false, err
		case !sess.State.Final() || (sess.State == StateExpired && sess.Reason != ReasonDormant):
			return false, nil
		}
	default:
		for _, p := range s.cfg.Pools {
			if p.ID == poolID {
				return false, nil // the filler's
			}
		}
		if err := ps.DeleteSpare(ctx, sp); err != nil {
			return false, nil // claimed or changed meanwhile: look again next run
		}
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.providerFor(sb.Provider).Kill(pctx, sb.ID); err != nil && !errors.Is(err, ErrSandboxGone) {
		return false, s.providerError(err, "kill an orphaned pool sandbox")
	}
	s.log().InfoContext(ctx, "killed orphaned pool sandbox", "pool_id", poolID, "sandbox_id", sb.ID)
	return true, nil
}

// reconcileRecovery finishes the recovery of a lost session (restoring,
// reason lost) whose job died or was lost: the restore (or recreate) runs
// here, as its job would, and ends running on a new marked sandbox, or,
// past the lease, back paused with the reason in RestoreError (the next
// resume finds the loss again). A sandbox a dead job made and never
// swapped in is tagged with the session and reaped as an orphan.
// Errors: the job's.
func (s *Service) reconcileRecovery(ctx context.Context, sess *Session) (bool, error) {
	s.log().InfoContext(ctx, "finish a lost session's recovery", "session_id", sess.ID, "checkpoint_id", sess.RestoreCheckpointID)
	err := s.runRestore(ctx, CheckpointsOf(s.cfg.Store), CheckpointJob{Op: CheckpointOpRestore, SessionID: sess.ID,
		CheckpointID: sess.RestoreCheckpointID})
	return err == nil, err
}
