package lifecycle

import (
	"context"
)

// Stored bytes (docs/API.md GET /v1/usage, stored_gb_hours): a session
// carries CheckpointBytes, the summed SizeBytes of its ready checkpoints,
// so that each transition's event says what was stored while the session
// was in its From state (the stream's old image) and the usage counters
// accrue stored GB-hours per tier without reading a checkpoint.
//
// It is counted again (one query of the session's checkpoints, never a
// scan) when a checkpoint becomes ready, when one is deleted through the
// API and at the archive demotion; a count that could not be written is
// fixed by the next one. The count is best effort: a session's usage
// accrues the bytes held at the end of each interval, so a checkpoint
// that became ready in the middle of an interval counts from its start.

// readyBytes sums the SizeBytes of the ready checkpoints among all.
func readyBytes(all []*Checkpoint) int64 {
	var n int64
	for _, c := range all {
		if c.State == CheckpointReady {
			n += c.SizeBytes
		}
	}
	return n
}

// recountStoredBytes counts session id's ready checkpoint bytes and
// writes them on the session when they changed (a version-conditional
// write of the same state, retried on a lost race). A session in a
// transitional state is not written: the operation in flight owns it, and
// a same-state write would move its version under that operation's
// settling write and fail it (as a provider's event is deferred,
// webhook.go); a count job (CheckpointOpCount) counts again once it has
// settled. Best effort: a failure is logged and the next count fixes it.
func (s *Service) recountStoredBytes(ctx context.Context, cs CheckpointStore, id string) {
	if s.countStoredBytes(ctx, cs, id) {
		if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpCount, SessionID: id}); err != nil {
			s.log().WarnContext(ctx, "queue the count of stored checkpoint bytes; the next count fixes it", "session_id", id, "err", err)
		}
	}
}

// countStoredBytes is one count of recountStoredBytes; it reports whether
// the session was in a transitional state and so was left to be counted
// again.
func (s *Service) countStoredBytes(ctx context.Context, cs CheckpointStore, id string) (deferred bool) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		sess, err := s.cfg.Store.GetSession(wctx, id)
		if err != nil {
			return false // gone: nothing accrues any more
		}
		all, err := s.allCheckpoints(wctx, cs, id)
		if err != nil {
			s.log().WarnContext(ctx, "count stored checkpoint bytes", "session_id", id, "err", err)
			return false
		}
		n := readyBytes(all)
		if n == sess.CheckpointBytes || sess.State.Final() {
			return false
		}
		if sess.State.Transitional() {
			return true
		}
		sess.CheckpointBytes, sess.UpdatedAt = n, s.now()
		err = s.commit(wctx, sess, sess.State, Guard{})
		if !IsCode(err, CodeConflict) {
			if err != nil {
				s.log().WarnContext(ctx, "record stored checkpoint bytes", "session_id", id, "err", err)
			}
			return false
		}
	}
	return false
}

// runCount is the count job: the session's stored checkpoint bytes
// counted again once no operation is in flight. Errors: unavailable while
// the session is still in a transitional state (the queue delivers the
// job again).
func (s *Service) runCount(ctx context.Context, cs CheckpointStore, job CheckpointJob) error {
	if s.countStoredBytes(ctx, cs, job.SessionID) {
		return Errorf(CodeUnavailable, "session %s has an operation in flight; its stored bytes are counted when it settles", job.SessionID)
	}
	return nil
}
