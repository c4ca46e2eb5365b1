package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// The checkpoint operations of the API (docs/CHECKPOINTS.md): create (a
// job saves it), list, get and delete. Restore and fork are in
// checkpoint_restore.go and checkpoint_fork.go, the save job in
// checkpoint_save.go, automatic checkpoints in checkpoint_auto.go.

// checkpointStore returns the store's checkpoints and the job queue.
// Errors: unavailable when the store keeps none or no queue is configured.
func (s *Service) checkpointStore() (CheckpointStore, error) {
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok || s.cfg.CheckpointJobs == nil {
		return nil, Errorf(CodeUnavailable, "checkpoints are not available in this deployment")
	}
	return cs, nil
}

// checkpointClaimKey returns the claim key of an Idempotency-Key of a
// checkpoint create on a session (apart from a session create's keys).
func checkpointClaimKey(accountID, sessionID, key string) string {
	return fmt.Sprintf("checkpoint#%d:%s#%s#%s", len(accountID), accountID, sessionID, key)
}

// CreateCheckpoint asks for a checkpoint of session sessionID: the
// checkpoint is written saving (with a lease), then a save job is queued
// (RunCheckpointJob); checkpoint.ready or checkpoint.failed follows. Its
// kind is the provider's snapshot where the provider has snapshots (and,
// for a paused session, can snapshot a paused sandbox), else an archive
// of the workspace (Config.Archives). A repeated request with the same
// Idempotency-Key answers the first one's checkpoint (replay true), as it
// now is. Errors: invalid (input), not_found, forbidden, conflict (the
// session has no sandbox to save, or its provider cannot save this one
// now; an earlier request with the key is still under way), unavailable
// (no checkpoints in this deployment, the job could not be queued).
func (s *Service) CreateCheckpoint(ctx context.Context, accountID, sessionID string, in CheckpointInput) (*Checkpoint, bool, error) {
	if err := validCheckpointInput(in); err != nil {
		return nil, false, err
	}
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, false, err
	}
	sess, err := s.owned(ctx, accountID, sessionID)
	if err != nil {
		return nil, false, err
	}
	c, err := s.newCheckpoint(sess, TriggerAPI)
	if err != nil {
		return nil, false, err
	}
	c.Label, c.Metadata, c.Pinned = in.Label, maps.Clone(in.Metadata), in.Pin
	release := func() {}
	if in.IdempotencyKey != "" {
		key := checkpointClaimKey(accountID, sessionID, in.IdempotencyKey)
		prior, rel, err := s.claimCheckpointKey(ctx, cs, sessionID, key, c.ID)
		if err != nil || prior != nil {
			return prior, prior != nil, err
		}
		release = rel
	}
	if err := cs.CreateCheckpoint(ctx, c); err != nil {
		release()
		return nil, false, fmt.Errorf("create checkpoint: %w", err)
	}
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpSave, SessionID: sessionID, CheckpointID: c.ID}); err != nil {
		s.failCheckpoint(ctx, cs, c, "the save could not be queued")
		release()
		return nil, false, &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: err,
			Message: "the checkpoint could not be queued; retry later"}
	}
	return c, false, nil
}

// claimCheckpointKey claims key for checkpoint id: it returns the
// checkpoint of an earlier request that holds the key (a replay), or a
// release func giving the key back. A key whose checkpoint was never
// written a lease after its claim is given back and claimed again.
// Errors: conflict (the earlier request may still be writing it), the
// store's.
func (s *Service) claimCheckpointKey(ctx context.Context, cs CheckpointStore, sessionID, key, id string) (*Checkpoint, func(), error) {
	value := newClaimValue(id, s.now())
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		claimed, stored, err := s.cfg.Store.Claim(ctx, key, value, s.cfg.IdempotencyTTL, s.now())
		if err != nil {
			return nil, nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		if claimed {
			return nil, func() { s.releaseClaim(ctx, key, value) }, nil
		}
		priorID, at := parseClaimValue(stored)
		prior, err := cs.GetCheckpoint(ctx, sessionID, priorID)
		switch {
		case err == nil:
			return prior.AsOf(s.now()), nil, nil
		case !IsCode(err, CodeNotFound):
			return nil, nil, err
		case at.IsZero() || s.now().Before(at.Add(s.cfg.Policy.LeaseDuration)):
			return nil, nil, &Error{Code: CodeConflict, RetryAfter: time.Second,
				Message: "a checkpoint with this Idempotency-Key is still being created"}
		}
		if err := s.cfg.Store.ReleaseClaim(ctx, key, stored); err != nil {
			return nil, nil, fmt.Errorf("release the idempotency key of a dead request: %w", err)
		}
	}
	return nil, nil, &Error{Code: CodeConflict, RetryAfter: time.Second,
		Message: "a checkpoint with this Idempotency-Key is still being created"}
}

// releaseClaim gives key back if it still holds value, logging a failure.
func (s *Service) releaseClaim(ctx context.Context, key, value string) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	if err := s.cfg.Store.ReleaseClaim(wctx, key, value); err != nil {
		s.log().WarnContext(ctx, "release idempotency key", "claim", value, "err", err)
	}
}

// newCheckpoint returns the saving checkpoint of sess's sandbox for
// trigger, its kind chosen for the session as it now is (checkpointKind).
// Errors: conflict (nothing to save, or the provider cannot save it now),
// unavailable (no way to keep one in this deployment).
func (s *Service) newCheckpoint(sess *Session, trigger CheckpointTrigger) (*Checkpoint, error) {
	switch {
	case sess.SandboxID == "" || sess.State.Final():
		return nil, Errorf(CodeConflict, "the session is %s and has no sandbox to checkpoint", sess.State)
	case sess.State != StateRunning && sess.State != StatePaused && sess.State != StatePausing:
		return nil, &Error{Code: CodeConflict, RetryAfter: time.Second,
			Message: "the session is " + string(sess.State) + "; retry shortly"}
	}
	kind, keeps, err := s.checkpointKind(sess)
	if err != nil {
		return nil, err
	}
	now := s.now()
	c := &Checkpoint{
		ID: NewCheckpointID(now), SessionID: sess.ID, AccountID: sess.AccountID, CreatedAt: now, UpdatedAt: now,
		Kind: kind, Keeps: keeps, State: CheckpointSaving, Trigger: trigger,
		Provider: s.provider(sess).Name(), Template: sess.Template, SourceSandboxID: sess.SandboxID,
		LeaseExpiresAt: now.Add(s.checkpointLease()),
	}
	if kind == KindArchive {
		c.ArchiveKey = ArchiveKey(c.AccountID, c.SessionID, c.ID)
	}
	return c, nil
}

// checkpointLease is how long a saving checkpoint may stay saving before
// the sweep resolves it: a lease and the save job's wait for a provider
// snapshot. A job that records progress renews it.
func (s *Service) checkpointLease() time.Duration {
	return s.cfg.Policy.LeaseDuration + s.cfg.CheckpointWait
}

// checkpointKind chooses how sess's sandbox is saved: the provider's
// snapshot when it has them (a paused sandbox only where its snapshots
// take one, or its pause made one: PauseSnapshotter), else an archive
// when the provider streams its workspace and the deployment keeps
// archives (keepsArchives: here, or through its checkpoint jobs).
// Errors: conflict (the provider saves only running sandboxes),
// unavailable (no way at all).
func (s *Service) checkpointKind(sess *Session) (CheckpointKind, Keeps, error) {
	p := s.provider(sess)
	if sn, ok := As[Snapshotter](p); ok {
		caps := sn.SnapshotCaps()
		pauseSnaps := Has[PauseSnapshotter](p)
		// A pausing session's sandbox runs until the provider's pause.
		running := sess.State == StateRunning || sess.State == StatePausing
		if running || caps.SnapshotsPaused || pauseSnaps {
			return KindSnapshot, caps.Keeps, nil
		}
	}
	if Has[WorkspaceArchiver](p) && s.keepsArchives() {
		return KindArchive, KeepsFilesystem, nil
	}
	if Has[Snapshotter](p) {
		return "", "", Errorf(CodeConflict, "the %s provider snapshots only running sandboxes: resume the session first", p.Name())
	}
	return "", "", Errorf(CodeUnavailable, "the %s provider has no snapshots and this deployment keeps no archives", p.Name())
}

// keepsArchives reports whether the deployment keeps archives: this
// process's Archives, or its checkpoint jobs' (Config.ArchivesKept).
func (s *Service) keepsArchives() bool {
	return s.cfg.Archives != nil || s.cfg.ArchivesKept
}

// archiveReader returns what opens archives here: Archives, else
// ArchiveReader; nil when this process may not read them.
func (s *Service) archiveReader() ArchiveReader {
	if s.cfg.Archives != nil {
		return s.cfg.Archives
	}
	return s.cfg.ArchiveReader
}

// enqueueCheckpoint queues job. Errors: the queue's.
func (s *Service) enqueueCheckpoint(ctx context.Context, job CheckpointJob) error {
	if s.cfg.CheckpointJobs == nil {
		return Errorf(CodeUnavailable, "no checkpoint job queue")
	}
	return s.cfg.CheckpointJobs.EnqueueCheckpoint(ctx, job)
}

// GetCheckpoint returns one checkpoint of accountID's session, as it reads
// now (a ready one past its expiry reads expired). Errors: not_found,
// forbidden, unavailable.
func (s *Service) GetCheckpoint(ctx context.Context, accountID, sessionID, checkpointID string) (*Checkpoint, error) {
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	if _, err := s.owned(ctx, accountID, sessionID); err != nil {
		return nil, err
	}
	c, err := s.getCheckpoint(ctx, cs, sessionID, checkpointID)
	if err != nil {
		return nil, err
	}
	return c.AsOf(s.now()), nil
}

// getCheckpoint reads one checkpoint. Errors: not_found (with a sentence
// naming it), the store's.
func (s *Service) getCheckpoint(ctx context.Context, cs CheckpointStore, sessionID, checkpointID string) (*Checkpoint, error) {
	if !ValidCheckpointID(checkpointID) {
		return nil, Errorf(CodeNotFound, "checkpoint %s of session %s not found", checkpointID, sessionID)
	}
	c, err := cs.GetCheckpoint(ctx, sessionID, checkpointID)
	if IsCode(err, CodeNotFound) {
		return nil, Errorf(CodeNotFound, "checkpoint %s of session %s not found", checkpointID, sessionID)
	}
	return c, err
}

// ListCheckpoints returns accountID's session's checkpoints newest first,
// limit per page (1..MaxListLimit), after cursor, as they read now.
// Errors: invalid (limit, cursor), not_found, forbidden, unavailable.
func (s *Service) ListCheckpoints(ctx context.Context, accountID, sessionID, cursor string, limit int) (CheckpointPage, error) {
	if limit < 1 || limit > MaxListLimit {
		return CheckpointPage{}, Errorf(CodeInvalid, "limit must be between 1 and %d", MaxListLimit)
	}
	cs, err := s.checkpointStore()
	if err != nil {
		return CheckpointPage{}, err
	}
	if _, err := s.owned(ctx, accountID, sessionID); err != nil {
		return CheckpointPage{}, err
	}
	page, err := cs.ListCheckpoints(ctx, sessionID, cursor, limit)
	if err != nil {
		return CheckpointPage{}, err
	}
	now := s.now()
	for i, c := range page.Checkpoints {
		page.Checkpoints[i] = c.AsOf(now)
	}
	return page, nil
}

// DeleteCheckpoint deletes one checkpoint of accountID's session: first
// its provider snapshot or archive object, then its item (deleting is
// idempotent: a checkpoint already gone answers not_found, its object
// being gone is no error). Errors: not_found, forbidden, conflict (it is
// still saving: delete it once it is ready or failed; the provider keeps
// the snapshot while a sandbox made from it exists), unavailable
// (provider or store trouble).
func (s *Service) DeleteCheckpoint(ctx context.Context, accountID, sessionID, checkpointID string) error {
	cs, err := s.checkpointStore()
	if err != nil {
		return err
	}
	if _, err := s.owned(ctx, accountID, sessionID); err != nil {
		return err
	}
	ctx = WithCallPriority(ctx, PriorityUser)
	for attempt := 0; ; attempt++ {
		c, err := s.getCheckpoint(ctx, cs, sessionID, checkpointID)
		if err != nil {
			return err
		}
		err = s.removeCheckpoint(ctx, cs, c)
		if err == nil {
			s.recountStoredBytes(ctx, cs, sessionID)
		}
		if err == nil || !IsLostRace(err) || attempt+1 == maxConflictRetries {
			return err
		}
	}
}

// removeCheckpoint deletes c's provider snapshot or archive object, then
// its item (conditional on its version: a lost race is errLostRace).
// Errors: conflict (saving; the provider's refusal), unavailable, the
// store's.
func (s *Service) removeCheckpoint(ctx context.Context, cs CheckpointStore, c *Checkpoint) error {
	if c.State == CheckpointSaving {
		return &Error{Code: CodeConflict, RetryAfter: 5 * time.Second,
			Message: "checkpoint " + c.ID + " is still saving; delete it once it is ready or failed"}
	}
	// An archive this function cannot reach is deleted by a job once the
	// item is gone (deleteArchive): never before, so the job never finds
	// the checkpoint ready.
	handOff := c.Kind == KindArchive && s.cfg.Archives == nil
	if !handOff {
		if err := s.deleteCheckpointObject(ctx, c); err != nil {
			return err
		}
	}
	err := cs.DeleteCheckpoint(ctx, c)
	if IsCode(err, CodeNotFound) {
		return nil
	}
	if err != nil {
		return raced(err)
	}
	if handOff {
		s.deleteArchive(ctx, c)
	}
	return nil
}

// deleteArchive deletes the archive of c (deleted, or failed) in
// Archives, or, where this function keeps none (in AWS only the checkpoint
// function may touch the archive bucket), through a delete_archive job.
// Best effort: a failure is logged, and the bucket's expiry deletes what
// is left (docs/DEPLOY.md "Checkpoints in AWS").
func (s *Service) deleteArchive(ctx context.Context, c *Checkpoint) {
	if c.ArchiveKey == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	var err error
	switch {
	case s.cfg.Archives != nil:
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err = s.cfg.Archives.Delete(pctx, c.ArchiveKey)
		cancel()
	case s.cfg.CheckpointJobs != nil:
		err = s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpDeleteArchive, SessionID: c.SessionID,
			CheckpointID: c.ID, ArchiveKey: c.ArchiveKey})
	default:
		err = errors.New("no archives and no checkpoint jobs here")
	}
	if err != nil {
		s.log().WarnContext(ctx, "delete a checkpoint's archive; the bucket's expiry deletes it",
			"checkpoint_id", c.ID, "archive_key", c.ArchiveKey, "err", err)
	}
}

// deleteCheckpointObject deletes what keeps c at its provider (its
// snapshot, found by ref, else by name among its sandbox's) or in
// Archives. Something already gone is no error. Errors: conflict (the
// provider refuses: a sandbox made from the snapshot still exists),
// unavailable.
func (s *Service) deleteCheckpointObject(ctx context.Context, c *Checkpoint) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	switch c.Kind {
	case KindArchive:
		if s.cfg.Archives == nil || c.ArchiveKey == "" {
			return nil
		}
		if err := s.cfg.Archives.Delete(pctx, c.ArchiveKey); err != nil {
			return &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: err,
				Message: "the archive of checkpoint " + c.ID + " could not be deleted; retry later"}
		}
		return nil
	}
	sn, ok := As[Snapshotter](s.providerFor(c.Provider))
	if !ok {
		return nil
	}
	refs := []string{c.ProviderRef}
	if c.ProviderRef == "" {
		// A save that died before recording the ref may have taken it.
		found, err := s.snapshotsNamed(pctx, sn, c)
		if err != nil {
			return s.providerError(err, "list the sandbox's snapshots")
		}
		refs = found
	}
	for _, ref := range refs {
		if ref == "" {
			continue
		}
		if err := sn.DeleteSnapshot(pctx, ref); err != nil && !errors.Is(err, ErrCheckpointGone) {
			if errors.Is(err, ErrSandboxConflict) {
				return &Error{Code: CodeConflict, Err: err,
					Message: "the provider keeps the snapshot of checkpoint " + c.ID + " while a sandbox made from it exists"}
			}
			return s.providerError(err, "delete the snapshot")
		}
	}
	return nil
}

// snapshotsNamed returns the refs of the snapshots of c's sandbox named
// c.ID (a save's, found by name). Errors: the provider's.
func (s *Service) snapshotsNamed(ctx context.Context, sn Snapshotter, c *Checkpoint) ([]string, error) {
	if c.SourceSandboxID == "" {
		return nil, nil
	}
	list, err := sn.ListSnapshots(ctx, c.SourceSandboxID)
	if err != nil {
		return nil, err
	}
	var refs []string
	for _, snap := range list {
		if snap.Name == c.ID || snap.Ref == c.ProviderRef && c.ProviderRef != "" {
			refs = append(refs, snap.Ref)
		}
	}
	return refs, nil
}

// failCheckpoint records a saving c as failed for reason; a checkpoint
// that moved meanwhile is left as it is (logged).
func (s *Service) failCheckpoint(ctx context.Context, cs CheckpointStore, c *Checkpoint, reason string) {
	if c.State == CheckpointSaving && s.moveCheckpoint(ctx, cs, c, CheckpointFailed, reason) {
		s.log().InfoContext(ctx, "checkpoint failed", "checkpoint_id", c.ID, "session_id", c.SessionID, "reason", reason)
	}
}

// moveCheckpoint writes c moved to state to for reason (Checkpoint.Settle)
// on a settle context, and reports whether it committed; c is updated
// then. A refusal or a lost race is logged.
func (s *Service) moveCheckpoint(ctx context.Context, cs CheckpointStore, c *Checkpoint, to CheckpointState, reason string) bool {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	next := c.Clone()
	if err := next.Settle(to, reason, s.now()); err != nil {
		return false
	}
	if err := cs.UpdateCheckpoint(wctx, next, c.State); err != nil {
		s.log().WarnContext(ctx, "record a checkpoint "+string(to), "checkpoint_id", c.ID, "session_id", c.SessionID, "err", err)
		return false
	}
	*c = *next
	return true
}
