package lifecycle_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// ckptWorld is a world whose provider keeps files and snapshots
// (reliability.SnapshotProvider, or an ArchiveProvider with MemArchives),
// with a checkpoint job queue the test drains.
type ckptWorld struct {
	*world
	snaps    *reliability.SnapshotProvider // nil on the archive path
	arch     *reliability.ArchiveProvider  // nil on the snapshot path
	archives *reliability.MemArchives
	jobs     *reliability.Jobs
}

// mustCheckpointWorld builds a ckptWorld on the snapshot path, or the
// archive path when archive is true; edit may change the configuration.
func mustCheckpointWorld(t *testing.T, archive bool, edit ...func(*lifecycle.Config)) *ckptWorld {
	t.Helper()
	w := &ckptWorld{world: MustWorld(t), jobs: &reliability.Jobs{}, archives: reliability.NewMemArchives()}
	w.rewire(t, func(c *lifecycle.Config) {
		if archive {
			w.arch = reliability.NewArchiveProvider(w.fake)
			c.Provider, c.Archives = w.arch, w.archives
		} else {
			w.snaps = reliability.NewSnapshotProvider(w.fake, w.clock)
			c.Provider = w.snaps
		}
		c.CheckpointJobs = w.jobs
		for _, f := range edit {
			f(c)
		}
	})
	return w
}

// files returns the provider's lifecycle.Files.
func (w *ckptWorld) files() lifecycle.Files {
	if w.arch != nil {
		return w.arch
	}
	return w.snaps
}

func (w *ckptWorld) mustWrite(t *testing.T, sandboxID, name, content string) {
	t.Helper()
	if err := w.files().WriteFile(t.Context(), sandboxID, lifecycle.DefaultWorkspaceDir+"/"+name, []byte(content)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// wantFile fails unless name holds content in sandboxID ("" for absent).
func (w *ckptWorld) wantFile(t *testing.T, sandboxID, name, content string) {
	t.Helper()
	got, err := w.files().ReadFile(t.Context(), sandboxID, lifecycle.DefaultWorkspaceDir+"/"+name)
	switch {
	case content == "" && err == nil:
		t.Errorf("%s holds %q in %s, want no such file", name, got, sandboxID)
	case content != "" && (err != nil || string(got) != content):
		t.Errorf("%s in %s = %q, %v; want %q", name, sandboxID, got, err, content)
	}
}

// drain runs the queued checkpoint jobs and fails on a job that keeps
// failing.
func (w *ckptWorld) drain(t *testing.T) {
	t.Helper()
	if errs := w.jobs.Drain(t.Context(), w.svc.RunCheckpointJob, 5); len(errs) > 0 {
		t.Fatalf("checkpoint jobs failed: %v", errs)
	}
}

// mustCheckpoint takes a checkpoint of id through the API and its job.
func (w *ckptWorld) mustCheckpoint(t *testing.T, id string, in lifecycle.CheckpointInput) *lifecycle.Checkpoint {
	t.Helper()
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, id, in)
	if err != nil {
		t.Fatalf("create checkpoint: %v", err)
	}
	if c.State != lifecycle.CheckpointSaving {
		t.Fatalf("new checkpoint is %s, want saving", c.State)
	}
	w.drain(t)
	got, err := w.svc.GetCheckpoint(t.Context(), acct, id, c.ID)
	if err != nil || got.State != lifecycle.CheckpointReady {
		t.Fatalf("checkpoint after its job = %+v (%v), want ready", got, err)
	}
	return got
}

// TestCheckpointThenRestoreInPlace is the done-when flow on the snapshot
// path and the archive path: write a file, checkpoint, write a second
// file, restore → the first file is there, the second is not, same
// session (id, link), a new sandbox, the old one killed only after.
func TestCheckpointThenRestoreInPlace(t *testing.T) {
	for _, archive := range []bool{false, true} {
		name := map[bool]string{false: "Snapshot", true: "Archive"}[archive]
		t.Run(name, func(t *testing.T) {
			w := mustCheckpointWorld(t, archive)
			sess := w.mustCreate(t, lifecycle.CreateInput{})
			old := sess.SandboxID
			w.mustWrite(t, old, "first.txt", "one")
			c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{Label: "good", Metadata: map[string]string{"k": "v"}})
			wantKind := map[bool]lifecycle.CheckpointKind{false: lifecycle.KindSnapshot, true: lifecycle.KindArchive}[archive]
			if c.Kind != wantKind || c.Label != "good" || c.Trigger != lifecycle.TriggerAPI || c.SizeBytes == 0 {
				t.Errorf("checkpoint = %+v, want kind %s with its label, trigger api and a size", c, wantKind)
			}
			if evs := w.log.Checkpoints(sess.ID); len(evs) != 1 || evs[0].DetailType() != "Checkpoint Ready" || evs[0].Checkpoint.ID != c.ID {
				t.Errorf("checkpoint events = %+v, want one Checkpoint Ready", evs)
			}
			w.mustWrite(t, old, "second.txt", "two")

			restoring, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID)
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			if restoring.State != lifecycle.StateRestoring || restoring.SandboxID != old || restoring.Reason != lifecycle.ReasonRestore {
				t.Fatalf("restore answered %s (sandbox %s, reason %s), want restoring with the old sandbox", restoring.State, restoring.SandboxID, restoring.Reason)
			}
			if got := w.sandboxState(old); got != lifecycle.SandboxRunning {
				t.Errorf("the old sandbox is %s while restoring, want running", got)
			}
			w.drain(t)
			got := w.mustGet(t, sess.ID)
			if got.ID != sess.ID || got.State != lifecycle.StateRunning || got.SandboxID == old || got.Reason != lifecycle.ReasonRestore ||
				got.RestoreCheckpointID != c.ID || got.RestoreError != "" {
				t.Fatalf("after the restore = %+v, want the same session running on a new sandbox", got)
			}
			w.wantFile(t, got.SandboxID, "first.txt", "one")
			w.wantFile(t, got.SandboxID, "second.txt", "")
			if st := w.sandboxState(old); st != sandboxGone {
				t.Errorf("the old sandbox is %s, want killed", st)
			}
			if tags := w.fake.Sandboxes(); len(tags) != 1 || tags[0].Metadata[lifecycle.MetadataSessionID] != sess.ID {
				t.Errorf("the provider holds %+v, want only the new sandbox, tagged with the session", tags)
			}
			var to []lifecycle.State
			for _, ev := range w.log.For(sess.ID) {
				to = append(to, ev.To)
			}
			if n := len(to); n < 2 || to[n-2] != lifecycle.StateRestoring || to[n-1] != lifecycle.StateRunning {
				t.Errorf("events to %v, want restoring then running last", to)
			}
			w.MustHistory(t, sess.ID)
		})
	}
}

// TestCheckpointIdempotencyKeyGivesOne: retries with one Idempotency-Key
// answer the first checkpoint and queue one save.
func TestCheckpointIdempotencyKeyGivesOne(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	in := lifecycle.CheckpointInput{IdempotencyKey: "ck-1"}
	first, replay, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, in)
	if err != nil || replay {
		t.Fatalf("first = %v, replay %v", err, replay)
	}
	for range 2 {
		again, replay, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, in)
		if err != nil || !replay || again.ID != first.ID {
			t.Fatalf("retry = %+v, replay %v, %v; want the first checkpoint replayed", again, replay, err)
		}
	}
	if jobs := w.jobs.Take(); len(jobs) != 1 {
		t.Errorf("%d jobs queued, want 1", len(jobs))
	}
	page, err := w.svc.ListCheckpoints(t.Context(), acct, sess.ID, "", 10)
	if err != nil || len(page.Checkpoints) != 1 {
		t.Errorf("list = %d checkpoints (%v), want 1", len(page.Checkpoints), err)
	}
}

// TestRestoreRefusesWhatCannotRestore: failed and expired checkpoints are
// refused with their error types, a saving one asks for a retry, and
// nothing moves.
func TestRestoreRefusesWhatCannotRestore(t *testing.T) {
	w := mustCheckpointWorld(t, false, func(c *lifecycle.Config) {})
	w.snaps.Caps.Retention = time.Hour
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 86400})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if c.ExpiresAt.IsZero() {
		t.Fatal("a snapshot with the provider's retention has no expiry")
	}
	sess = w.mustGet(t, sess.ID) // as the ready checkpoint's byte count left it
	saving, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, saving.ID); errorType(err) != lifecycle.TypeCheckpointSaving {
		t.Errorf("restore of a saving checkpoint = %v, want %s", err, lifecycle.TypeCheckpointSaving)
	}
	w.jobs.Take() // it never saves
	w.clock.Advance(2 * time.Hour)
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID); errorType(err) != lifecycle.TypeCheckpointExpired {
		t.Errorf("restore of an expired checkpoint = %v, want %s", err, lifecycle.TypeCheckpointExpired)
	}
	if got, _ := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID); got.State != lifecycle.CheckpointExpired {
		t.Errorf("an expired checkpoint reads %s", got.State)
	}
	if _, err := w.svc.ReconcileCheckpoint(t.Context(), saving); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, saving.ID); errorType(err) != lifecycle.TypeCheckpointFailed {
		t.Errorf("restore of a failed checkpoint = %v, want %s", err, lifecycle.TypeCheckpointFailed)
	}
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, "chk_0123456789abcdefghijklmnop"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("restore of an unknown checkpoint = %v, want not_found", err)
	}
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateRunning || got.Version != sess.Version {
		t.Errorf("after the refusals the session is %s v%d, want running v%d", got.State, got.Version, sess.Version)
	}
	if _, err := w.svc.Restore(t.Context(), "acct_other", sess.ID, c.ID); !lifecycle.IsCode(err, lifecycle.CodeForbidden) {
		t.Errorf("another account's restore = %v, want forbidden", err)
	}
}

// TestFailedRestoreLeavesTheSessionAsItWas: a checkpoint the provider lost
// fails the restore; the session is back running on its old sandbox,
// reason restore_failed, saying why, and the checkpoint reads expired.
func TestFailedRestoreLeavesTheSessionAsItWas(t *testing.T) {
	for _, paused := range []bool{false, true} {
		t.Run(map[bool]string{false: "FromRunning", true: "FromPaused"}[paused], func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess := w.mustCreate(t, lifecycle.CreateInput{})
			c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
			want := lifecycle.StateRunning
			if paused {
				if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
					t.Fatal(err)
				}
				want = lifecycle.StatePaused
			}
			if err := w.snaps.DeleteSnapshot(t.Context(), c.ProviderRef); err != nil {
				t.Fatal(err)
			}
			if _, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID); err != nil {
				t.Fatal(err)
			}
			w.drain(t)
			got := w.mustGet(t, sess.ID)
			if got.State != want || got.Reason != lifecycle.ReasonRestoreFailed || got.SandboxID != sess.SandboxID || got.RestoreError == "" {
				t.Errorf("after a failed restore = %s (reason %s, sandbox %s, error %q), want %s on the old sandbox saying why",
					got.State, got.Reason, got.SandboxID, got.RestoreError, want)
			}
			if len(w.fake.Sandboxes()) != 1 {
				t.Errorf("the provider holds %d sandboxes, want the old one only", len(w.fake.Sandboxes()))
			}
			if cur, _ := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID); cur.State != lifecycle.CheckpointExpired {
				t.Errorf("the lost checkpoint is %s, want expired", cur.State)
			}
			w.MustHistory(t, sess.ID)
		})
	}
}

// TestDeleteCheckpointRemovesTheSnapshot: delete removes the provider's
// snapshot and the item; deleting again is not_found; a saving one is
// refused.
func TestDeleteCheckpointRemovesTheSnapshot(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if err := w.svc.DeleteCheckpoint(t.Context(), acct, sess.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	if snaps := w.snaps.Snapshots(); len(snaps) != 0 {
		t.Errorf("the provider still holds %+v", snaps)
	}
	if err := w.svc.DeleteCheckpoint(t.Context(), acct, sess.ID, c.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("second delete = %v, want not_found", err)
	}
	saving, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.svc.DeleteCheckpoint(t.Context(), acct, sess.ID, saving.ID); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("delete of a saving checkpoint = %v, want conflict", err)
	}
}

// TestPurgeDeletesEveryCheckpoint: DELETE …?purge=true kills the session
// and deletes its checkpoints and their snapshots.
func TestPurgeDeletesEveryCheckpoint(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{Pin: true})
	got, err := w.svc.DeleteWithCheckpoints(t.Context(), acct, sess.ID)
	if err != nil || got.State != lifecycle.StateKilled {
		t.Fatalf("purge = %+v, %v", got, err)
	}
	w.drain(t)
	if snaps := w.snaps.Snapshots(); len(snaps) != 0 {
		t.Errorf("the provider still holds %d snapshots", len(snaps))
	}
	if page, err := w.svc.ListCheckpoints(t.Context(), acct, sess.ID, "", 10); err != nil || len(page.Checkpoints) != 0 {
		t.Errorf("checkpoints left: %d (%v)", len(page.Checkpoints), err)
	}
}

// TestCheckpointsNeedAQueue: without a job queue the checkpoint
// operations answer unavailable and write nothing.
func TestCheckpointsNeedAQueue(t *testing.T) {
	w := mustCheckpointWorld(t, false, func(c *lifecycle.Config) { c.CheckpointJobs = nil })
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	if _, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{}); !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("create = %v, want unavailable", err)
	}
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, "chk_0123456789abcdefghijklmnop"); !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("restore = %v, want unavailable", err)
	}
}

// TestRestoreSurvivesAWriteMeanwhile: a presence write to the restoring
// session between the job's read and its swap is no reason to give the
// restore up: the swap is tried again on a fresh read.
func TestRestoreSurvivesAWriteMeanwhile(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{AwayTimeoutSeconds: ptr(int64(600))})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if _, _, err := w.svc.SetPresence(t.Context(), acct, sess.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	wrote := false
	w.rec.SetRefuse(func(next *lifecycle.Session, from lifecycle.State) error {
		if from == lifecycle.StateRestoring && next.State == lifecycle.StateRunning && !wrote {
			wrote = true // a client comes back just before the swap
			if _, ok, err := w.svc.SetPresence(t.Context(), acct, sess.ID, true); err != nil || !ok {
				t.Errorf("presence write = %v, %v", ok, err)
			}
		}
		return nil
	})
	w.drain(t)
	w.rec.SetRefuse(nil)
	got := w.mustGet(t, sess.ID)
	if !wrote || got.State != lifecycle.StateRunning || got.SandboxID == sess.SandboxID {
		t.Errorf("after the restore = %s on %s (a write meanwhile: %v), want running on a new sandbox", got.State, got.SandboxID, wrote)
	}
	if n := len(w.fake.Sandboxes()); n != 1 {
		t.Errorf("the provider holds %d sandboxes, want 1", n)
	}
}

// TestSaveRunTwiceKeepsOneSnapshot: two runs of one save job at once (a
// queue's redelivery) end with one ready checkpoint and one snapshot: the
// run that lost the race deletes the snapshot it took.
func TestSaveRunTwiceKeepsOneSnapshot(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	job := w.jobs.Take()[0]
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.svc.RunCheckpointJob(t.Context(), job) // a lost race is an error: the queue runs it again
		}()
	}
	wg.Wait()
	if err := w.svc.RunCheckpointJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	got, err := w.svc.GetCheckpoint(t.Context(), acct, sess.ID, c.ID)
	if err != nil || got.State != lifecycle.CheckpointReady {
		t.Fatalf("checkpoint = %+v (%v), want ready", got, err)
	}
	if snaps := w.snaps.Snapshots(); len(snaps) != 1 || snaps[0].Ref != got.ProviderRef {
		t.Errorf("the provider holds %+v, want the one snapshot the checkpoint holds (%s)", snaps, got.ProviderRef)
	}
}
