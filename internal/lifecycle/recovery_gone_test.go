package lifecycle_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestASessionFoundGoneIsKeptOnItsCheckpoint: a session whose sandbox a
// reconcile or a reconnect finds gone is never expired while it has a
// ready checkpoint. Paused, it is kept archived (reason lost) and its
// next resume restores it (unarchive); running, it is recovered in place
// at once (restoring, reason lost, the loss naming the checkpoint). Both
// end running on a new sandbox with the checkpoint's files; a reconnect
// answers no_sandbox. Without a checkpoint the session expires as before.
func TestASessionFoundGoneIsKeptOnItsCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name      string
		running   bool // else paused
		reconnect bool // else the sweep's reconcile
	}{
		{"paused, reconnect", false, true},
		{"running, reconnect", true, true},
		{"running, reconcile", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess, c := mustLostSetup(t, w, "", true)
			if tc.running {
				if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
					t.Fatal(err)
				}
				w.drain(t)
				sess = w.mustGet(t, sess.ID)
			}
			w.lose(t, sess.SandboxID, lifecycle.LostGone)
			if tc.reconnect {
				res, err := w.svc.Reconnect(t.Context(), acct, sess.ID)
				if err != nil || res.Status != lifecycle.ReconnectNoSandbox {
					t.Fatalf("reconnect = %s, %v; want no_sandbox", res.Status, err)
				}
			} else if changed, err := w.svc.Reconcile(t.Context(), sess); err != nil || !changed {
				t.Fatalf("reconcile = %v, %v; want a change", changed, err)
			}
			got := w.mustGet(t, sess.ID)
			want := lifecycle.StateArchived
			if tc.running {
				want = lifecycle.StateRestoring
			}
			if got.State != want || got.Reason != lifecycle.ReasonLost ||
				!strings.HasPrefix(got.Lost, lifecycle.LostGone+" checkpoint="+c.ID+" age_seconds=") {
				t.Fatalf("after the loss = %s (%s, lost %q), want %s (lost) on %s", got.State, got.Reason, got.Lost, want, c.ID)
			}
			if !tc.running {
				if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
					t.Fatal(err)
				}
			}
			w.drain(t)
			after := w.mustGet(t, sess.ID)
			if after.State != lifecycle.StateRunning || after.SandboxID == "" || after.SandboxID == sess.SandboxID {
				t.Fatalf("after the recovery = %s on %q, want running on a new sandbox", after.State, after.SandboxID)
			}
			w.wantFile(t, after.SandboxID, "work.txt", "mine")
		})
	}
	t.Run("no checkpoint, reconnect", func(t *testing.T) {
		w := mustCheckpointWorld(t, false)
		sess, _ := mustLostSetup(t, w, "", false)
		w.lose(t, sess.SandboxID, lifecycle.LostGone)
		if res, err := w.svc.Reconnect(t.Context(), acct, sess.ID); err != nil || res.Status != lifecycle.ReconnectExpired {
			t.Fatalf("reconnect = %s, %v; want expired", res.Status, err)
		}
		if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateExpired {
			t.Errorf("the session is %s, want expired", got.State)
		}
	})
}
