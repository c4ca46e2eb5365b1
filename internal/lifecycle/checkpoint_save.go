package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The save job (CheckpointOpSave): it takes a saving checkpoint to ready
// or failed. Every step is found again by a job run twice: a provider
// snapshot by its name (the checkpoint's id) among its sandbox's, an
// archive by its key (saved again whole); every write is conditional on
// the checkpoint's version, and a save whose checkpoint moved meanwhile
// (deleted, or failed by the sweep) deletes what it made, so no snapshot
// or archive is left that no ready checkpoint accounts for.

// errStillSaving asks the queue to run a save job again: the provider's
// snapshot is not ready yet.
var errStillSaving = errors.New("the provider's snapshot is still saving")

// runSave is the save job of checkpoint job.CheckpointID.
func (s *Service) runSave(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	c, err := cs.GetCheckpoint(ctx, job.SessionID, job.CheckpointID)
	if IsCode(err, CodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.save(ctx, cs, c)
}

// save takes the saving checkpoint c to ready or failed, as the save job
// does; c is updated to what is stored. Errors: transient ones (the queue
// runs the job again; the sweep resolves c once its lease expires).
func (s *Service) save(ctx context.Context, cs CheckpointStore, c *Checkpoint) error {
	if c.State != CheckpointSaving {
		return nil
	}
	ctx = WithCallPriority(ctx, PriorityBackground)
	sess, err := s.cfg.Store.GetSession(ctx, c.SessionID)
	if IsCode(err, CodeNotFound) {
		s.failCheckpoint(ctx, cs, c, "the session is gone")
		return nil
	}
	if err != nil {
		return err
	}
	if c.Kind == KindArchive {
		return s.saveArchive(ctx, cs, c, sess)
	}
	snap, sn, err := s.takeSnapshot(ctx, cs, c, sess)
	if err != nil || sn == nil {
		return err
	}
	return s.finishSnapshot(ctx, cs, c, sn, snap)
}

// takeSnapshot finds the snapshot of the saving checkpoint c (by its ref,
// else by its name among its sandbox's) or asks the provider for it, and
// records its ref on c (renewing the lease). A nil Snapshotter means c is
// settled (failed, or moved meanwhile). Errors: transient.
func (s *Service) takeSnapshot(ctx context.Context, cs CheckpointStore, c *Checkpoint, sess *Session) (Snapshot, Snapshotter, error) {
	p := s.providerFor(c.Provider)
	sn, ok := As[Snapshotter](p)
	if !ok {
		s.failCheckpoint(ctx, cs, c, "the "+c.Provider+" provider has no snapshots")
		return Snapshot{}, nil, nil
	}
	snap, found, err := s.findSnapshot(ctx, sn, c)
	if err != nil {
		return Snapshot{}, nil, err
	}
	if !found {
		if sess.SandboxID != c.SourceSandboxID || sess.State.Final() {
			s.failCheckpoint(ctx, cs, c, "the session's sandbox changed before it was saved")
			return Snapshot{}, nil, nil
		}
		if snap, err = s.snapshotSandbox(ctx, p, sn, c, sess); err != nil {
			switch {
			case errors.Is(err, ErrSandboxGone):
				s.failCheckpoint(ctx, cs, c, "the sandbox is gone")
				return Snapshot{}, nil, nil
			case errors.Is(err, ErrProviderTransient), errors.Is(err, ErrSandboxConflict), errors.Is(err, context.DeadlineExceeded):
				return Snapshot{}, nil, err
			}
			s.failCheckpoint(ctx, cs, c, "the provider refused the snapshot: "+err.Error())
			return Snapshot{}, nil, nil
		}
	}
	if c.ProviderRef != snap.Ref {
		next := c.Clone()
		next.ProviderRef, next.UpdatedAt = snap.Ref, s.now()
		next.LeaseExpiresAt = s.now().Add(s.checkpointLease())
		if err := cs.UpdateCheckpoint(ctx, next, CheckpointSaving); err != nil {
			return Snapshot{}, nil, s.lostSave(ctx, cs, c, snap.Ref, err)
		}
		*c = *next
	}
	return snap, sn, nil
}

// snapshotSandbox takes the snapshot of c's sandbox: the one its pause
// made when c is a pause's and the provider's pause snapshots
// (PauseSnapshotter), else a new one named c.ID. A provider whose
// snapshot stops its source (SnapshotCaps.StopsSource) has a running
// session's sandbox resumed after it. Errors: the provider's.
func (s *Service) snapshotSandbox(ctx context.Context, p Provider, sn Snapshotter, c *Checkpoint, sess *Session) (Snapshot, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if ps, ok := As[PauseSnapshotter](p); ok && c.Trigger == TriggerPause {
		snap, ok, err := ps.PauseSnapshot(pctx, c.SourceSandboxID)
		if err != nil || ok {
			return snap, err
		}
	}
	snap, err := sn.Snapshot(pctx, c.SourceSandboxID, SnapshotRequest{Name: c.ID})
	if err != nil {
		return Snapshot{}, err
	}
	if sn.SnapshotCaps().StopsSource && sess.State == StateRunning {
		s.resumeAfterSnapshot(ctx, sess)
	}
	return snap, nil
}

// findSnapshot looks for c's snapshot: by its ref when recorded, else by
// its name among its sandbox's. Errors: transient.
func (s *Service) findSnapshot(ctx context.Context, sn Snapshotter, c *Checkpoint) (Snapshot, bool, error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if c.ProviderRef != "" {
		snap, err := sn.GetSnapshot(pctx, c.ProviderRef)
		if errors.Is(err, ErrCheckpointGone) {
			return Snapshot{}, false, nil
		}
		return snap, err == nil, err
	}
	list, err := sn.ListSnapshots(pctx, c.SourceSandboxID)
	if errors.Is(err, ErrSandboxGone) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, err
	}
	for _, snap := range list {
		if snap.Name == c.ID {
			return snap, true, nil
		}
	}
	return Snapshot{}, false, nil
}

// finishSnapshot waits (up to Config.CheckpointWait) for c's snapshot to
// be ready and records the outcome: ready with its size, keeps and expiry,
// or failed (the snapshot, if any, deleted). Errors: errStillSaving (run
// the job again later), transient.
func (s *Service) finishSnapshot(ctx context.Context, cs CheckpointStore, c *Checkpoint, sn Snapshotter, snap Snapshot) error {
	deadline := s.now().Add(s.cfg.CheckpointWait)
	for snap.State == SnapshotSaving {
		if !s.now().Before(deadline) {
			return fmt.Errorf("checkpoint %s: %w", c.ID, errStillSaving)
		}
		if err := s.sleep(ctx, s.cfg.CheckpointPoll); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		next, err := sn.GetSnapshot(pctx, snap.Ref)
		cancel()
		switch {
		case errors.Is(err, ErrCheckpointGone):
			s.failCheckpoint(ctx, cs, c, "the provider lost the snapshot while it was saving")
			return nil
		case err != nil:
			return err
		}
		snap = next
	}
	if snap.State != SnapshotReady {
		s.failCheckpoint(ctx, cs, c, "the provider's snapshot failed: "+snap.Reason)
		s.deleteSnapshotQuietly(ctx, sn, snap.Ref)
		return nil
	}
	next := c.Clone()
	next.ProviderRef, next.SizeBytes, next.ExpiresAt = snap.Ref, snap.SizeBytes, snap.ExpiresAt
	if snap.Keeps != "" {
		next.Keeps = snap.Keeps
	}
	return s.settleReady(ctx, cs, c, next)
}

// settleReady writes next (c made ready) and prunes the session's
// automatic checkpoints beyond its keep count. A checkpoint that moved
// meanwhile has what next holds deleted (lostSave). Errors: the store's.
func (s *Service) settleReady(ctx context.Context, cs CheckpointStore, c, next *Checkpoint) error {
	if err := next.Settle(CheckpointReady, "", s.now()); err != nil {
		return nil
	}
	wctx, cancel := settleContext(ctx)
	defer cancel()
	if err := cs.UpdateCheckpoint(wctx, next, CheckpointSaving); err != nil {
		return s.lostSave(wctx, cs, c, next.ProviderRef, err)
	}
	*c = *next
	s.log().InfoContext(ctx, "checkpoint ready", "checkpoint_id", c.ID, "session_id", c.SessionID, "kind", c.Kind, "size_bytes", c.SizeBytes)
	if c.Trigger.Automatic() {
		s.pruneCheckpoints(wctx, cs, c.SessionID)
	}
	s.recountStoredBytes(wctx, cs, c.SessionID)
	return nil
}

// lostSave handles a save whose write of c failed with werr: when c is
// gone or no longer saving (deleted, or failed by the sweep) and does not
// hold what this save made (ref, or c's archive), that is deleted, so no
// orphan is left billed; a store error is returned for a retry.
func (s *Service) lostSave(ctx context.Context, cs CheckpointStore, c *Checkpoint, ref string, werr error) error {
	if !IsCode(werr, CodeConflict) && !IsCode(werr, CodeNotFound) {
		return werr
	}
	cur, err := cs.GetCheckpoint(ctx, c.SessionID, c.ID)
	switch {
	case err == nil && cur.State == CheckpointSaving:
		// Another run of the save wrote first: run again on what it
		// recorded, deleting a second snapshot this run took meanwhile.
		if sn, ok := As[Snapshotter](s.providerFor(c.Provider)); ok && ref != "" && cur.ProviderRef != "" && cur.ProviderRef != ref {
			s.deleteSnapshotQuietly(ctx, sn, ref)
		}
		return errLostRace{werr}
	case err == nil && cur.State == CheckpointReady && (cur.Kind == KindArchive || cur.ProviderRef == ref):
		*c = *cur
		return nil // another run settled it with the same object
	case err != nil && !IsCode(err, CodeNotFound):
		return err
	}
	s.log().InfoContext(ctx, "checkpoint moved while it was saved; deleting what the save made",
		"checkpoint_id", c.ID, "session_id", c.SessionID, "ref", ref)
	if c.Kind == KindArchive && s.cfg.Archives != nil {
		if err := s.cfg.Archives.Delete(ctx, c.ArchiveKey); err != nil {
			s.log().WarnContext(ctx, "delete an orphaned archive", "checkpoint_id", c.ID, "err", err)
		}
		return nil
	}
	if sn, ok := As[Snapshotter](s.providerFor(c.Provider)); ok && ref != "" {
		s.deleteSnapshotQuietly(ctx, sn, ref)
	}
	return nil
}

// deleteSnapshotQuietly deletes snapshot ref, logging a failure.
func (s *Service) deleteSnapshotQuietly(ctx context.Context, sn Snapshotter, ref string) {
	if ref == "" {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if err := sn.DeleteSnapshot(pctx, ref); err != nil && !errors.Is(err, ErrCheckpointGone) {
		s.log().WarnContext(ctx, "delete an orphaned snapshot", "ref", ref, "err", err)
	}
}

// saveArchive saves c as an archive: the provider streams the workspace
// folder out as a tar (WorkspaceArchiver.ExportTar) and Archives stores it
// compressed under c.ArchiveKey (whole or not at all, so a job run twice
// stores it again). Errors: transient (the provider's, the store's).
func (s *Service) saveArchive(ctx context.Context, cs CheckpointStore, c *Checkpoint, sess *Session) error {
	wa, ok := As[WorkspaceArchiver](s.providerFor(c.Provider))
	switch {
	case !ok || s.cfg.Archives == nil:
		s.failCheckpoint(ctx, cs, c, "this deployment cannot archive the "+c.Provider+" provider's sandboxes")
		return nil
	case sess.SandboxID != c.SourceSandboxID || sess.State.Final():
		s.failCheckpoint(ctx, cs, c, "the session's sandbox changed before it was saved")
		return nil
	}
	ws := s.workspace(c.Template)
	size, exportErr, err := s.exportArchive(ctx, wa, c, ws)
	switch {
	case errors.Is(exportErr, ErrSandboxGone):
		s.failCheckpoint(ctx, cs, c, "the sandbox is gone")
		return nil
	case exportErr != nil && !errors.Is(exportErr, ErrProviderTransient) && ctx.Err() == nil:
		s.failCheckpoint(ctx, cs, c, "the workspace could not be archived: "+exportErr.Error())
		return nil
	case exportErr != nil:
		return exportErr
	case err != nil:
		return fmt.Errorf("store the archive of checkpoint %s: %w", c.ID, err)
	}
	next := c.Clone()
	next.SizeBytes, next.Keeps = size, KeepsFilesystem
	if s.cfg.ArchiveRetention > 0 {
		next.ExpiresAt = s.now().Add(s.cfg.ArchiveRetention)
	}
	return s.settleReady(ctx, cs, c, next)
}

// exportArchive streams c's sandbox's workspace ws into Archives. It
// returns the stored size, the export's error and the store's.
func (s *Service) exportArchive(ctx context.Context, wa WorkspaceArchiver, c *Checkpoint, ws Workspace) (int64, error, error) {
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var exportErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, exportErr = wa.ExportTar(ctx, c.SourceSandboxID, ws.Dir, ws.Excludes, pw)
		pw.CloseWithError(exportErr) // nil: EOF
	}()
	size, err := s.cfg.Archives.Save(ctx, c.ArchiveKey, pr)
	pr.CloseWithError(errors.New("the archive store stopped reading")) // unblocks a failed save's export
	wg.Wait()
	return size, exportErr, err
}
