package lifecycle_test

import (
	"encoding/json"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// Every way a sandbox comes to a session writes that session's identity
// marker (docs/RELIABILITY.md "Recovery"): a restore (with its checkpoint),
// a fork (the new session's, with the checkpoint it was made from) and a
// pool claim (the spare was made for no session).

// wantMarker fails unless sess's sandbox holds the marker of sess, made
// from checkpointID ("" for none), and sess records it as written.
func (w *ckptWorld) wantMarker(t *testing.T, sess *lifecycle.Session, checkpointID string) {
	t.Helper()
	data, err := w.files().ReadFile(t.Context(), sess.SandboxID, lifecycle.IdentityMarkerPath)
	if err != nil {
		t.Fatalf("read the marker of %s: %v", sess.ID, err)
	}
	var m struct {
		SessionID    string `json:"session_id"`
		SandboxID    string `json:"sandbox_id"`
		CheckpointID string `json:"checkpoint_id"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.SessionID != sess.ID || m.SandboxID != sess.SandboxID || m.CheckpointID != checkpointID || !sess.Marked {
		t.Errorf("marker %+v (marked %v), want session %s, sandbox %s, checkpoint %q", m, sess.Marked, sess.ID, sess.SandboxID, checkpointID)
	}
}

func TestARestoreWritesTheMarkerWithItsCheckpoint(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := w.mustCreate(t, lifecycle.CreateInput{})
	w.wantMarker(t, sess, "")
	c := w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	if _, err := w.svc.Restore(t.Context(), acct, sess.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	w.drain(t)
	got := w.mustGet(t, sess.ID)
	if got.SandboxID == sess.SandboxID || got.State != lifecycle.StateRunning {
		t.Fatalf("after the restore = %+v, want running on a new sandbox", got)
	}
	w.wantMarker(t, got, c.ID)
}

func TestAForkGetsTheNewSessionsMarker(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	src := w.mustCreate(t, lifecycle.CreateInput{})
	c := w.mustCheckpoint(t, src.ID, lifecycle.CheckpointInput{})
	fork, _, err := w.svc.Fork(t.Context(), acct, src.ID, lifecycle.ForkInput{CheckpointID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	w.drain(t)
	got := w.mustGet(t, fork.ID)
	w.wantMarker(t, got, c.ID)
	// The fork's next resume is verified and adopts it.
	if err := w.svc.Pause(t.Context(), got, lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	if again, err := w.svc.Resume(t.Context(), acct, fork.ID); err != nil || again.State != lifecycle.StateRunning {
		t.Fatalf("resume of the fork = %+v, %v; want running", again, err)
	}
}

func TestAPoolClaimGetsTheSessionsMarkerBeforeItIsHandedOver(t *testing.T) {
	e, _ := poolEnv(t, 1, lifecycle.TierPaused)
	files := reliability.NewSnapshotProvider(e.fake, e.clock) // the fake with a file API
	cfg := e.svc.Config()
	cfg.Provider = files
	e.svc = lifecycle.NewService(cfg)
	e.svc.FillPools(t.Context())
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !sess.FromPool {
		t.Fatalf("the create took no spare: %+v", sess)
	}
	w := &ckptWorld{snaps: files}
	w.wantMarker(t, e.mustGet(t, sess.ID), "")
	if err := e.svc.Pause(t.Context(), e.mustGet(t, sess.ID), lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	// Another session's marker behind the id: never adopted.
	if err := files.WriteFile(t.Context(), sess.SandboxID, lifecycle.IdentityMarkerPath, []byte(`{"session_id":"ses_other","sandbox_id":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Resume(t.Context(), acct, sess.ID); err == nil && got.State == lifecycle.StateRunning {
		t.Fatalf("a claimed spare with a foreign marker was adopted: %+v", got)
	}
}
