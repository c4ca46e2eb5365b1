package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestRestoreIdempotencyKeyStartsOneRestore: a restore repeated with its
// Idempotency-Key, while it runs and after it is done, answers the session
// as it is (replayed) and starts nothing; the key with another checkpoint
// is a conflict; a new key restores again.
func TestRestoreIdempotencyKeyStartsOneRestore(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	first := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{Label: "one"})
	second := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{Label: "two"})

	restoring, replayed, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, first.ID, "r-1")
	if err != nil || replayed || restoring.State != lifecycle.StateRestoring {
		t.Fatalf("first restore = %v, replayed %v, %v; want restoring, not replayed", restoring, replayed, err)
	}
	again, replayed, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, first.ID, "r-1")
	if err != nil || !replayed || again.State != lifecycle.StateRestoring {
		t.Fatalf("repeat while restoring = %v, replayed %v, %v; want the restoring session, replayed", again, replayed, err)
	}
	w.drain(t)
	done := w.mustGet(t, sess.ID)
	if done.State != lifecycle.StateRunning || done.RestoreKey != "r-1" {
		t.Fatalf("after the restore = %s (key %q), want running with the key kept", done.State, done.RestoreKey)
	}
	restores := func() int {
		n := 0
		for _, ev := range w.log.For(sess.ID) {
			if ev.To == lifecycle.StateRestoring {
				n++
			}
		}
		return n
	}
	if n := restores(); n != 1 {
		t.Fatalf("%d transitions to restoring, want 1", n)
	}

	late, replayed, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, first.ID, "r-1")
	if err != nil || !replayed || late.State != lifecycle.StateRunning || late.SandboxID != done.SandboxID {
		t.Fatalf("repeat after it was done = %v, replayed %v, %v; want the running session, replayed", late, replayed, err)
	}
	if _, _, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, second.ID, "r-1"); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("the key with another checkpoint: %v, want a conflict", err)
	}
	if n := restores(); n != 1 {
		t.Fatalf("%d transitions to restoring after the replays, want 1", n)
	}
	if _, replayed, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, second.ID, "r-2"); err != nil || replayed {
		t.Fatalf("a new key: replayed %v, %v; want a new restore", replayed, err)
	}
	w.drain(t)
	if n := restores(); n != 2 {
		t.Errorf("%d transitions to restoring, want 2", n)
	}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'k'
	}
	if _, _, err := w.svc.RestoreIdempotent(t.Context(), acct, sess.ID, second.ID, string(long)); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("a 300-character key: %v, want invalid", err)
	}
}
