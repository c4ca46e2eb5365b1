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
// write of the same state, retried on a lost race). Best effort: a
// failure is logged and the next count fixes it.
func (s *Service) recountStoredBytes(ctx context.Context, cs CheckpointStore, id string) {
	wctx, cancel := settleContext(ctx)
	defer cancel()
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		sess, err := s.cfg.Store.GetSession(wctx, id)
		if err != nil {
			return // gone: nothing accrues any more
		}
		all, err := s.allCheckpoints(wctx, cs, id)
		if err != nil {
			s.log().WarnContext(ctx, "count stored checkpoint bytes", "session_id", id, "err", err)
			return
		}
		n := readyBytes(all)
		if n == sess.CheckpointBytes || sess.State.Final() {
			return
		}
		sess.CheckpointBytes, sess.UpdatedAt = n, s.now()
		err = s.commit(wctx, sess, sess.State, Guard{})
		if !IsCode(err, CodeConflict) {
			if err != nil {
				s.log().WarnContext(ctx, "record stored checkpoint bytes", "session_id", id, "err", err)
			}
			return
		}
	}
}
