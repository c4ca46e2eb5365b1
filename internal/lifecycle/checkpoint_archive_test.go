package lifecycle_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// TestAnArchiveIsDeletedByAJobWhereNoArchivesAreKept: a function that
// keeps no archives (in AWS the sessions function and the sweep: only the
// checkpoint function may touch the bucket) deletes an archive checkpoint's
// item at once and hands its archive object to a delete_archive job, which
// the checkpoint function runs; a job for a checkpoint still ready, or for
// a key not its checkpoint's, deletes nothing.
func TestAnArchiveIsDeletedByAJobWhereNoArchivesAreKept(t *testing.T) {
	w := mustCheckpointWorld(t, true)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	kept := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	cfg := w.svc.Config()
	cfg.Archives = nil
	sessions := lifecycle.NewService(cfg)
	ctx := t.Context()

	if err := sessions.DeleteCheckpoint(ctx, acct, sess.ID, c.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := sessions.GetCheckpoint(ctx, acct, sess.ID, c.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("get after the delete = %v, want not_found", err)
	}
	if !slices.Contains(w.archives.Keys(), c.ArchiveKey) {
		t.Fatal("the sessions function reached the archives")
	}
	jobs := w.jobs.Take()
	want := lifecycle.CheckpointJob{Op: lifecycle.CheckpointOpDeleteArchive, SessionID: sess.ID, CheckpointID: c.ID, ArchiveKey: c.ArchiveKey}
	if len(jobs) != 1 || jobs[0] != want {
		t.Fatalf("jobs %+v, want %+v", jobs, want)
	}
	for range 2 { // safe to run twice
		if err := w.svc.RunCheckpointJob(ctx, jobs[0]); err != nil {
			t.Fatalf("run the job: %v", err)
		}
	}
	if slices.Contains(w.archives.Keys(), c.ArchiveKey) {
		t.Error("the job left the archive")
	}

	stale := lifecycle.CheckpointJob{Op: lifecycle.CheckpointOpDeleteArchive, SessionID: sess.ID, CheckpointID: kept.ID, ArchiveKey: kept.ArchiveKey}
	if err := w.svc.RunCheckpointJob(ctx, stale); err != nil {
		t.Fatalf("a job for a ready checkpoint: %v", err)
	}
	foreign := stale
	foreign.CheckpointID = c.ID
	if err := w.svc.RunCheckpointJob(ctx, foreign); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("a job whose key is another checkpoint's = %v, want invalid", err)
	}
	if !slices.Contains(w.archives.Keys(), kept.ArchiveKey) {
		t.Error("a ready checkpoint's archive was deleted")
	}
}

// runningSnapsAndArchives is a provider like E2B: snapshots of running
// sandboxes only, and a workspace that streams out and in as a tar.
type runningSnapsAndArchives struct {
	*reliability.SnapshotProvider
	arch *reliability.ArchiveProvider
}

func (p runningSnapsAndArchives) ExportTar(ctx context.Context, id, dir string, ex []string, w io.Writer) (int64, error) {
	return p.arch.ExportTar(ctx, id, dir, ex, w)
}

func (p runningSnapsAndArchives) ImportTar(ctx context.Context, id, dir string, r io.Reader) error {
	return p.arch.ImportTar(ctx, id, dir, r)
}

// TestTheKindIsChosenWhereNoArchivesAreKept: in AWS only the checkpoint
// function holds the archive bucket, but the functions that choose a
// checkpoint's kind (the sessions function, the sweep, pause, timer,
// webhook) do not. On a provider whose snapshots take only running
// sandboxes, a paused session's checkpoint is an archive wherever the
// deployment keeps archives (Config.ArchivesKept), the checkpoint
// function's job saves it, and a process that may only read archives
// (Config.ArchiveReader: the sweep) restores it; without ArchivesKept the
// same request is a conflict (resume first).
func TestTheKindIsChosenWhereNoArchivesAreKept(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	p := runningSnapsAndArchives{SnapshotProvider: w.snaps, arch: reliability.NewArchiveProvider(w.fake)}
	w.rewire(t, func(c *lifecycle.Config) { c.Provider, c.Archives = p, w.archives })
	checkpointFn := w.svc
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	at := func(edit func(*lifecycle.Config)) *lifecycle.Service {
		cfg := checkpointFn.Config()
		cfg.Archives = nil
		edit(&cfg)
		return lifecycle.NewService(cfg)
	}

	bare := at(func(*lifecycle.Config) {})
	if _, _, err := bare.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{}); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("a checkpoint of a paused session where no archives are kept = %v, want conflict", err)
	}
	sessions := at(func(c *lifecycle.Config) { c.ArchivesKept = true })
	c, _, err := sessions.CreateCheckpoint(t.Context(), acct, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatalf("a checkpoint of a paused session where the jobs keep archives: %v", err)
	}
	if c.Kind != lifecycle.KindArchive || c.ArchiveKey == "" {
		t.Fatalf("checkpoint kind %s, key %q; want an archive with its key", c.Kind, c.ArchiveKey)
	}
	if errs := w.jobs.Drain(t.Context(), checkpointFn.RunCheckpointJob, 5); len(errs) > 0 {
		t.Fatalf("the checkpoint function's jobs: %v", errs)
	}
	if got, err := sessions.GetCheckpoint(t.Context(), acct, sess.ID, c.ID); err != nil || got.State != lifecycle.CheckpointReady {
		t.Fatalf("after its job the checkpoint is %+v, %v; want ready", got, err)
	}
	if !slices.Contains(w.archives.Keys(), c.ArchiveKey) {
		t.Fatal("the checkpoint function kept no archive")
	}

	sweep := at(func(c *lifecycle.Config) { c.ArchivesKept, c.ArchiveReader = true, w.archives })
	if _, err := sweep.Restore(t.Context(), acct, sess.ID, c.ID); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if errs := w.jobs.Drain(t.Context(), sweep.RunCheckpointJob, 5); len(errs) > 0 {
		t.Fatalf("a restore where archives are only read: %v", errs)
	}
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateRunning || got.SandboxID == sess.SandboxID {
		t.Errorf("after the restore the session is %s on %s, want running on a new sandbox", got.State, got.SandboxID)
	}
	if !slices.Contains(w.archives.Keys(), c.ArchiveKey) {
		t.Error("a restore deleted the archive")
	}
}
