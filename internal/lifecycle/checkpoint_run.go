package lifecycle

import (
	"context"
	"fmt"
	"strings"
)

// RunCheckpointJob runs one checkpoint job (CheckpointJobs;
// docs/CHECKPOINTS.md "Jobs"): a save, a restore, a fork, a delete or a
// count of the stored bytes.
// Every job is safe to run twice. Errors: transient ones ask the queue to
// deliver the job again; invalid for an unknown op.
func (s *Service) RunCheckpointJob(ctx context.Context, job CheckpointJob) error {
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok {
		return Errorf(CodeUnavailable, "this store keeps no checkpoints")
	}
	switch job.Op {
	case CheckpointOpSave:
		return s.runSave(ctx, cs, job)
	case CheckpointOpRestore:
		return s.runRestore(WithCallPriority(ctx, PriorityUser), cs, job)
	case CheckpointOpFork:
		return s.runFork(WithCallPriority(ctx, PriorityUser), cs, job)
	case CheckpointOpDelete:
		return s.runDelete(WithCallPriority(ctx, PriorityBackground), cs, job)
	case CheckpointOpDeleteArchive:
		return s.runDeleteArchive(ctx, cs, job)
	case CheckpointOpCount:
		return s.runCount(ctx, cs, job)
	}
	return Errorf(CodeInvalid, "unknown checkpoint job op %q", job.Op)
}

// runDelete is the delete job of a purge (DeleteWithCheckpoints): it
// removes the checkpoint's object and item once it is no longer saving.
// Errors: transient (still saving, provider or store trouble).
func (s *Service) runDelete(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		c, err := cs.GetCheckpoint(ctx, job.SessionID, job.CheckpointID)
		if IsCode(err, CodeNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.removeCheckpoint(ctx, cs, c); err == nil || !IsLostRace(err) {
			if err != nil {
				return fmt.Errorf("delete checkpoint %s: %w", c.ID, err)
			}
			return nil
		}
	}
	return Errorf(CodeUnavailable, "checkpoint %s kept changing; the job runs again", job.CheckpointID)
}

// runDeleteArchive is the delete_archive job: it deletes job.ArchiveKey,
// the archive of job's checkpoint, once that checkpoint is deleted or
// failed; a checkpoint still saving or ready keeps it (a stale job does
// nothing). The key must be that checkpoint's (ArchiveKey's form). Errors:
// invalid (a key of another checkpoint), unavailable (no archives here),
// the store's and the archive store's (transient: the job runs again).
func (s *Service) runDeleteArchive(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	if !strings.HasSuffix(job.ArchiveKey, "/"+job.SessionID+"/"+job.CheckpointID+archiveKeySuffix) || job.CheckpointID == "" {
		return Errorf(CodeInvalid, "archive key %q is not checkpoint %s's", job.ArchiveKey, job.CheckpointID)
	}
	if s.cfg.Archives == nil {
		return Errorf(CodeUnavailable, "this deployment keeps no archives here")
	}
	c, err := cs.GetCheckpoint(ctx, job.SessionID, job.CheckpointID)
	switch {
	case IsCode(err, CodeNotFound):
	case err != nil:
		return err
	case c.State == CheckpointSaving || c.State == CheckpointReady:
		s.log().InfoContext(ctx, "keep the archive of a live checkpoint", "checkpoint_id", c.ID, "state", c.State)
		return nil
	}
	return s.cfg.Archives.Delete(ctx, job.ArchiveKey)
}

// DeleteWithCheckpoints is Delete (DELETE /v1/sessions/{id}?purge=true)
// that also deletes every checkpoint of the session, their snapshots and
// archives: at once where it can (the sandbox is killed first, so no
// provider still holds a snapshot for a sandbox made from it), else
// through a delete job per checkpoint (one still saving, a provider or
// store in trouble). Errors: as Delete; the store's when the checkpoints
// could not be listed (the session is killed by then: a retry purges).
func (s *Service) DeleteWithCheckpoints(ctx context.Context, accountID, id string) (*Session, error) {
	sess, err := s.Delete(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok {
		return sess, nil
	}
	all, err := s.allCheckpoints(ctx, cs, id)
	if err != nil {
		return nil, err
	}
	for _, c := range all {
		if err := s.removeCheckpoint(ctx, cs, c); err == nil {
			continue
		}
		job := CheckpointJob{Op: CheckpointOpDelete, SessionID: id, CheckpointID: c.ID}
		if err := s.enqueueCheckpoint(ctx, job); err != nil {
			s.log().WarnContext(ctx, "purge: a checkpoint was not deleted; delete the session again to retry",
				"session_id", id, "checkpoint_id", c.ID, "err", err)
		}
	}
	return sess, nil
}
