package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
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

// A checkpoint that becomes ready while an operation is in flight (here a
// pause) does not write the session under it: the pause's settling write
// still lands (before, the recount moved the session's version and the
// pause failed with a conflict), and a count job records the bytes once
// the session has settled.
func TestACheckpointReadyMidPauseLeavesThePauseAlone(t *testing.T) {
	w := mustCheckpointWorld(t, true)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	w.mustWrite(t, sess.SandboxID, "a.txt", "one")
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	var ranMidPause []string
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpPause {
			return
		}
		for _, job := range w.jobs.Take() { // the save, while the session is pausing
			if err := w.svc.RunCheckpointJob(t.Context(), job); err != nil {
				t.Errorf("%s job mid-pause: %v", job.Op, err)
			}
			ranMidPause = append(ranMidPause, job.Op)
		}
	})
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("a pause with a checkpoint becoming ready under it: %v", err)
	}
	w.fake.SetOnCall(nil)
	if len(ranMidPause) != 1 || ranMidPause[0] != lifecycle.CheckpointOpSave {
		t.Fatalf("jobs run mid-pause = %v, want the save", ranMidPause)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.CheckpointBytes != 0 {
		t.Fatalf("after the pause = %s storing %d bytes, want paused with the count left to its job", got.State, got.CheckpointBytes)
	}
	w.drain(t) // the count job
	ready, err := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID)
	if err != nil || ready.State != lifecycle.CheckpointReady || ready.SizeBytes == 0 {
		t.Fatalf("checkpoint = %+v, %v; want ready with a size", ready, err)
	}
	if got := w.mustGet(t, sess.ID); got.CheckpointBytes != ready.SizeBytes || got.State != lifecycle.StatePaused {
		t.Errorf("after the count job the session (%s) stores %d bytes, want %d", got.State, got.CheckpointBytes, ready.SizeBytes)
	}
}
