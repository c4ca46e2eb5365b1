package lifecycle_test

import (
	"strings"
	"testing"
	"time"

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

// TestAKilledEventKeepsTheSessionOnItsCheckpoint: a provider's killed
// event is a definitive loss; a paused session with a ready checkpoint is
// archived and a running one recovered in place, as a reconcile that found
// the sandbox gone does; one with nothing to restore ends expired as
// before; an archived one (its sandbox killed by its demotion) stays
// archived (docs/RELIABILITY.md "Recovery": never expired while a
// checkpoint exists).
func TestAKilledEventKeepsTheSessionOnItsCheckpoint(t *testing.T) {
	killed := func(t *testing.T, w *ckptWorld, sess *lifecycle.Session, id string) lifecycle.WebhookOutcome {
		t.Helper()
		w.clock.Advance(time.Second)
		out, err := w.svc.ApplyProviderEvent(t.Context(), lifecycle.ProviderEvent{ID: id, Provider: sess.Provider,
			Type: lifecycle.ProviderEventKilled, SandboxID: sess.SandboxID, Timestamp: w.clock.Now(), KillReason: "request"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		running    bool
		checkpoint bool
		want       lifecycle.State
	}{
		{"paused with a checkpoint", false, true, lifecycle.StateArchived},
		{"running with a checkpoint", true, true, lifecycle.StateRestoring},
		{"paused without one", false, false, lifecycle.StateExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess, _ := mustLostSetup(t, w, "", tc.checkpoint)
			if tc.running {
				if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
					t.Fatal(err)
				}
				w.drain(t)
				sess = w.mustGet(t, sess.ID)
			}
			w.lose(t, sess.SandboxID, lifecycle.LostGone)
			if out := killed(t, w, sess, "evt_1"); out != lifecycle.WebhookApplied {
				t.Fatalf("killed = %s, want applied", out)
			}
			got := w.mustGet(t, sess.ID)
			if got.State != tc.want {
				t.Fatalf("after the killed event the session is %s (%s), want %s", got.State, got.Reason, tc.want)
			}
			if tc.want == lifecycle.StateExpired {
				return
			}
			if got.Reason != lifecycle.ReasonLost {
				t.Errorf("reason = %s, want lost", got.Reason)
			}
			if !tc.running {
				// The same sandbox's killed event again (another id): the
				// archived session no longer names it and stays archived.
				if out := killed(t, w, sess, "evt_2"); out != lifecycle.WebhookUnknownSandbox {
					t.Errorf("a second killed = %s, want unknown_sandbox", out)
				}
				if again := w.mustGet(t, sess.ID); again.State != lifecycle.StateArchived {
					t.Fatalf("after a second killed event the session is %s, want archived", again.State)
				}
				if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
					t.Fatal(err)
				}
			}
			w.drain(t)
			after := w.mustGet(t, sess.ID)
			if after.State != lifecycle.StateRunning || after.SandboxID == sess.SandboxID {
				t.Fatalf("after the recovery = %s on %q, want running on a new sandbox", after.State, after.SandboxID)
			}
			w.wantFile(t, after.SandboxID, "work.txt", "mine")
		})
	}
}
