package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Automatic checkpoints (docs/CHECKPOINTS.md "Automatic checkpoints"): on
// an automatic pause (Session.CheckpointOnPause) and every
// Session.CheckpointEvery of activity, with the automatic ones beyond
// Session.CheckpointsKeep deleted (PruneCheckpoints). A failure here never
// fails the pause or the sweep: it is logged, and the checkpoint (when its
// item was written) ends failed.

// automaticPause reports whether a pause for reason is one Sandman decided
// on (idle, away, lifetime), as opposed to a request or a report.
func automaticPause(reason string) bool {
	return reason == ReasonIdle || reason == ReasonAway || reason == ReasonLifetime
}

// preparePauseCheckpoint starts the checkpoint of an automatic pause of
// sess (running, about to pause) when it must be taken before the pause:
// on a provider whose snapshots need a running sandbox and whose pause is
// no snapshot (E2B), the snapshot is asked for now and the save job waits
// for it. It reports whether it did, so the pause's own hook
// (checkpointAfterPause) takes no second one.
func (s *Service) preparePauseCheckpoint(ctx context.Context, sess *Session, reason string) bool {
	if !sess.CheckpointOnPause || !automaticPause(reason) {
		return false
	}
	p := s.provider(sess)
	sn, ok := As[Snapshotter](p)
	if !ok || Has[PauseSnapshotter](p) || sn.SnapshotCaps().SnapshotsPaused {
		return false
	}
	cs, c, err := s.startAutomatic(ctx, sess, TriggerPause)
	if err != nil {
		return true // logged; the pause goes on
	}
	if _, _, err := s.takeSnapshot(ctx, cs, c, sess); err != nil {
		s.log().WarnContext(ctx, "checkpoint before a pause: the snapshot was not taken; the save job tries again",
			"session_id", sess.ID, "checkpoint_id", c.ID, "err", err)
	}
	s.queueSave(ctx, cs, c)
	return true
}

// checkpointAfterPause records the checkpoint of an automatic pause of
// sess (now paused), unless preparePauseCheckpoint took it already.
func (s *Service) checkpointAfterPause(ctx context.Context, sess *Session, reason string, taken bool) {
	if taken || !sess.CheckpointOnPause || !automaticPause(reason) {
		return
	}
	cs, c, err := s.startAutomatic(ctx, sess, TriggerPause)
	if err == nil {
		s.queueSave(ctx, cs, c)
	}
}

// startAutomatic writes a saving automatic checkpoint of sess for trigger.
// Errors are logged and returned.
func (s *Service) startAutomatic(ctx context.Context, sess *Session, trigger CheckpointTrigger) (CheckpointStore, *Checkpoint, error) {
	cs, err := s.checkpointStore()
	if err == nil {
		var c *Checkpoint
		if c, err = s.newCheckpoint(sess, trigger); err == nil {
			if err = cs.CreateCheckpoint(ctx, c); err == nil {
				return cs, c, nil
			}
		}
	}
	s.log().WarnContext(ctx, "automatic checkpoint not taken", "session_id", sess.ID, "trigger", trigger, "err", err)
	return nil, nil, err
}

// queueSave queues c's save job; a checkpoint whose job cannot be queued
// ends failed.
func (s *Service) queueSave(ctx context.Context, cs CheckpointStore, c *Checkpoint) {
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpSave, SessionID: c.SessionID, CheckpointID: c.ID}); err != nil {
		s.log().WarnContext(ctx, "queue a checkpoint's save", "checkpoint_id", c.ID, "err", err)
		s.failCheckpoint(ctx, cs, c, "the save could not be queued")
	}
}

// CheckpointIfDue takes the scheduled checkpoint of a running session
// whose NextCheckpointAt is at or before now (the sweep's lease phase
// finds it: Session.LeaseDue): it moves the schedule on by
// CheckpointEvery (a conditional write, so two sweeps take one), and when
// there was activity since the last automatic checkpoint, writes one
// (trigger schedule) and queues its save. It reports whether it took one.
// Errors: the store's (a lost race is no error: nothing is taken).
func (s *Service) CheckpointIfDue(ctx context.Context, sess *Session) (bool, error) {
	now := s.now()
	if sess.State != StateRunning || sess.NextCheckpointAt.IsZero() || now.Before(sess.NextCheckpointAt) {
		return false, nil
	}
	active := sess.LastActivityAt.After(sess.LastCheckpointAt)
	sess.NextCheckpointAt, sess.UpdatedAt = now.Add(max(sess.CheckpointEvery, MinCheckpointEvery)), now
	if active {
		sess.LastCheckpointAt = now
	}
	if err := s.commit(ctx, sess, StateRunning, Guard{}); err != nil {
		if IsCode(err, CodeConflict) {
			return false, nil
		}
		return false, err
	}
	if !active {
		return false, nil
	}
	cs, c, err := s.startAutomatic(ctx, sess, TriggerSchedule)
	if err != nil {
		return false, nil
	}
	s.queueSave(ctx, cs, c)
	return true, nil
}

// pruneCheckpoints deletes the automatic checkpoints of session sessionID
// beyond its keep count (PruneCheckpoints). Failures are logged: the next
// automatic checkpoint prunes again.
func (s *Service) pruneCheckpoints(ctx context.Context, cs CheckpointStore, sessionID string) {
	sess, err := s.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return
	}
	all, err := s.allCheckpoints(ctx, cs, sessionID)
	if err != nil {
		s.log().WarnContext(ctx, "prune automatic checkpoints: list", "session_id", sessionID, "err", err)
		return
	}
	for _, c := range PruneCheckpoints(all, sess.CheckpointsKeep, s.now()) {
		if err := s.removeCheckpoint(ctx, cs, c); err != nil {
			s.log().WarnContext(ctx, "prune an automatic checkpoint", "session_id", sessionID, "checkpoint_id", c.ID, "err", err)
		}
	}
}

// allCheckpoints returns every checkpoint of a session, newest first.
// Errors: the store's.
func (s *Service) allCheckpoints(ctx context.Context, cs CheckpointStore, sessionID string) ([]*Checkpoint, error) {
	var all []*Checkpoint
	cursor := ""
	for {
		page, err := cs.ListCheckpoints(ctx, sessionID, cursor, MaxListLimit)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Checkpoints...)
		if cursor = page.Cursor; cursor == "" {
			return all, nil
		}
	}
}

// resumeAfterSnapshot resumes the running session sess's sandbox after a
// snapshot stopped it (SnapshotCaps.StopsSource, Vercel Sandbox), and
// records its new preview and expiry. Processes are not kept by such a
// snapshot, so an app is brought up again (readiness starting, a job
// queued). A failure is logged: the sweep's provider list finds the
// sandbox stopped and records the session paused.
func (s *Service) resumeAfterSnapshot(ctx context.Context, sess *Session) {
	now := s.now()
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	sb, err := s.provider(sess).Resume(pctx, sess.SandboxID, s.cfg.Policy.ProviderTimeout(sess, now))
	cancel()
	if err != nil {
		s.log().WarnContext(ctx, "resume a sandbox its snapshot stopped", "session_id", sess.ID, "err", err)
		return
	}
	_, err = s.retryConflicts(ctx, sess.AccountID, sess.ID, func(cur *Session) error {
		if cur.State != StateRunning || cur.SandboxID != sess.SandboxID {
			return nil
		}
		cur.SandboxExpiresAt, cur.UpdatedAt = sb.ExpiresAt, s.now()
		if sb.PreviewURL != "" {
			cur.PreviewURL = s.appPreviewURL(ctx, cur, sb.PreviewURL)
		}
		restart := cur.App != nil
		if restart {
			// The app's run starts again: readiness counts from now.
			cur.Readiness, cur.ReadinessDetail, cur.ReadyAt, cur.AppExitCode = ReadinessStarting, "", time.Time{}, nil
			cur.StateChangedAt = s.now()
		}
		if err := s.commit(ctx, cur, StateRunning, Guard{}); err != nil {
			return raced(err)
		}
		if restart && s.cfg.ReadinessJobs != nil {
			if err := s.cfg.ReadinessJobs.Enqueue(ctx, cur.ID); err != nil {
				s.log().WarnContext(ctx, "queue the readiness job after a snapshot", "session_id", cur.ID, "err", err)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log().WarnContext(ctx, "record the sandbox resumed after its snapshot", "session_id", sess.ID, "err", err)
	}
}
