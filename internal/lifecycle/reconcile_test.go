package lifecycle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// MustDormantWorld returns a world holding one session paused 48 h ago and a
// sweeper that retires sessions paused longer than 24 h.
func MustDormantWorld(t *testing.T) (*world, *lifecycle.Session, *sweep.Sweeper) {
	t.Helper()
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	w.clock.Advance(48 * time.Hour)
	sw := sweep.New(w.svc, sweep.Config{Rate: rate.Inf, Concurrency: 4, ReconcileSample: 10_000, DormancyAge: 24 * time.Hour}, quiet)
	return w, sess, sw
}

// TestDormantSessionExpiredBeforeKill: retiring a dormant session writes it
// expired before killing its sandbox, so a resume in between either wins
// (and keeps its sandbox) or finds the session expired; it is never left
// running without a sandbox.
func TestDormantSessionExpiredBeforeKill(t *testing.T) {
	t.Run("ResumeBetweenReadAndWrite", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		var once sync.Once
		w.rec.SetRefuse(func(next *lifecycle.Session, from lifecycle.State) error {
			if from != lifecycle.StatePaused || next.State != lifecycle.StateExpired {
				return nil // the resume's own writes come through here too
			}
			once.Do(func() {
				if _, err := w.svc.Resume(context.Background(), acct, sess.ID); err != nil {
					t.Errorf("resume racing the sweep: %v", err)
				}
			})
			return nil
		})
		// The refused write comes before any kill: the resume finds its sandbox.
		sum := MustRun(t, sw)
		w.rec.SetRefuse(nil)
		// The resume won.
		w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
		if sum.DormantKilled != 0 {
			t.Errorf("sweep retired %d sessions, want 0 (%+v)", sum.DormantKilled, sum)
		}
	})

	t.Run("ResumeDuringKill", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		var once sync.Once
		w.fake.SetOnCall(func(op fake.Op, _ string) {
			if op != fake.OpKill {
				return
			}
			once.Do(func() {
				if _, err := w.svc.Resume(context.Background(), acct, sess.ID); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Errorf("resume of a retired session: %v, want conflict", err)
				}
			})
		})
		// The write lands before the resume: no running session with a killed sandbox.
		MustRun(t, sw)
		w.fake.SetOnCall(nil)
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.Reason != lifecycle.ReasonDormant {
			t.Errorf("table %s (%s), want expired (dormant)", got.State, got.Reason)
		}
		if st := w.sandboxState(sess.SandboxID); st != "gone" {
			t.Errorf("provider %s, want gone", st)
		}
	})

	t.Run("KillFails", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		w.fake.FailNext(fake.OpKill, nil)
		// A failed kill leaves an expired (dormant) session whose sandbox phase 3
		// reaps later.
		sum := MustRun(t, sw)
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.Reason != lifecycle.ReasonDormant {
			t.Fatalf("after the first run: table %s (%s), want expired (dormant)", got.State, got.Reason)
		}
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxPaused {
			t.Fatalf("after the first run: provider %s, want paused (the kill failed)", st)
		}
		if sum.ReconcileFailed != 1 {
			t.Errorf("first run: reconcile_failed %d, want 1 (%+v)", sum.ReconcileFailed, sum)
		}
		sum = MustRun(t, sw)
		if st := w.sandboxState(sess.SandboxID); st != "gone" {
			t.Errorf("after the second run: provider %s, want gone (reaped by phase 3)", st)
		}
		if sum.OrphansKilled != 1 {
			t.Errorf("second run killed %d orphans, want 1 (%+v)", sum.OrphansKilled, sum)
		}
	})
}

// TestSweepReapsOnlyItsDeployment: the sweep lists and reaps only its own
// deployment's sandboxes, never those of other deployments sharing the
// provider account.
func TestSweepReapsOnlyItsDeployment(t *testing.T) {
	w := MustWorld(t)
	w.rewire(t, func(c *lifecycle.Config) { c.Deployment = "a" })
	sess := w.mustIdle(t, 600)
	sb, ok := w.fake.Sandbox(sess.SandboxID)
	if !ok {
		t.Fatal("sandbox missing")
	}
	if got, want := sb.Metadata[lifecycle.MetadataDeployment], "a"; got != want {
		t.Errorf("sandbox metadata %s = %q, want %q", lifecycle.MetadataDeployment, got, want)
	}
	// An orphan of deployment a: tagged with a session its table never recorded.
	orphan, err := w.fake.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour, AutoPause: true,
		Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_never_written", lifecycle.MetadataDeployment: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute) // old enough to be reaped

	svcB := lifecycle.NewService(lifecycle.Config{Store: w.rec, Provider: w.fake, Clock: w.clock, Policy: lifecycle.DefaultPolicy(), Log: quiet, Deployment: "b"})
	// Deployment b's sweep neither lists a's sandboxes nor kills a's orphan.
	sumB := MustRun(t, MustSweeper(t, svcB))
	if sumB.Listed != 0 || sumB.OrphansKilled != 0 {
		t.Errorf("deployment b's sweep listed %d and killed %d, want 0 and 0 (%+v)", sumB.Listed, sumB.OrphansKilled, sumB)
	}
	if killed, err := svcB.ReapOrphan(t.Context(), orphan); err != nil || killed {
		t.Errorf("deployment b reaping a's orphan: killed=%v err=%v, want left alone", killed, err)
	}
	if st := w.sandboxState(orphan.ID); st != lifecycle.SandboxRunning {
		t.Fatalf("a's orphan after b's sweep: %s, want running", st)
	}
	// Deployment a's own sweep reaps it: the orphan was reapable all along.
	sumA := MustRun(t, w.sweeper)
	if st := w.sandboxState(orphan.ID); st != "gone" {
		t.Errorf("a's orphan after a's sweep: %s, want gone (%+v)", st, sumA)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
		t.Errorf("a's session sandbox: %s, want running", st)
	}
}
