package lifecycle_test

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
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
