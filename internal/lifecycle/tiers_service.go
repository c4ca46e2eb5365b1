package lifecycle

import (
	"context"
	"errors"
	"time"
)

// The sweep's side of the retention tiers (tiers.go; docs/CHECKPOINTS.md
// "Retention tiers"). A demotion never loses work:
//
//   - paused → archived needs a ready checkpoint of the session's current
//     sandbox taken at or after its last activity (archiveCheckpoint). When
//     there is none, one is taken (trigger archive) and the session stays
//     paused until it is ready (TierRetryAt); when none can be taken, the
//     session stays paused and TierError says why (logged). With one, the
//     conditional write paused → archived (reason archive, TierPending)
//     commits first, then the provider's sandbox is killed, then a write
//     clears TierPending and the sandbox id. The write before the kill is
//     the only lock against a resume racing the demotion: once it commits,
//     a resume is an unarchive (a restore of the checkpoint), never a
//     resume of the sandbox being killed. A crash between the write and
//     the kill leaves the session archived with TierPending, due at once:
//     the next sweep kills the sandbox (gone is success) and clears it.
//   - → deleted (reason retention, TierPending) likewise commits first;
//     then the sandbox (if any) is killed and every checkpoint deleted, and
//     a last write clears TierPending. A crash in between leaves it due at
//     once, and the next sweep finishes the purge.

// TierOutcome says what ApplyTier did.
type TierOutcome string

// The tier outcomes.
const (
	TierNothing  TierOutcome = "nothing"  // not due (moved meanwhile, or not yet)
	TierArchived TierOutcome = "archived" // paused → archived committed (and its sandbox killed, unless pending)
	TierDeleted  TierOutcome = "deleted"  // → deleted committed (and purged, unless pending)
	TierFinished TierOutcome = "finished" // the provider work of an earlier demotion was finished
	TierWaiting  TierOutcome = "waiting"  // a checkpoint for the archive is being taken
	TierKept     TierOutcome = "kept"     // no checkpoint could be taken: the session stays paused (TierError)
)

// TierRetryInterval is how long a session whose demotion could not take
// a checkpoint, or whose provider work failed, waits before the sweep
// tries again; tierCheckpointPoll how often a sweep looks whether the
// checkpoint of an archive is ready.
const (
	TierRetryInterval  = time.Hour
	tierCheckpointPoll = time.Minute
)

// TriggerArchive is the trigger of the checkpoint a demotion to archived
// takes when the session has none that holds its work.
const TriggerArchive CheckpointTrigger = "archive"

// ApplyTier does the tier transition session id owes now (NextTier): the
// sweep calls it for every session the tier index finds due. The session
// is read again first, and each step is a conditional write, so two
// sweeps at once, or a resume meanwhile, leave one outcome. A session the
// index holds under a key older than its tiers (nothing due) is written
// once as it is, which moves its key. Errors: the store's, the
// provider's (the session stays as it was, due again after
// TierRetryInterval).
func (s *Service) ApplyTier(ctx context.Context, id string) (TierOutcome, error) {
	ctx = WithCallPriority(ctx, PriorityBackground)
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if IsCode(err, CodeNotFound) {
		return TierNothing, nil
	}
	if err != nil {
		return TierNothing, err
	}
	now := s.now()
	to, at := sess.NextTier()
	switch {
	case to == "" && sess.State == StatePaused:
		sess.UpdatedAt = now
		return TierNothing, ignoreRace(s.commit(ctx, sess, sess.State, Guard{})) // rekey
	case to == "" || at.After(now):
		return TierNothing, nil
	case sess.TierPending:
		return s.finishTier(ctx, sess)
	case to == StateDeleted:
		return s.deleteForRetention(ctx, sess)
	}
	return s.archive(ctx, sess)
}

// archive demotes paused sess to archived once a checkpoint holds its work.
func (s *Service) archive(ctx context.Context, sess *Session) (TierOutcome, error) {
	c, saving, why := s.archiveCheckpoint(ctx, sess)
	switch {
	case c == nil && saving:
		return TierWaiting, s.holdTier(ctx, sess, tierCheckpointPoll, "")
	case c == nil && why == "":
		started, err := s.startArchiveCheckpoint(ctx, sess)
		if err == nil {
			s.log().InfoContext(ctx, "archive: checkpoint first", "session_id", sess.ID, "checkpoint_id", started.ID)
			return TierWaiting, s.holdTier(ctx, sess, tierCheckpointPoll, "")
		}
		why = "no checkpoint could be taken: " + userMessage(err)
	}
	if c == nil {
		s.log().WarnContext(ctx, "archive: the session stays paused", "session_id", sess.ID, "why", why)
		return TierKept, s.holdTier(ctx, sess, TierRetryInterval, why)
	}
	if err := sess.Transition(StateArchived, ReasonArchive, s.now(), s.cfg.Policy); err != nil {
		return TierNothing, nil
	}
	sess.TierPending = true
	if err := s.commit(ctx, sess, StatePaused, Guard{}); err != nil {
		return TierNothing, ignoreRace(err)
	}
	s.log().InfoContext(ctx, "session archived", "session_id", sess.ID, "checkpoint_id", c.ID, "sandbox_id", sess.SandboxID)
	if _, err := s.finishTier(ctx, sess); err != nil {
		return TierArchived, err
	}
	return TierArchived, nil
}

// archiveCheckpoint returns the newest ready checkpoint that holds paused
// sess's work (of its current sandbox, taken at or after its last
// activity, restorable onto its provider now), or nil with saving true
// when one is being taken, or nil with why set when none can be looked
// for (no checkpoints here, the store could not list them). With c it
// sets sess.CheckpointBytes to what the archived session keeps.
func (s *Service) archiveCheckpoint(ctx context.Context, sess *Session) (c *Checkpoint, saving bool, why string) {
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, false, "this deployment keeps no checkpoints"
	}
	all, err := s.allCheckpoints(ctx, cs, sess.ID)
	if err != nil {
		return nil, false, "the checkpoints could not be listed: " + err.Error()
	}
	for _, c := range all {
		if c.SourceSandboxID != sess.SandboxID || c.CreatedAt.Before(sess.LastActivityAt) {
			continue
		}
		switch {
		case c.State == CheckpointSaving:
			saving = true
		case c.State == CheckpointReady && c.Restorable(s.now()) == nil && s.checkProvider(sess, c) == nil:
			sess.CheckpointBytes = readyBytes(all) // what the archived tier keeps
			return c, false, ""
		}
	}
	return nil, saving, ""
}

// startArchiveCheckpoint writes a saving checkpoint of sess (trigger
// archive) and queues its save. Errors: why none can be taken.
func (s *Service) startArchiveCheckpoint(ctx context.Context, sess *Session) (*Checkpoint, error) {
	cs, err := s.checkpointStore()
	if err != nil {
		return nil, err
	}
	c, err := s.newCheckpoint(sess, TriggerArchive)
	if err != nil {
		return nil, err
	}
	if err := cs.CreateCheckpoint(ctx, c); err != nil {
		return nil, err
	}
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpSave, SessionID: sess.ID, CheckpointID: c.ID}); err != nil {
		s.failCheckpoint(ctx, cs, c, "the save could not be queued")
		return nil, err
	}
	return c, nil
}

// holdTier records that sess's demotion waits: no new try before now +
// wait, with why ("" while a checkpoint is being taken). A lost race is
// no error: whoever moved the session decides.
func (s *Service) holdTier(ctx context.Context, sess *Session, wait time.Duration, why string) error {
	sess.TierRetryAt, sess.TierError, sess.UpdatedAt = s.now().Add(wait), why, s.now()
	return ignoreRace(s.commit(ctx, sess, sess.State, Guard{}))
}

// deleteForRetention commits sess (paused or archived) deleted, reason
// retention, and purges it (finishTier).
func (s *Service) deleteForRetention(ctx context.Context, sess *Session) (TierOutcome, error) {
	from := sess.State
	if err := sess.Transition(StateDeleted, ReasonRetention, s.now(), s.cfg.Policy); err != nil {
		return TierNothing, nil
	}
	sess.TierPending = true
	if err := s.commit(ctx, sess, from, Guard{}); err != nil {
		return TierNothing, ignoreRace(err)
	}
	s.log().InfoContext(ctx, "session deleted: its retention ended", "session_id", sess.ID, "from", from)
	if _, err := s.finishTier(ctx, sess); err != nil {
		return TierDeleted, err
	}
	return TierDeleted, nil
}

// finishTier does the provider work of sess's last tier transition
// (TierPending): kill its sandbox, and for a deleted session delete every
// checkpoint, then clear TierPending (an archived session's sandbox id
// too). A step that fails leaves it pending, due again after
// TierRetryInterval. Errors: the failed step's.
func (s *Service) finishTier(ctx context.Context, sess *Session) (TierOutcome, error) {
	if sess.SandboxID != "" {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err := s.provider(sess).Kill(pctx, sess.SandboxID)
		cancel()
		if err != nil && !errors.Is(err, ErrSandboxGone) {
			return TierNothing, s.tierFailed(ctx, sess, "kill the sandbox", err)
		}
	}
	if sess.State == StateDeleted {
		if err := s.purgeCheckpoints(ctx, sess.ID); err != nil {
			return TierNothing, s.tierFailed(ctx, sess, "delete the checkpoints", err)
		}
	}
	if sess.State == StateArchived {
		sess.SandboxID = ""
	}
	sess.TierPending, sess.TierRetryAt, sess.UpdatedAt = false, time.Time{}, s.now()
	if err := s.commit(ctx, sess, sess.State, Guard{}); err != nil {
		return TierNothing, ignoreRace(err)
	}
	return TierFinished, nil
}

// tierFailed logs a failed step of a tier transition and holds the
// session back for TierRetryInterval; it returns the step's error.
func (s *Service) tierFailed(ctx context.Context, sess *Session, step string, err error) error {
	s.log().WarnContext(ctx, "retention tier: "+step+" failed; the sweep tries again", "session_id", sess.ID, "state", sess.State, "err", err)
	if herr := s.holdTier(ctx, sess, TierRetryInterval, ""); herr != nil {
		s.log().WarnContext(ctx, "retention tier: record the retry", "session_id", sess.ID, "err", herr)
	}
	return err
}

// purgeCheckpoints deletes every checkpoint of session id. Errors: the
// first that could not be deleted (one still saving, provider or store
// trouble).
func (s *Service) purgeCheckpoints(ctx context.Context, id string) error {
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok {
		return nil
	}
	all, err := s.allCheckpoints(ctx, cs, id)
	if err != nil {
		return err
	}
	var first error
	for _, c := range all {
		if err := s.removeCheckpoint(ctx, cs, c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ignoreRace returns nil for a lost race (conflict) and err otherwise.
func ignoreRace(err error) error {
	if IsCode(err, CodeConflict) {
		return nil
	}
	return err
}

// unarchive starts the restore of archived sess from its newest ready
// checkpoint (reason unarchive): archived → restoring, then a restore
// job (runRestore) makes the sandbox and swaps it in (restoring →
// running, reason unarchive); a restore that fails puts it back archived.
// The write is conditional on the version read, so of a burst of opens
// one starts it. An archived session with no ready checkpoint left (it
// expired or was deleted) ends expired. Errors: conflict (raced),
// quota_exceeded, unavailable (no checkpoints here, the job could not be
// queued; TypeSandboxExpired when nothing was left to restore).
func (s *Service) unarchive(ctx context.Context, sess *Session) error {
	if _, err := s.checkpointStore(); err != nil {
		return err
	}
	c := s.newestReady(ctx, sess)
	if c == nil {
		sess.RestoreError = "no ready checkpoint is left to restore"
		if err := s.transition(ctx, sess, StateExpired, ReasonUnarchive, Guard{}); err != nil {
			return raced(err)
		}
		return s.providerError(ErrSandboxGone, "restore the archived session")
	}
	sess.RestoreCheckpointID, sess.RestoreFrom, sess.RestoreError = c.ID, StateArchived, ""
	sess.RunningLimit = s.maxRunning(ctx)
	if err := s.transition(ctx, sess, StateRestoring, ReasonUnarchive, Guard{}); err != nil {
		return raced(err)
	}
	s.log().InfoContext(ctx, "unarchiving the session", "session_id", sess.ID, "checkpoint_id", c.ID)
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpRestore, SessionID: sess.ID, CheckpointID: c.ID}); err != nil {
		s.rollbackRestore(ctx, sess, "the restore could not be queued")
		return &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: err,
			Message: "the restore of the archived session could not be queued; retry later"}
	}
	return nil
}
