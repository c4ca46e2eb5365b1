package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestCheckpointBytesFollowReadyCheckpoints: a session's CheckpointBytes
// (what its usage accrues as stored checkpoint bytes) is the sum of its
// ready checkpoints' sizes after each becomes ready, and drops when one
// is deleted.
func TestCheckpointBytesFollowReadyCheckpoints(t *testing.T) {
	w := mustCheckpointWorld(t, true)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	if sess.CheckpointBytes != 0 {
		t.Fatalf("a new session stores %d checkpoint bytes", sess.CheckpointBytes)
	}
	w.mustWrite(t, sess.SandboxID, "a.txt", "one")
	a := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if got := w.mustGet(t, sess.ID); a.SizeBytes == 0 || got.CheckpointBytes != a.SizeBytes || got.State != lifecycle.StateRunning {
		t.Fatalf("after one checkpoint of %d bytes the session (%s) stores %d", a.SizeBytes, got.State, got.CheckpointBytes)
	}
	w.mustWrite(t, sess.SandboxID, "b.txt", "a second file, so the archive grows")
	b := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if got := w.mustGet(t, sess.ID); got.CheckpointBytes != a.SizeBytes+b.SizeBytes {
		t.Fatalf("after two checkpoints (%d + %d bytes) the session stores %d", a.SizeBytes, b.SizeBytes, got.CheckpointBytes)
	}
	if err := w.svc.DeleteCheckpoint(t.Context(), acct, sess.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if got := w.mustGet(t, sess.ID); got.CheckpointBytes != b.SizeBytes {
		t.Errorf("after deleting %s the session stores %d bytes, want %d", a.ID, got.CheckpointBytes, b.SizeBytes)
	}
}
