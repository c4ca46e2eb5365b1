package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// checkpointsOf returns a session's checkpoints, newest first.
func (w *ckptWorld) checkpointsOf(t *testing.T, id string) []*lifecycle.Checkpoint {
	t.Helper()
	page, err := w.svc.ListCheckpoints(t.Context(), acct, id, "", lifecycle.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	return page.Checkpoints
}

// idlePause advances the clock past sess's idle deadline and sweeps.
func (w *ckptWorld) idlePause(t *testing.T, id string) {
	t.Helper()
	w.clock.Set(w.mustGet(t, id).PauseDeadline().Add(time.Second))
	if sum := MustRun(t, w.sweeper); sum.Paused != 1 {
		t.Fatalf("sweep = %+v, want one pause", sum)
	}
}

// TestCheckpointOnPause: an automatic pause records a checkpoint (trigger
// pause), whichever way the provider saves: a snapshot of the paused
// sandbox, one taken just before the pause where the provider snapshots
// only running sandboxes, or an archive. A pause asked for records none.
func TestCheckpointOnPause(t *testing.T) {
	for _, tc := range []struct {
		name    string
		archive bool
		paused  bool // the provider snapshots paused sandboxes
	}{{"SnapshotAfter", false, true}, {"SnapshotBefore", false, false}, {"Archive", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t, tc.archive)
			if w.snaps != nil {
				w.snaps.Caps.SnapshotsPaused = tc.paused
			}
			sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60,
				Checkpoints: lifecycle.CheckpointOptions{OnPause: ptr(true)}})
			w.mustWrite(t, sess.SandboxID, "work.txt", "w")
			w.idlePause(t, sess.ID)
			w.drain(t)
			list := w.checkpointsOf(t, sess.ID)
			if len(list) != 1 || list[0].Trigger != lifecycle.TriggerPause || list[0].State != lifecycle.CheckpointReady {
				t.Fatalf("checkpoints = %+v, want one ready pause checkpoint", list)
			}
			if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePaused {
				t.Errorf("session = %s, want paused", got)
			}
			if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
				t.Fatal(err)
			}
			w.drain(t)
			if n := len(w.checkpointsOf(t, sess.ID)); n != 1 {
				t.Errorf("%d checkpoints after a pause asked for, want still 1", n)
			}
		})
	}
}

// TestCheckpointsKeep: automatic checkpoints beyond the keep count are
// deleted, snapshots included, the newest kept; manual ones stay.
func TestCheckpointsKeep(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	w.snaps.Caps.SnapshotsPaused = true
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60,
		Checkpoints: lifecycle.CheckpointOptions{OnPause: ptr(true), Keep: ptr(2)}})
	manual := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	for range 3 {
		w.idlePause(t, sess.ID)
		w.drain(t)
		if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
			t.Fatal(err)
		}
	}
	list := w.checkpointsOf(t, sess.ID)
	auto := 0
	for _, c := range list {
		if c.Trigger == lifecycle.TriggerPause {
			auto++
		}
	}
	if auto != 2 || list[len(list)-1].ID != manual.ID {
		t.Errorf("checkpoints = %d (automatic %d), want the manual one and 2 automatic", len(list), auto)
	}
	if n := len(w.snaps.Snapshots()); n != 3 {
		t.Errorf("the provider holds %d snapshots, want 3 (the pruned one deleted)", n)
	}
}

// TestScheduledCheckpoints: with checkpoint_every, the sweep takes one a
// period after the run began when there was activity, and none for a
// period without.
func TestScheduledCheckpoints(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 86400,
		Checkpoints: lifecycle.CheckpointOptions{EverySeconds: ptr(int64(600))}})
	if !sess.NextCheckpointAt.Equal(w.clock.Now().Add(10 * time.Minute)) {
		t.Fatalf("next checkpoint at %v, want in 10 min", sess.NextCheckpointAt)
	}
	w.clock.Advance(5 * time.Minute)
	if _, err := w.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(5 * time.Minute)
	if sum := MustRun(t, w.sweeper); sum.CheckpointsScheduled != 1 {
		t.Errorf("sweep = %+v, want one scheduled checkpoint", sum)
	}
	w.drain(t)
	if list := w.checkpointsOf(t, sess.ID); len(list) != 1 || list[0].Trigger != lifecycle.TriggerSchedule || list[0].State != lifecycle.CheckpointReady {
		t.Fatalf("checkpoints = %+v, want one ready scheduled one", list)
	}
	w.clock.Advance(10 * time.Minute)
	if sum := MustRun(t, w.sweeper); sum.CheckpointsScheduled != 0 {
		t.Errorf("sweep after a quiet period = %+v, want no checkpoint", sum)
	}
	if got := w.mustGet(t, sess.ID).NextCheckpointAt; !got.Equal(w.clock.Now().Add(10 * time.Minute)) {
		t.Errorf("next checkpoint at %v, want moved a period on", got)
	}
	if _, _, err := w.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base",
		Checkpoints: lifecycle.CheckpointOptions{EverySeconds: ptr(int64(5))}}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("checkpoint_every_seconds 5 = %v, want invalid", err)
	}
}

// TestReconcileFindsALostSnapshotByName: a save that died between the
// provider's snapshot and the table write leaves the checkpoint saving;
// past its lease the sweep finds the snapshot by its name and records the
// checkpoint ready, so no snapshot is left that nothing accounts for.
func TestReconcileFindsALostSnapshotByName(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 86400})
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	w.jobs.Take() // the job dies after the provider's snapshot:
	if _, err := w.snaps.Snapshot(t.Context(), sess.SandboxID, lifecycle.SnapshotRequest{Name: c.ID}); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(c.LeaseExpiresAt.Add(-time.Second))
	if sum := MustRun(t, w.sweeper); sum.CheckpointsDue != 0 {
		t.Errorf("sweep within the lease = %+v, want nothing due", sum)
	}
	w.clock.Set(c.LeaseExpiresAt.Add(time.Second))
	if sum := MustRun(t, w.sweeper); sum.CheckpointsDue != 1 || sum.CheckpointsResolved != 1 {
		t.Errorf("sweep past the lease = %+v, want one resolved", sum)
	}
	got, err := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID)
	if err != nil || got.State != lifecycle.CheckpointReady || got.ProviderRef != w.snaps.Snapshots()[0].Ref {
		t.Errorf("checkpoint = %+v (%v), want ready holding the snapshot found", got, err)
	}
	if evs := w.log.Checkpoints(sess.ID); len(evs) != 1 || evs[0].Checkpoint.State != lifecycle.CheckpointReady {
		t.Errorf("checkpoint events = %+v, want one ready", evs)
	}
}

// TestReconcileFailsASaveThatNeverHappened: no snapshot by the
// checkpoint's name: failed, with checkpoint.failed.
func TestReconcileFailsASaveThatNeverHappened(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 86400})
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	w.jobs.Take()
	w.clock.Set(c.LeaseExpiresAt.Add(time.Second))
	MustRun(t, w.sweeper)
	got, _ := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID)
	if got.State != lifecycle.CheckpointFailed || got.Reason == "" {
		t.Errorf("checkpoint = %s (%q), want failed saying why", got.State, got.Reason)
	}
	if evs := w.log.Checkpoints(sess.ID); len(evs) != 1 || evs[0].DetailType() != "Checkpoint Failed" {
		t.Errorf("checkpoint events = %+v, want one Checkpoint Failed", evs)
	}
}

// TestLostRestoreIsPutBackByTheSweep: a restore whose job never ran is put
// back, past its lease, where the provider's sandbox is, saying why.
func TestLostRestoreIsPutBackByTheSweep(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 86400})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	restoring, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.jobs.Take()
	w.clock.Set(restoring.LeaseExpiresAt.Add(time.Second))
	MustRun(t, w.sweeper)
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonReconcile || got.SandboxID != sess.SandboxID || got.RestoreError == "" {
		t.Errorf("after the sweep = %s (%s) on %s, error %q; want running on the old sandbox saying why",
			got.State, got.Reason, got.SandboxID, got.RestoreError)
	}
	w.MustHistory(t, sess.ID)
}

// TestSnapshotThatStopsItsSourceResumesIt: on a provider whose snapshot
// stops the sandbox (Vercel), a running session's sandbox runs again after
// its checkpoint.
func TestSnapshotThatStopsItsSourceResumesIt(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	w.snaps.Caps = lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem, StopsSource: true, SnapshotsPaused: true}
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if c.Keeps != lifecycle.KeepsFilesystem {
		t.Errorf("keeps = %s, want filesystem", c.Keeps)
	}
	w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
}

// TestSaveWaitsForASlowSnapshot: a snapshot still saving after the job's
// wait sends the job back to its queue; a later run records it ready.
func TestSaveWaitsForASlowSnapshot(t *testing.T) {
	w := mustCheckpointWorld(t, false, func(c *lifecycle.Config) { c.CheckpointWait, c.CheckpointPoll = 3*time.Second, time.Second })
	w.snaps.SavingLooks = 5
	w.rewire(t, func(c *lifecycle.Config) {
		c.Sleep = func(ctx context.Context, d time.Duration) error { w.clock.Advance(d); return ctx.Err() }
	})
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	if errs := w.jobs.Drain(t.Context(), w.svc.RunCheckpointJob, 1); len(errs) != 1 {
		t.Fatalf("first run = %v, want it sent back (still saving)", errs)
	}
	w.drain(t)
	if got, _ := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID); got.State != lifecycle.CheckpointReady {
		t.Errorf("checkpoint = %s, want ready", got.State)
	}
	if n := len(w.snaps.Snapshots()); n != 1 {
		t.Errorf("%d snapshots, want 1 (the second run found the first's by name)", n)
	}
}
