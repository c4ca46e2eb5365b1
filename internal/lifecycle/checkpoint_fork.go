package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// Fork (docs/CHECKPOINTS.md "Fork"): a new session (its own id and link)
// made from one of a session's checkpoints, or from a fresh checkpoint of
// its current state. The new session is written provisioning (with
// ForkedFrom) and answered at once; a job saves the fresh checkpoint when
// there is one, makes the sandbox from it and moves the session to
// running (readiness brings its app up) or to failed. An Idempotency-Key
// replays to the one new session, also when the first request died
// mid-way: a replay that finds the session still provisioning answers it
// and queues its job again.

// ForkInput is a validated-at-the-edge POST /v1/sessions/{id}/fork.
// CheckpointID "" forks a fresh checkpoint of the current state. Metadata
// nil keeps the source's; the timeouts and options are a create's
// (CreateInput), zero or nil for the defaults.
type ForkInput struct {
	CheckpointID       string
	Metadata           map[string]string
	IdleTimeoutSeconds int64
	MaxLifetimeSeconds int64
	AwayTimeoutSeconds *int64
	ResumeOnReturn     *bool
	Checkpoints        CheckpointOptions
	IdempotencyKey     string
}

// forkClaimKey returns the claim key of a fork's Idempotency-Key (apart
// from a create's and a checkpoint's).
func forkClaimKey(accountID, sourceID, key string) string {
	return fmt.Sprintf("fork#%d:%s#%s#%s", len(accountID), accountID, sourceID, key)
}

// Fork makes a new session of accountID from its session sourceID's
// checkpoint in.CheckpointID (ready or still saving), or from a fresh
// checkpoint of it, and returns it (provisioning, ForkedFrom set) and
// whether it is an Idempotency-Key replay. The new session has the
// source's provider, template and app. Errors: invalid (input, a
// checkpoint of another provider), not_found (session, checkpoint),
// forbidden, conflict (TypeCheckpointFailed, TypeCheckpointExpired; a
// source with no sandbox to save; a request with the key still under
// way), quota_exceeded, unavailable (no checkpoints here, the job could
// not be queued).
func (s *Service) Fork(ctx context.Context, accountID, sourceID string, in ForkInput) (*Session, bool, error) {
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, false, err
	}
	src, err := s.owned(ctx, accountID, sourceID)
	if err != nil {
		return nil, false, err
	}
	var c *Checkpoint
	if in.CheckpointID != "" {
		if c, err = s.getCheckpoint(ctx, cs, sourceID, in.CheckpointID); err != nil {
			return nil, false, err
		}
		if err := c.Restorable(s.now()); err != nil && c.State != CheckpointSaving {
			return nil, false, err
		}
	}
	meta := in.Metadata
	if meta == nil {
		meta = maps.Clone(src.Metadata)
	}
	sess, err := s.newSession(ctx, accountID, CreateInput{Template: src.Template, Provider: src.Provider, Metadata: meta,
		IdleTimeoutSeconds: in.IdleTimeoutSeconds, MaxLifetimeSeconds: in.MaxLifetimeSeconds,
		AwayTimeoutSeconds: in.AwayTimeoutSeconds, ResumeOnReturn: in.ResumeOnReturn, Checkpoints: in.Checkpoints,
		IdempotencyKey: in.IdempotencyKey})
	if err != nil {
		return nil, false, err
	}
	sess.App, sess.ForkedFrom, sess.RunningLimit = src.App.Clone(), src.ID, s.maxRunning(ctx)
	release := func() {}
	if in.IdempotencyKey != "" {
		prior, rel, err := s.claimSessionKey(ctx, accountID, forkClaimKey(accountID, sourceID, in.IdempotencyKey), sess.ID, s.resolveForkClaim)
		if err != nil || prior != nil {
			return prior, prior != nil, err
		}
		release = rel
	}
	if c == nil {
		if c, err = s.newCheckpoint(src, TriggerAPI); err != nil {
			release()
			return nil, false, err
		}
		c.Label = "fork " + sess.ID
		if err := cs.CreateCheckpoint(ctx, c); err != nil {
			release()
			return nil, false, fmt.Errorf("create checkpoint: %w", err)
		}
	}
	if err := s.checkProvider(sess, c); err != nil {
		release()
		return nil, false, err
	}
	sess.ForkCheckpointID = c.ID
	if err := s.cfg.Store.CreateSession(ctx, sess); err != nil {
		release()
		return nil, false, fmt.Errorf("create session: %w", err)
	}
	s.logTransition(ctx, NewEvent(sess, ""))
	if err := s.queueFork(ctx, sess); err != nil {
		s.failFork(ctx, sess, "the fork could not be queued")
		release()
		return nil, false, &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: err,
			Message: "the fork could not be queued; retry later"}
	}
	return sess, false, nil
}

// queueFork queues the fork job of the new session sess.
func (s *Service) queueFork(ctx context.Context, sess *Session) error {
	return s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpFork, SessionID: sess.ForkedFrom,
		CheckpointID: sess.ForkCheckpointID, TargetSessionID: sess.ID})
}

// resolveForkClaim is resolveClaim for a fork: a new session still
// provisioning within its lease is replayed (its job queued again, in
// case the first request died before it queued it), since a fork answers
// its session before the sandbox is made.
func (s *Service) resolveForkClaim(ctx context.Context, accountID, stored string) (*Session, bool, error) {
	id, _ := parseClaimValue(stored)
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if err == nil && sess.AccountID == accountID && sess.State == StateProvisioning && s.now().Before(sess.LeaseExpiresAt) {
		if err := s.queueFork(ctx, sess); err != nil {
			s.log().WarnContext(ctx, "queue a replayed fork's job again; its lease settles it", "session_id", id, "err", err)
		}
		return sess, false, nil
	}
	return s.resolveClaim(ctx, accountID, stored)
}

// runFork is the fork job: it saves the checkpoint when it is still
// saving, makes the new session's sandbox from it and records the session
// running, or failed when that cannot be. Errors: transient ones within
// the new session's lease (the queue runs the job again).
func (s *Service) runFork(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	sess, err := s.cfg.Store.GetSession(ctx, job.TargetSessionID)
	if IsCode(err, CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if sess.State != StateProvisioning || sess.SandboxID != "" {
		return nil // done, failed or deleted
	}
	c, err := cs.GetCheckpoint(ctx, job.SessionID, job.CheckpointID)
	switch {
	case IsCode(err, CodeNotFound):
		s.failFork(ctx, sess, "checkpoint "+job.CheckpointID+" was deleted")
		return nil
	case err != nil:
		return err
	}
	if c.State == CheckpointSaving {
		if err := s.save(ctx, cs, c); err != nil {
			return s.forkRetry(ctx, sess, err)
		}
	}
	if err := c.Restorable(s.now()); err != nil {
		if IsCode(err, CodeConflict) && c.State == CheckpointSaving {
			return s.forkRetry(ctx, sess, err)
		}
		s.failFork(ctx, sess, userMessage(err))
		return nil
	}
	sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	sb, err := s.materialize(ctx, cs, sess, c)
	if err != nil {
		return s.forkRetry(ctx, sess, err)
	}
	s.writeMarker(ctx, sess, sb.ID, c.ID) // the new session's, made from c
	still := func(cur *Session) bool { return cur.State == StateProvisioning && cur.SandboxID == "" }
	if ok, err := s.commitSwap(ctx, sess, sb, ReasonRequest, still); !ok {
		return err
	}
	s.log().InfoContext(ctx, "session forked", "session_id", sess.ID, "from", job.SessionID, "checkpoint_id", c.ID, "sandbox_id", sb.ID)
	return nil
}

// forkRetry answers a fork job that failed with err: run again when err
// is transient and the session's lease allows, else fail the session.
func (s *Service) forkRetry(ctx context.Context, sess *Session, err error) error {
	if retryable(err) && s.now().Before(sess.LeaseExpiresAt.Add(-time.Second)) {
		return err
	}
	s.failFork(ctx, sess, "the sandbox could not be made from the checkpoint: "+userMessage(err))
	return nil
}

// failFork records the provisioning fork sess failed, with why in
// RestoreError; a session that moved meanwhile is left alone.
func (s *Service) failFork(ctx context.Context, sess *Session, why string) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	sess.RestoreError = why
	if err := s.transition(wctx, sess, StateFailed, ReasonRequest, Guard{}); err != nil {
		s.log().WarnContext(ctx, "record a failed fork; its lease does", "session_id", sess.ID, "err", err)
		return
	}
	s.log().InfoContext(ctx, "fork failed", "session_id", sess.ID, "from", sess.ForkedFrom, "why", why)
}
