package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// Restore in place (docs/CHECKPOINTS.md "Restore"): the same session id,
// stable link and client tokens come to serve a sandbox made from one of
// the session's checkpoints. The session passes through restoring (reason
// restore, with a lease) and keeps its old sandbox all along: a job makes
// the new sandbox (Snapshotter.CreateFromSnapshot, or a create from the
// template and WorkspaceArchiver.ImportTar of the archive), then one
// conditional write swaps it in (restoring → running: readiness brings the
// app up), and only then is the old sandbox killed. A restore that fails
// puts the session back as it was (running or paused, reason
// restore_failed, Session.RestoreError saying why) and kills the sandbox it
// made; a job that dies mid-way leaves the session restoring until its
// lease runs out, when the sweep puts it back (Reconcile), and the sandbox
// it made is reaped as an orphan.

// Restore starts the restore of accountID's session id from its
// checkpoint checkpointID and returns the session, restoring; a restore
// of the same checkpoint already under way is joined. It is
// RestoreIdempotent without a key.
func (s *Service) Restore(ctx context.Context, accountID, id, checkpointID string) (*Session, error) {
	sess, _, err := s.RestoreIdempotent(ctx, accountID, id, checkpointID, "")
	return sess, err
}

// RestoreIdempotent is Restore with an Idempotency-Key (key, "" for none):
// a restore repeating the key of the session's last restore
// (Session.RestoreKey) starts nothing and answers the session as it now
// is, with replayed true, however that restore went; the key is
// remembered until the session's next restore. Errors: not_found
// (session, checkpoint), forbidden, conflict (TypeCheckpointSaving,
// TypeCheckpointFailed, TypeCheckpointExpired; a session in another state
// than running or paused, or restoring from another checkpoint),
// quota_exceeded (a paused session needs a running slot), unavailable (no
// checkpoints here, the job could not be queued); invalid or conflict for
// a key too long or already used for a restore of another checkpoint.
func (s *Service) RestoreIdempotent(ctx context.Context, accountID, id, checkpointID, key string) (*Session, bool, error) {
	if len(key) > maxIdempotencyKey {
		return nil, false, Errorf(CodeInvalid, "Idempotency-Key must be at most %d characters", maxIdempotencyKey)
	}
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, false, err
	}
	cur, err := s.owned(ctx, accountID, id)
	if err != nil {
		return nil, false, err
	}
	if replay, err := restoreReplay(cur, checkpointID, key); replay || err != nil {
		return cur, replay, err
	}
	c, err := s.getCheckpoint(ctx, cs, id, checkpointID)
	if err != nil {
		return nil, false, err
	}
	if err := c.Restorable(s.now()); err != nil {
		return nil, false, err
	}
	joined, replayed := false, false
	sess, err := s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		if replay, err := restoreReplay(sess, checkpointID, key); replay || err != nil {
			replayed = replay
			return err
		}
		switch sess.State {
		case StateRunning, StatePaused:
		case StateRestoring:
			if sess.RestoreCheckpointID == checkpointID {
				joined = true
				return nil
			}
			return &Error{Code: CodeConflict, RetryAfter: 5 * time.Second,
				Message: "the session is restoring from checkpoint " + sess.RestoreCheckpointID + "; retry once it is done"}
		default:
			return Errorf(CodeConflict, "the session is %s; only a running or paused session can be restored", sess.State)
		}
		if err := s.checkProvider(sess, c); err != nil {
			return err
		}
		sess.RestoreCheckpointID, sess.RestoreFrom, sess.RestoreError, sess.RestoreKey = checkpointID, sess.State, "", key
		sess.RunningLimit = s.maxRunning(ctx)
		return raced(s.transition(ctx, sess, StateRestoring, ReasonRestore, Guard{}))
	})
	if err != nil || joined || replayed {
		return sess, replayed, err
	}
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpRestore, SessionID: id, CheckpointID: checkpointID}); err != nil {
		s.rollbackRestore(ctx, sess, "the restore could not be queued")
		return nil, false, &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: err,
			Message: "the restore could not be queued; retry later"}
	}
	return sess, false, nil
}

// restoreReplay says whether a restore of checkpointID with key repeats
// sess's last restore (its RestoreKey). Errors: conflict when the key was
// used for a restore of another checkpoint.
func restoreReplay(sess *Session, checkpointID, key string) (bool, error) {
	if key == "" || sess.RestoreKey != key {
		return false, nil
	}
	if sess.RestoreCheckpointID != checkpointID {
		return false, Errorf(CodeConflict, "Idempotency-Key %q was used for the restore from checkpoint %s; use a new key for another checkpoint",
			key, sess.RestoreCheckpointID)
	}
	return true, nil
}

// checkProvider refuses a restore or fork of c onto sess's provider when c
// was kept by another provider. Errors: invalid.
func (s *Service) checkProvider(sess *Session, c *Checkpoint) error {
	if name := s.provider(sess).Name(); c.Provider != "" && c.Provider != name {
		return Errorf(CodeInvalid, "checkpoint %s was taken on the %s provider; this session runs on %s", c.ID, c.Provider, name)
	}
	return nil
}

// runRestore is the restore job: it makes the session's new sandbox from
// the checkpoint and swaps it in. Errors: transient ones within the
// session's lease (the queue runs the job again).
func (s *Service) runRestore(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	sess, err := s.cfg.Store.GetSession(ctx, job.SessionID)
	if IsCode(err, CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if sess.State != StateRestoring || sess.RestoreCheckpointID != job.CheckpointID {
		return nil // done, rolled back, or another restore's
	}
	if job.CheckpointID == "" {
		return s.runRecreate(ctx, sess) // a recovery with on_lost recreate
	}
	c, err := cs.GetCheckpoint(ctx, sess.ID, job.CheckpointID)
	switch {
	case IsCode(err, CodeNotFound):
		s.rollbackRestore(ctx, sess, "checkpoint "+job.CheckpointID+" was deleted")
		return nil
	case err != nil:
		return err
	}
	if err := c.Restorable(s.now()); err != nil {
		s.rollbackRestore(ctx, sess, userMessage(err))
		return nil
	}
	sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	sb, err := s.materialize(ctx, cs, sess, c)
	if err != nil {
		if retryable(err) && s.now().Before(sess.LeaseExpiresAt) {
			return err
		}
		s.rollbackRestore(ctx, sess, "the sandbox could not be made from the checkpoint: "+userMessage(err))
		return nil
	}
	reason := ReasonRestore
	if sess.RestoreFrom == StateArchived {
		reason = ReasonUnarchive
	}
	return s.swapIn(ctx, sess, sb, c.ID, reason)
}

// swapIn writes the identity marker into sb (made from checkpointID, ""
// for a fresh one) and swaps it in: restoring → running for reason, then
// the old sandbox is killed. A session that moved meanwhile gets nothing:
// sb is killed. Errors: the store's (not a conflict).
func (s *Service) swapIn(ctx context.Context, sess *Session, sb Sandbox, checkpointID, reason string) error {
	s.writeMarker(ctx, sess, sb.ID, checkpointID)
	old := sess.SandboxID
	still := func(cur *Session) bool { return cur.State == StateRestoring && cur.RestoreCheckpointID == checkpointID }
	if ok, err := s.commitSwap(ctx, sess, sb, reason, still); !ok {
		return err
	}
	s.log().InfoContext(ctx, "session restored", "session_id", sess.ID, "checkpoint_id", checkpointID, "reason", reason, "sandbox_id", sb.ID, "old_sandbox_id", old)
	if old != "" && old != sb.ID {
		s.killQuietly(ctx, sess, old)
	}
	return nil
}

// commitSwap commits sess (as a job read it) running on its new sandbox sb,
// reason reason, and reports whether it did. A lost race to a write that
// changed nothing the job relies on (still holds: a presence write) is
// retried on a fresh read. A session that moved meanwhile (deleted, put
// back by the sweep) has sb killed: nobody holds it. A write whose
// outcome is unknown is read back; when that says nothing, sb is left to
// the sweep, which reaps it once no session holds it. Errors: the store's.
func (s *Service) commitSwap(ctx context.Context, sess *Session, sb Sandbox, reason string, still func(*Session) bool) (bool, error) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	cur, marked := sess.Clone(), sess.Marked
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			if cur, err = s.cfg.Store.GetSession(wctx, sess.ID); err != nil {
				return false, err
			}
			if cur.State == StateRunning && cur.SandboxID == sb.ID {
				*sess = *cur // an earlier attempt committed; its answer was lost
				return true, nil
			}
			if !still(cur) || attempt == maxConflictRetries {
				s.killQuietly(wctx, cur, sb.ID)
				return false, nil
			}
		}
		cur.SandboxID, cur.PreviewURL, cur.SandboxExpiresAt, cur.Marked = sb.ID, sb.PreviewURL, sb.ExpiresAt, marked
		cur.PreviewURL = s.appPreviewURL(wctx, cur, sb.PreviewURL)
		cur.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
		err := s.transition(wctx, cur, StateRunning, reason, Guard{})
		switch {
		case err == nil:
			*sess = *cur
			return true, nil
		case !IsCode(err, CodeConflict):
			if got, rerr := s.cfg.Store.GetSession(wctx, sess.ID); rerr == nil && got.State == StateRunning && got.SandboxID == sb.ID {
				*sess = *got
				return true, nil
			}
			return false, err
		}
	}
}

// rollbackRestore puts a restoring sess back where its restore started
// (RestoreFrom: running or paused), reason restore_failed, with why in
// RestoreError; an unarchive's back to archived. A session that moved
// meanwhile is left alone.
func (s *Service) rollbackRestore(ctx context.Context, sess *Session, why string) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	to := sess.RestoreFrom
	if to != StateRunning && to != StateArchived {
		to = StatePaused
	}
	cur, err := s.cfg.Store.GetSession(wctx, sess.ID)
	if err != nil || cur.State != StateRestoring {
		return
	}
	cur.RestoreError = why
	if err := s.transition(wctx, cur, to, ReasonRestoreFailed, Guard{}); err != nil {
		s.log().WarnContext(ctx, "put back a session whose restore failed; its lease does", "session_id", sess.ID, "err", err)
		return
	}
	*sess = *cur
	s.log().InfoContext(ctx, "restore failed; the session is as it was", "session_id", sess.ID, "state", to, "why", why)
}

// materialize makes a new sandbox for sess (tagged with it) holding c:
// the provider's CreateFromSnapshot, or a create from c's template and
// the archive unpacked into its workspace (the sandbox is killed when the
// unpack fails). A checkpoint the provider or the archive store no longer
// has is recorded expired. Errors: the provider's and the store's;
// ErrCheckpointGone when c is gone.
func (s *Service) materialize(ctx context.Context, cs CheckpointStore, sess *Session, c *Checkpoint) (Sandbox, error) {
	if err := s.checkProvider(sess, c); err != nil {
		return Sandbox{}, err
	}
	p := s.provider(sess)
	req := CreateRequest{Template: c.Template, Timeout: s.cfg.Policy.ProviderTimeout(sess, s.now()), AutoPause: true,
		Metadata: s.sandboxMetadata(sess)}
	var sb Sandbox
	var err error
	switch c.Kind {
	case KindSnapshot:
		sn, ok := As[Snapshotter](p)
		if !ok {
			return Sandbox{}, Errorf(CodeInvalid, "the %s provider has no snapshots", p.Name())
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		sb, err = sn.CreateFromSnapshot(pctx, c.ProviderRef, req)
		cancel()
	default:
		sb, err = s.createFromArchive(ctx, p, c, req)
	}
	if errors.Is(err, ErrCheckpointGone) {
		s.expireCheckpoint(ctx, cs, c, "the provider no longer has it")
	}
	return sb, err
}

// createFromArchive creates a sandbox from req and unpacks c's archive
// into its workspace. Errors: the provider's, the archive store's.
func (s *Service) createFromArchive(ctx context.Context, p Provider, c *Checkpoint, req CreateRequest) (Sandbox, error) {
	wa, ok := As[WorkspaceArchiver](p)
	ar := s.archiveReader()
	if !ok || ar == nil {
		return Sandbox{}, Errorf(CodeInvalid, "this deployment cannot restore the %s provider's archives", p.Name())
	}
	r, err := ar.Open(ctx, c.ArchiveKey)
	if err != nil {
		return Sandbox{}, err
	}
	defer r.Close()
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	sb, err := p.Create(pctx, req)
	cancel()
	if err != nil {
		return Sandbox{}, err
	}
	if err := wa.ImportTar(ctx, sb.ID, s.workspace(c.Template).Dir, r); err != nil {
		s.killQuietly(ctx, &Session{Provider: p.Name()}, sb.ID)
		return Sandbox{}, fmt.Errorf("unpack the archive: %w", err)
	}
	return sb, nil
}

// expireCheckpoint records a ready c expired for reason (its provider
// object is gone); a checkpoint that moved meanwhile is left alone.
func (s *Service) expireCheckpoint(ctx context.Context, cs CheckpointStore, c *Checkpoint, reason string) {
	if c.State == CheckpointReady {
		s.moveCheckpoint(ctx, cs, c, CheckpointExpired, reason)
	}
}

// sandboxMetadata returns the provider metadata of a sandbox of sess: the
// session's metadata, then the reserved keys (the session id and the
// deployment), which callers cannot set.
func (s *Service) sandboxMetadata(sess *Session) map[string]string {
	meta := maps.Clone(sess.Metadata)
	if meta == nil {
		meta = make(map[string]string, 2)
	}
	meta[MetadataSessionID] = sess.ID
	if s.cfg.Deployment != "" {
		meta[MetadataDeployment] = s.cfg.Deployment
	}
	return meta
}

// retryable reports whether err is worth running a job again for.
func retryable(err error) bool {
	return errors.Is(err, ErrProviderTransient) || errors.Is(err, ErrSandboxConflict) ||
		errors.Is(err, context.DeadlineExceeded) || IsLostRace(err) || IsCode(err, CodeUnavailable)
}

// userMessage returns the sentence of err safe to show a caller: an
// *Error's message, else the error's text.
func userMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
