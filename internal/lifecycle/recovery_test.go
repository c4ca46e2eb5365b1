package lifecycle_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// The recovery rules (docs/RELIABILITY.md "Recovery"): a verified resume,
// loss classified, recovery in place from the newest ready checkpoint.

// mustLostSetup creates a session with on_lost as given, writes a file,
// checkpoints it (when ckpt), and pauses it.
func mustLostSetup(t *testing.T, w *ckptWorld, onLost lifecycle.OnLost, ckpt bool) (*lifecycle.Session, *lifecycle.Checkpoint) {
	t.Helper()
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600, OnLost: onLost})
	if !sess.Marked {
		t.Fatalf("a new session on a provider with files has no identity marker: %+v", sess)
	}
	w.mustWrite(t, sess.SandboxID, "work.txt", "mine")
	var c *lifecycle.Checkpoint
	if ckpt {
		c = w.mustCheckpoint(t, sess.ID, lifecycle.CheckpointInput{})
	}
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	return w.mustGet(t, sess.ID), c
}

// lose makes sess's sandbox lost as kind says.
func (w *ckptWorld) lose(t *testing.T, sandboxID, kind string) {
	t.Helper()
	switch kind {
	case lifecycle.LostGone:
		w.fake.Forget(sandboxID)
	case lifecycle.LostForeign:
		if err := w.files().WriteFile(t.Context(), sandboxID, lifecycle.IdentityMarkerPath,
			[]byte(`{"session_id":"ses_someone_else","sandbox_id":"sbx_other"}`)); err != nil {
			t.Fatal(err)
		}
	}
}

// lostEvents returns id's events of reason lost.
func (w *ckptWorld) lostEvents(id string) []lifecycle.Event {
	var out []lifecycle.Event
	for _, ev := range w.log.For(id) {
		if ev.Reason == lifecycle.ReasonLost {
			out = append(out, ev)
		}
	}
	return out
}

func TestResumeOfALostSandboxRestoresTheNewestCheckpoint(t *testing.T) {
	for _, kind := range []string{lifecycle.LostGone, lifecycle.LostForeign} {
		t.Run(kind, func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess, c := mustLostSetup(t, w, "", true)
			old := sess.SandboxID
			w.lose(t, old, kind)
			got, err := w.svc.Resume(t.Context(), acct, sess.ID)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if got.State != lifecycle.StateRestoring || got.Reason != lifecycle.ReasonLost || got.RestoreCheckpointID != c.ID {
				t.Fatalf("resume of a lost sandbox = %s (%s, from %q), want restoring (lost) from %s", got.State, got.Reason, got.RestoreCheckpointID, c.ID)
			}
			evs := w.lostEvents(sess.ID)
			if len(evs) != 1 || evs[0].From != lifecycle.StateResuming || evs[0].To != lifecycle.StateRestoring ||
				!strings.HasPrefix(evs[0].Lost, kind+" checkpoint="+c.ID+" age_seconds=") {
				t.Fatalf("lost events = %+v, want one resuming → restoring saying %s, the checkpoint and its age", evs, kind)
			}
			w.drain(t)
			after := w.mustGet(t, sess.ID)
			if after.State != lifecycle.StateRunning || after.SandboxID == old || !after.Marked {
				t.Fatalf("after the recovery = %+v, want running on a new, marked sandbox", after)
			}
			w.wantFile(t, after.SandboxID, "work.txt", "mine")
			if kind == lifecycle.LostForeign {
				if st := w.sandboxState(old); st == sandboxGone {
					t.Errorf("the foreign sandbox was killed; it is not Sandman's")
				}
			}
			// The next resume verifies the new marker and adopts it.
			if err := w.svc.Pause(t.Context(), after, lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
				t.Fatal(err)
			}
			if again, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil || again.State != lifecycle.StateRunning {
				t.Fatalf("resume after the recovery = %+v, %v; want running", again, err)
			}
		})
	}
}

func TestTransientResumeFailureNeverRecovers(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess, _ := mustLostSetup(t, w, "", true)
	for range 20 {
		w.fake.FailNext(fake.OpResume, lifecycle.ErrProviderTransient)
	}
	if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err == nil {
		t.Fatal("resume through transient failures succeeded")
	}
	w.fake.ClearFaults()
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StatePaused {
		t.Errorf("after transient failures the session is %s, want paused", got.State)
	}
	if evs := w.lostEvents(sess.ID); len(evs) != 0 {
		t.Errorf("a transient failure started a recovery: %+v", evs)
	}
	if jobs := w.jobs.Take(); len(jobs) != 0 {
		t.Errorf("a transient failure queued %+v", jobs)
	}
}

func TestLostWithNothingToRestoreExpires(t *testing.T) {
	for name, tc := range map[string]struct {
		onLost lifecycle.OnLost
		ckpt   bool
	}{"no checkpoint": {"", false}, "on_lost expire": {lifecycle.OnLostExpire, true}} {
		t.Run(name, func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess, _ := mustLostSetup(t, w, tc.onLost, tc.ckpt)
			w.lose(t, sess.SandboxID, lifecycle.LostGone)
			if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err == nil {
				t.Fatal("resume of a gone sandbox with nothing to restore succeeded")
			}
			if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateExpired {
				t.Errorf("the session is %s, want expired", got.State)
			}
			if evs := w.lostEvents(sess.ID); len(evs) != 0 {
				t.Errorf("recovery started: %+v", evs)
			}
		})
	}
}

func TestOnLostRecreateMakesAFreshSandbox(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess, _ := mustLostSetup(t, w, lifecycle.OnLostRecreate, true)
	old := sess.SandboxID
	w.lose(t, old, lifecycle.LostGone)
	got, err := w.svc.Resume(t.Context(), acct, sess.ID)
	if err != nil || got.State != lifecycle.StateRestoring || got.Lost != lifecycle.LostGone {
		t.Fatalf("resume = %+v, %v; want restoring, lost gone", got, err)
	}
	w.drain(t)
	after := w.mustGet(t, sess.ID)
	if after.State != lifecycle.StateRunning || after.Reason != lifecycle.ReasonRecreated || after.SandboxID == old {
		t.Fatalf("after the recreate = %s (%s, sandbox %s), want running, recreated, a new sandbox", after.State, after.Reason, after.SandboxID)
	}
	w.wantFile(t, after.SandboxID, "work.txt", "")
}

func TestCreateRefusesAnUnknownOnLost(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	if _, _, err := w.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", OnLost: "pray"}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("create with on_lost pray = %v, want invalid", err)
	}
}

// TestOneRecoveryPerBurst: twenty concurrent opens of a lost session start
// one recovery.
func TestOneRecoveryPerBurst(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess, _ := mustLostSetup(t, w, "", true)
	w.lose(t, sess.SandboxID, lifecycle.LostGone)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil {
				t.Errorf("open: %v", err)
			}
		}()
	}
	wg.Wait()
	if evs := w.lostEvents(sess.ID); len(evs) != 1 {
		t.Fatalf("lost events = %d, want 1", len(evs))
	}
	jobs := w.jobs.Take()
	if len(jobs) != 1 {
		t.Fatalf("recovery jobs = %+v, want one", jobs)
	}
	if err := w.svc.RunCheckpointJob(t.Context(), jobs[0]); err != nil {
		t.Fatal(err)
	}
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateRunning {
		t.Errorf("after the recovery the session is %s, want running", got.State)
	}
}

// TestAPausedSessionFoundGoneIsArchivedOnItsCheckpoint: a reconcile that
// finds a paused session's sandbox gone keeps it archived (reason lost)
// when it has a ready checkpoint, and its next resume restores the
// checkpoint's files (unarchive); with nothing to keep it with, or on_lost
// expire, it ends expired as before.
func TestAPausedSessionFoundGoneIsArchivedOnItsCheckpoint(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess, c := mustLostSetup(t, w, "", true)
	w.lose(t, sess.SandboxID, lifecycle.LostGone)
	if changed, err := w.svc.Reconcile(t.Context(), w.mustGet(t, sess.ID)); err != nil || !changed {
		t.Fatalf("reconcile = %v, %v; want a change", changed, err)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateArchived || got.Reason != lifecycle.ReasonLost || got.SandboxID != "" ||
		!strings.HasPrefix(got.Lost, lifecycle.LostGone+" checkpoint="+c.ID+" age_seconds=") {
		t.Fatalf("after the reconcile = %s (%s, sandbox %q, lost %q), want archived (lost) on %s", got.State, got.Reason, got.SandboxID, got.Lost, c.ID)
	}
	if evs := w.lostEvents(sess.ID); len(evs) != 1 || evs[0].From != lifecycle.StatePaused || evs[0].To != lifecycle.StateArchived {
		t.Fatalf("lost events = %+v, want one paused → archived", evs)
	}
	back, err := w.svc.Resume(t.Context(), acct, sess.ID)
	if err != nil || back.State != lifecycle.StateRestoring || back.Reason != lifecycle.ReasonUnarchive {
		t.Fatalf("resume of the archived session = %+v, %v; want restoring (unarchive)", back, err)
	}
	w.drain(t)
	after := w.mustGet(t, sess.ID)
	if after.State != lifecycle.StateRunning || after.SandboxID == "" {
		t.Fatalf("after the unarchive = %s on %q, want running on a new sandbox", after.State, after.SandboxID)
	}
	w.wantFile(t, after.SandboxID, "work.txt", "mine")

	for name, tc := range map[string]struct {
		onLost lifecycle.OnLost
		ckpt   bool
	}{"no checkpoint": {"", false}, "on_lost expire": {lifecycle.OnLostExpire, true}} {
		t.Run(name, func(t *testing.T) {
			w := mustCheckpointWorld(t, false)
			sess, _ := mustLostSetup(t, w, tc.onLost, tc.ckpt)
			w.lose(t, sess.SandboxID, lifecycle.LostGone)
			if _, err := w.svc.Reconcile(t.Context(), w.mustGet(t, sess.ID)); err != nil {
				t.Fatal(err)
			}
			if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateExpired {
				t.Errorf("the session is %s, want expired", got.State)
			}
		})
	}
}
