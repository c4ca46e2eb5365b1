package reliability_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// TestCrashMidRecoveryEndsOnOneRunningSandbox: a resume that finds its
// sandbox lost (a partial workspace: the identity marker gone), killed
// between the marker check and the restore (before resuming → restoring
// is recorded, or before the restore's new sandbox), or between the
// restore and the commit (the new sandbox made and marked, restoring →
// running not recorded), is picked up past its lease by the sweep's
// reconcile: a resume cut short is verified (Reconcile reads the marker
// back, never adopts the partial sandbox, and starts the recovery), a
// recovery whose job died is finished by the sweep itself
// (reconcileRecovery). Each ends running on one new sandbox holding the
// checkpoint's files and its own marker, with one lost event, and the
// provider holds no other sandbox of the session (docs/RELIABILITY.md
// "Recovery").
func TestCrashMidRecoveryEndsOnOneRunningSandbox(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
	}{
		{"AfterTheMarkerCheckBeforeRestoring", writeStep(lifecycle.StateResuming, lifecycle.StateRestoring)},
		{"AfterRestoringBeforeTheNewSandbox", callStep("create_from_snapshot")},
		{"AfterTheRestoreBeforeTheCommit", writeStep(lifecycle.StateRestoring, lifecycle.StateRunning)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t)
			sess := w.MustCreate(t, 86400)
			if err := w.snaps.WriteFile(t.Context(), sess.SandboxID, lifecycle.DefaultWorkspaceDir+"/work.txt", []byte("mine")); err != nil {
				t.Fatal(err)
			}
			_, _, err := w.svc.CreateCheckpoint(t.Context(), account, sess.ID, lifecycle.CheckpointInput{})
			if err != nil {
				t.Fatal(err)
			}
			w.drain(t)
			if _, err := w.svc.PauseNow(t.Context(), account, sess.ID); err != nil {
				t.Fatal(err)
			}
			w.snaps.RemoveFile(sess.SandboxID, lifecycle.IdentityMarkerPath) // a partial workspace

			dying, crasher := w.dying(tc.at)
			_, _ = dying.Resume(t.Context(), account, sess.ID)
			w.runJobs(t, dying)
			mustDead(t, crasher)
			w.jobs.Take() // the dead process's queue message is lost too
			mid := w.MustSession(t, sess.ID)
			if mid.State == lifecycle.StateRunning {
				t.Fatalf("after the crash the session is running on %s: adopted", mid.SandboxID)
			}

			w.clock.Set(mid.LeaseExpiresAt.Add(w.svc.Policy().LeaseDuration / 2))
			w.MustSweep(t)
			w.drain(t) // a recovery the sweep started queues its restore
			w.MustSweep(t)
			got := w.MustSession(t, sess.ID)
			if got.State != lifecycle.StateRunning || got.SandboxID == sess.SandboxID || !got.Marked {
				t.Fatalf("after the sweep the session is %s on %s (old %s, marked %v), want running on a new marked sandbox",
					got.State, got.SandboxID, sess.SandboxID, got.Marked)
			}
			data, err := w.snaps.ReadFile(t.Context(), got.SandboxID, lifecycle.DefaultWorkspaceDir+"/work.txt")
			if err != nil || string(data) != "mine" {
				t.Errorf("the recovered sandbox's work.txt = %q, %v; want the checkpoint's", data, err)
			}
			if tagged := sandboxesTagged(w.world, sess.ID); len(tagged) != 1 || tagged[0].ID != got.SandboxID {
				t.Errorf("the provider holds %+v, want only the session's sandbox %s (no orphan)", tagged, got.SandboxID)
			}
			lost := 0
			for _, wr := range w.MustHistory(t, sess.ID) {
				if wr.Transition() && wr.Reason == lifecycle.ReasonLost {
					lost++
				}
			}
			if lost != 1 {
				t.Errorf("%d recoveries (writes of reason lost), want one", lost)
			}
		})
	}
}
