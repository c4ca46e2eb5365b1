package reliability_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// mustPausedArchivable creates a session that archives an hour after its
// pause and is deleted two days after it, takes a ready checkpoint of it
// while it runs, and pauses it: the archive needs no new checkpoint.
func (w *ckptWorld) mustPausedArchivable(t *testing.T) (*lifecycle.Session, *lifecycle.Checkpoint) {
	t.Helper()
	archive, del := time.Hour, 48*time.Hour
	sess, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 86400,
		Tiers: lifecycle.Tiers{ArchiveAfter: &archive, DeleteAfter: &del}})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := w.svc.CreateCheckpoint(t.Context(), account, sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	w.drain(t)
	if _, err := w.svc.PauseNow(t.Context(), account, sess.ID); err != nil {
		t.Fatal(err)
	}
	return w.MustSession(t, sess.ID), c
}

// mustNoLoss fails unless session id holds a sandbox the provider has
// (paused, or archived with its kill pending) or is archived with a ready
// checkpoint, and unless the provider holds no sandbox of the session
// other than the one it records.
func (w *ckptWorld) mustNoLoss(t *testing.T, id string) *lifecycle.Session {
	t.Helper()
	sess := w.MustSession(t, id)
	_, alive := w.fake.Sandbox(sess.SandboxID)
	switch sess.State {
	case lifecycle.StatePaused:
		if !alive {
			t.Fatalf("paused session %s holds sandbox %q, which the provider does not have", id, sess.SandboxID)
		}
	case lifecycle.StateArchived:
		cps, err := w.svc.ListCheckpoints(t.Context(), account, id, "", 10)
		if err != nil || len(cps.Checkpoints) == 0 || cps.Checkpoints[0].State != lifecycle.CheckpointReady {
			t.Fatalf("archived session %s has no ready checkpoint: %+v (%v)", id, cps, err)
		}
	default:
		t.Fatalf("session %s is %s, want paused or archived", id, sess.State)
	}
	for _, sb := range w.fake.Sandboxes() {
		if sb.Metadata[lifecycle.MetadataSessionID] == id && sb.ID != sess.SandboxID {
			t.Errorf("the provider holds sandbox %s of session %s, which records %q", sb.ID, id, sess.SandboxID)
		}
	}
	return sess
}

// TestCrashMidDemotion: the sweep's demotion paused → archived killed at
// each step (before the archived write, after it and before the provider
// kill, after the kill and before the write that records it) leaves the
// session paused with its sandbox or archived with a ready checkpoint,
// never neither; the next sweep finishes it: archived, the provider
// holding no sandbox of it, and an open restores the checkpoint's work.
func TestCrashMidDemotion(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
		want lifecycle.State // right after the crash
	}{
		{"BeforeTheArchivedWrite", writeStep(lifecycle.StatePaused, lifecycle.StateArchived), lifecycle.StatePaused},
		{"BeforeTheProviderKill", callStep("kill"), lifecycle.StateArchived},
		{"BeforeTheKillIsRecorded", writeStep(lifecycle.StateArchived, lifecycle.StateArchived), lifecycle.StateArchived},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t)
			sess, c := w.mustPausedArchivable(t)
			w.clock.Advance(time.Hour)
			dying, crasher := w.dying(tc.at)
			if _, err := dying.ApplyTier(t.Context(), sess.ID); !errors.Is(err, reliability.ErrCrashed) {
				t.Fatalf("the dying demotion answered %v, want the crash", err)
			}
			mustDead(t, crasher)
			if got := w.mustNoLoss(t, sess.ID); got.State != tc.want {
				t.Fatalf("after the crash the session is %s, want %s", got.State, tc.want)
			}

			if sum := w.MustSweep(t); sum.TierDue != 1 {
				t.Errorf("the next sweep found %d due, want 1", sum.TierDue)
			}
			got := w.mustNoLoss(t, sess.ID)
			if got.State != lifecycle.StateArchived || got.SandboxID != "" || got.TierPending {
				t.Fatalf("after the sweep = %s sandbox %q pending %v, want archived, no sandbox", got.State, got.SandboxID, got.TierPending)
			}
			if _, alive := w.fake.Sandbox(sess.SandboxID); alive {
				t.Errorf("the provider still has %s", sess.SandboxID)
			}
			if sum := w.MustSweep(t); sum.TierDue != 0 {
				t.Errorf("a later sweep found %d due, want 0", sum.TierDue)
			}
			if opened, err := w.svc.Open(t.Context(), account, sess.ID); err != nil || opened.State != lifecycle.StateRestoring {
				t.Fatalf("open = %v, %v; want restoring", opened, err)
			}
			w.drain(t)
			if got := w.MustSession(t, sess.ID); got.State != lifecycle.StateRunning || got.RestoreCheckpointID != c.ID {
				t.Fatalf("after the unarchive = %s from %s, want running from %s", got.State, got.RestoreCheckpointID, c.ID)
			}
			w.MustHistory(t, sess.ID)
		})
	}
}

// TestCrashMidRetentionDelete: a deletion past delete_after killed after
// the deleted write and before its checkpoints are gone is finished by
// the next sweep: no checkpoint and no provider snapshot is left.
func TestCrashMidRetentionDelete(t *testing.T) {
	w := mustCheckpointWorld(t)
	sess, _ := w.mustPausedArchivable(t)
	w.clock.Advance(time.Hour)
	w.MustSweep(t) // archived
	w.clock.Advance(48 * time.Hour)
	dying, crasher := w.dying(func(s reliability.Step) bool { return s.Op == "delete_snapshot" })
	if _, err := dying.ApplyTier(t.Context(), sess.ID); !errors.Is(err, reliability.ErrCrashed) {
		t.Fatalf("the dying delete answered %v, want the crash", err)
	}
	mustDead(t, crasher)
	if got := w.MustSession(t, sess.ID); got.State != lifecycle.StateDeleted || !got.TierPending {
		t.Fatalf("after the crash = %s pending %v, want deleted with its purge pending", got.State, got.TierPending)
	}
	if sum := w.MustSweep(t); sum.TierDue != 1 {
		t.Errorf("the next sweep found %d due, want 1", sum.TierDue)
	}
	if got := w.MustSession(t, sess.ID); got.TierPending {
		t.Error("the purge is still pending after the sweep")
	}
	if cps, err := w.svc.ListCheckpoints(t.Context(), account, sess.ID, "", 10); err != nil || len(cps.Checkpoints) != 0 {
		t.Errorf("checkpoints left: %+v (%v)", cps, err)
	}
	if n := len(w.snaps.Snapshots()); n != 0 {
		t.Errorf("the provider still holds %d snapshots", n)
	}
	w.MustHistory(t, sess.ID)
}
