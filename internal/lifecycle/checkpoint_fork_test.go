package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestForkFromACheckpoint: a fork answers a new session at once
// (provisioning, forked_from), its job makes its sandbox from the
// checkpoint, and the two sessions are independent.
func TestForkFromACheckpoint(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	src := w.mustCreate(t, lifecycle.CreateInput{Metadata: map[string]string{"user": "ada"}})
	w.mustWrite(t, src.SandboxID, "first.txt", "one")
	c := w.mustCheckpoint(t, src.ID, lifecycle.CheckpointInput{})
	w.mustWrite(t, src.SandboxID, "second.txt", "two")

	fork, replay, err := w.svc.Fork(t.Context(), acct, src.ID, lifecycle.ForkInput{CheckpointID: c.ID})
	if err != nil || replay {
		t.Fatalf("fork = %v, replay %v", err, replay)
	}
	if fork.ID == src.ID || fork.State != lifecycle.StateProvisioning || fork.ForkedFrom != src.ID || fork.ForkCheckpointID != c.ID ||
		fork.Metadata["user"] != "ada" {
		t.Fatalf("fork = %+v, want a new provisioning session forked from %s/%s with the source's metadata", fork, src.ID, c.ID)
	}
	w.drain(t)
	got := w.mustGet(t, fork.ID)
	if got.State != lifecycle.StateRunning || got.SandboxID == "" || got.SandboxID == src.SandboxID {
		t.Fatalf("fork after its job = %+v, want running on its own sandbox", got)
	}
	w.wantFile(t, got.SandboxID, "first.txt", "one")
	w.wantFile(t, got.SandboxID, "second.txt", "")
	w.mustWrite(t, got.SandboxID, "fork.txt", "f")
	w.wantFile(t, src.SandboxID, "fork.txt", "")
	w.wantFile(t, src.SandboxID, "second.txt", "two")
	if sb, _ := w.fake.Sandbox(got.SandboxID); sb.Metadata[lifecycle.MetadataSessionID] != fork.ID {
		t.Errorf("the fork's sandbox is tagged %q, want %s", sb.Metadata[lifecycle.MetadataSessionID], fork.ID)
	}
	w.MustHistory(t, fork.ID)
}

// TestForkOfTheCurrentState: a fork without a checkpoint takes a fresh one
// (saved by the fork's job) and holds what the source held then.
func TestForkOfTheCurrentState(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	src := w.mustCreate(t, lifecycle.CreateInput{})
	w.mustWrite(t, src.SandboxID, "now.txt", "now")
	fork, _, err := w.svc.Fork(t.Context(), acct, src.ID, lifecycle.ForkInput{})
	if err != nil {
		t.Fatal(err)
	}
	if fork.ForkCheckpointID == "" {
		t.Fatal("a fork of the current state names no checkpoint")
	}
	w.drain(t)
	got := w.mustGet(t, fork.ID)
	if got.State != lifecycle.StateRunning {
		t.Fatalf("fork = %s, want running", got.State)
	}
	w.wantFile(t, got.SandboxID, "now.txt", "now")
	c, err := w.svc.GetCheckpoint(t.Context(), acct, src.ID, fork.ForkCheckpointID)
	if err != nil || c.State != lifecycle.CheckpointReady || c.Trigger != lifecycle.TriggerAPI {
		t.Errorf("the fork's checkpoint = %+v (%v), want a ready api checkpoint of the source", c, err)
	}
}

// TestForkIdempotencyKeyGivesOneSession: a retried fork with one key
// answers the one new session, also before its job ran.
func TestForkIdempotencyKeyGivesOneSession(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	src := w.mustCreate(t, lifecycle.CreateInput{})
	in := lifecycle.ForkInput{IdempotencyKey: "fork-1"}
	first, _, err := w.svc.Fork(t.Context(), acct, src.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	again, replay, err := w.svc.Fork(t.Context(), acct, src.ID, in)
	if err != nil || !replay || again.ID != first.ID {
		t.Fatalf("retry = %+v, replay %v, %v; want the first session", again, replay, err)
	}
	w.drain(t)
	again, replay, err = w.svc.Fork(t.Context(), acct, src.ID, in)
	if err != nil || !replay || again.ID != first.ID || again.State != lifecycle.StateRunning {
		t.Fatalf("retry after the job = %+v, replay %v, %v; want the first session, running", again, replay, err)
	}
	page, err := w.svc.List(t.Context(), acct, "", 10)
	if err != nil || len(page.Sessions) != 2 {
		t.Errorf("%d sessions (%v), want the source and one fork", len(page.Sessions), err)
	}
}

// TestForkOfAFailedCheckpointIsRefused: a fork of a checkpoint that
// cannot restore is refused before anything is written.
func TestForkOfAFailedCheckpointIsRefused(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	src := w.mustCreate(t, lifecycle.CreateInput{})
	c, _, err := w.svc.CreateCheckpoint(t.Context(), acct, src.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatal(err)
	}
	w.jobs.Take()
	w.clock.Advance(time.Hour)
	if _, err := w.svc.ReconcileCheckpoint(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.svc.Fork(t.Context(), acct, src.ID, lifecycle.ForkInput{CheckpointID: c.ID}); errorType(err) != lifecycle.TypeCheckpointFailed {
		t.Errorf("fork of a failed checkpoint = %v, want %s", err, lifecycle.TypeCheckpointFailed)
	}
	if page, _ := w.svc.List(t.Context(), acct, "", 10); len(page.Sessions) != 1 {
		t.Errorf("%d sessions, want only the source", len(page.Sessions))
	}
}
