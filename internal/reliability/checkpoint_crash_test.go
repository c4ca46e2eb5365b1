package reliability_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// ckptWorld is a world whose provider keeps snapshots (the fake with
// reliability.SnapshotProvider) and whose checkpoint jobs wait in a queue
// the test drains, as SQS keeps a message a dead function did not delete.
type ckptWorld struct {
	*world
	snaps *reliability.SnapshotProvider
	jobs  *reliability.Jobs
}

func mustCheckpointWorld(t *testing.T) *ckptWorld {
	t.Helper()
	w := &ckptWorld{world: MustWorld(t, 1), jobs: &reliability.Jobs{}}
	w.snaps = reliability.NewSnapshotProvider(w.fake, w.clock)
	w.rewire(t, func(c *lifecycle.Config) { c.Provider, c.CheckpointJobs = w.snaps, w.jobs })
	return w
}

// dying returns the service of a process that dies at the first step at
// which at is true, over the world's table, provider, clock and queue.
func (w *ckptWorld) dying(at func(reliability.Step) bool) (*lifecycle.Service, *reliability.Crasher) {
	crasher := &reliability.Crasher{At: at}
	cfg := w.svc.Config()
	cfg.Store, cfg.Provider, cfg.Log = crasher.Store(w.store), crasher.Provider(w.snaps), quiet()
	return lifecycle.NewService(cfg), crasher
}

// runJobs runs the queued checkpoint jobs with svc (once each).
func (w *ckptWorld) runJobs(t *testing.T, svc *lifecycle.Service) []error {
	t.Helper()
	return w.jobs.Drain(t.Context(), svc.RunCheckpointJob, 1)
}

// drain runs the queued jobs on the healthy service until none is left.
func (w *ckptWorld) drain(t *testing.T) {
	t.Helper()
	if errs := w.jobs.Drain(t.Context(), w.svc.RunCheckpointJob, 5); len(errs) > 0 {
		t.Fatalf("checkpoint jobs: %v", errs)
	}
}

func checkpointWrite(to lifecycle.CheckpointState) func(reliability.Step) bool {
	return func(s reliability.Step) bool { return s.Op == reliability.StepCheckpointWrite && s.Checkpoint == to }
}

func mustDead(t *testing.T, c *reliability.Crasher) {
	t.Helper()
	if _, dead := c.Dead(); !dead {
		t.Fatal("the process did not die")
	}
}

// TestCrashBetweenSnapshotAndTableWrite: a save job killed after the
// provider took its snapshot and before the table recorded it (the ref,
// or ready) leaves the checkpoint saving; the first sweep past its lease
// finds the snapshot (by name, or by the ref recorded) and records the
// checkpoint ready: every snapshot the provider holds is a ready
// checkpoint's, none billed for nothing, and checkpoint.ready is
// published once.
func TestCrashBetweenSnapshotAndTableWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
	}{
		{"BeforeTheRefIsRecorded", checkpointWrite(lifecycle.CheckpointSaving)},
		{"BeforeReadyIsRecorded", checkpointWrite(lifecycle.CheckpointReady)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t)
			sess := w.MustCreate(t, 86400)
			c, _, err := w.svc.CreateCheckpoint(t.Context(), account, sess.ID, lifecycle.CheckpointInput{})
			if err != nil {
				t.Fatal(err)
			}
			dying, crasher := w.dying(tc.at)
			if errs := w.runJobs(t, dying); len(errs) != 1 || !errors.Is(errs[0], reliability.ErrCrashed) {
				t.Fatalf("the dying job answered %v, want the crash", errs)
			}
			mustDead(t, crasher)
			w.jobs.Take() // the redelivery is lost too: only the sweep is left
			snaps := w.snaps.Snapshots()
			if len(snaps) != 1 || snaps[0].Name != c.ID {
				t.Fatalf("the provider holds %+v, want the one snapshot named %s", snaps, c.ID)
			}
			stuck, err := w.svc.GetCheckpoint(t.Context(), account, sess.ID, c.ID)
			if err != nil || stuck.State != lifecycle.CheckpointSaving {
				t.Fatalf("after the crash the checkpoint is %+v (%v), want saving", stuck, err)
			}

			w.clock.Set(stuck.LeaseExpiresAt.Add(-time.Second))
			if sum := w.MustSweep(t); sum.CheckpointsDue != 0 {
				t.Errorf("sweep within the lease = %+v, want nothing due", sum)
			}
			w.clock.Set(stuck.LeaseExpiresAt.Add(time.Second))
			if sum := w.MustSweep(t); sum.CheckpointsDue != 1 || sum.CheckpointsResolved != 1 {
				t.Errorf("sweep past the lease = %+v, want one resolved", sum)
			}
			got, err := w.svc.GetCheckpoint(t.Context(), account, sess.ID, c.ID)
			if err != nil || got.State != lifecycle.CheckpointReady || got.ProviderRef != snaps[0].Ref {
				t.Fatalf("after the sweep = %+v (%v), want ready holding %s", got, err, snaps[0].Ref)
			}
			if n := len(w.snaps.Snapshots()); n != 1 {
				t.Errorf("the provider holds %d snapshots, want 1", n)
			}
			w.MustDrain(t)
			if evs := w.events.Checkpoints(sess.ID); len(evs) != 1 || evs[0].Checkpoint.State != lifecycle.CheckpointReady ||
				evs[0].EventID != lifecycle.EventID(got.ID, got.Version) {
				t.Errorf("checkpoint events = %+v, want one checkpoint.ready", evs)
			}
			if sum := w.MustSweep(t); sum.CheckpointsDue != 0 {
				t.Errorf("a later sweep = %+v, want nothing due", sum)
			}
		})
	}
}

// TestCrashMidRestoreNeverLeavesTheSessionWithoutASandbox: a restore
// killed at each of its steps leaves the session holding a sandbox the
// provider has; the sweep then settles it (back on its old sandbox, or on
// the new one when the swap committed) and reaps the sandbox nobody holds.
func TestCrashMidRestoreNeverLeavesTheSessionWithoutASandbox(t *testing.T) {
	for _, tc := range []struct {
		name    string
		at      func(reliability.Step) bool
		swapped bool // the swap committed before the crash
	}{
		{"BeforeTheNewSandbox", callStep("create_from_snapshot"), false},
		{"BeforeTheSwap", writeStep(lifecycle.StateRestoring, lifecycle.StateRunning), false},
		{"BeforeTheOldIsKilled", callStep("kill"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t)
			sess := w.MustCreate(t, 86400)
			c, _, err := w.svc.CreateCheckpoint(t.Context(), account, sess.ID, lifecycle.CheckpointInput{})
			if err != nil {
				t.Fatal(err)
			}
			w.drain(t)
			restoring, err := w.svc.Restore(t.Context(), account, sess.ID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			w.mustHoldASandbox(t, sess.ID)
			dying, crasher := w.dying(tc.at)
			w.runJobs(t, dying)
			mustDead(t, crasher)
			w.jobs.Take()
			mid := w.mustHoldASandbox(t, sess.ID)
			if got, want := mid.State == lifecycle.StateRunning, tc.swapped; got != want {
				t.Fatalf("after the crash the session is %s, swapped %v", mid.State, tc.swapped)
			}

			w.clock.Set(restoring.LeaseExpiresAt.Add(w.svc.Policy().LeaseDuration))
			w.MustSweep(t)
			got := w.mustHoldASandbox(t, sess.ID)
			if got.State != lifecycle.StateRunning {
				t.Fatalf("after the sweep the session is %s, want running", got.State)
			}
			if tc.swapped == (got.SandboxID == sess.SandboxID) {
				t.Errorf("after the sweep the session holds %s (old %s), swapped %v", got.SandboxID, sess.SandboxID, tc.swapped)
			}
			if !tc.swapped && got.RestoreError == "" {
				t.Error("a restore put back by the sweep does not say why")
			}
			if tagged := sandboxesTagged(w.world, sess.ID); len(tagged) != 1 || tagged[0].ID != got.SandboxID {
				t.Errorf("the provider holds %+v, want only the session's sandbox %s", tagged, got.SandboxID)
			}
			w.MustHistory(t, sess.ID)
		})
	}
}

// mustHoldASandbox fails unless session id names a sandbox the provider
// has, and returns the session.
func (w *ckptWorld) mustHoldASandbox(t *testing.T, id string) *lifecycle.Session {
	t.Helper()
	sess := w.MustSession(t, id)
	if _, ok := w.fake.Sandbox(sess.SandboxID); sess.SandboxID == "" || !ok {
		t.Fatalf("session %s (%s) holds sandbox %q, which the provider does not have", id, sess.State, sess.SandboxID)
	}
	return sess
}

// TestCrashMidForkReplaysToOneSession: a fork killed at each of its steps
// is retried with the same Idempotency-Key; every retry answers one new
// session, which ends running with the checkpoint's files, and the
// provider holds no sandbox for it but its own.
func TestCrashMidForkReplaysToOneSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
		job  bool // the crash is in the fork's job, not in the request
	}{
		{"BeforeTheSessionIsWritten", writeStep("", lifecycle.StateProvisioning), false},
		{"BeforeTheSandbox", callStep("create_from_snapshot"), true},
		{"BeforeTheSessionRuns", writeStep(lifecycle.StateProvisioning, lifecycle.StateRunning), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustCheckpointWorld(t)
			src := w.MustCreate(t, 86400)
			if err := w.snaps.WriteFile(t.Context(), src.SandboxID, "/home/user/app/a.txt", []byte("a")); err != nil {
				t.Fatal(err)
			}
			c, _, err := w.svc.CreateCheckpoint(t.Context(), account, src.ID, lifecycle.CheckpointInput{})
			if err != nil {
				t.Fatal(err)
			}
			w.drain(t)
			in := lifecycle.ForkInput{CheckpointID: c.ID, IdempotencyKey: "fork-once"}
			dying, crasher := w.dying(tc.at)
			first, _, err := dying.Fork(t.Context(), account, src.ID, in)
			if tc.job {
				if err != nil {
					t.Fatalf("fork: %v", err)
				}
				w.runJobs(t, dying)
			} else if !errors.Is(err, reliability.ErrCrashed) {
				t.Fatalf("fork answered %v, want the crash", err)
			}
			mustDead(t, crasher)
			w.jobs.Take() // the job is lost with the process

			retry := func() *lifecycle.Session {
				t.Helper()
				sess, _, err := w.svc.Fork(t.Context(), account, src.ID, in)
				if err != nil {
					t.Fatalf("retried fork: %v", err)
				}
				return sess
			}
			if !tc.job {
				// The dead request's claim names a session never written:
				// retries wait until a lease has passed, then fork anew.
				if _, _, err := w.svc.Fork(t.Context(), account, src.ID, in); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Fatalf("retry within the lease = %v, want conflict (in progress)", err)
				}
				w.clock.Advance(w.svc.Policy().LeaseDuration)
			}
			again := retry()
			if tc.job && again.ID != first.ID {
				t.Fatalf("the retry answered %s, want the first session %s", again.ID, first.ID)
			}
			w.drain(t)
			if third := retry(); third.ID != again.ID {
				t.Errorf("a third try answered %s, want %s", third.ID, again.ID)
			}
			got := w.MustSession(t, again.ID)
			if got.State != lifecycle.StateRunning || got.ForkedFrom != src.ID {
				t.Fatalf("the fork = %s (forked from %q), want running from %s", got.State, got.ForkedFrom, src.ID)
			}
			if data, err := w.snaps.ReadFile(t.Context(), got.SandboxID, "/home/user/app/a.txt"); err != nil || string(data) != "a" {
				t.Errorf("the fork's a.txt = %q, %v", data, err)
			}
			// A sandbox the dead job made is reaped once past a lease.
			w.clock.Advance(2 * w.svc.Policy().LeaseDuration)
			w.MustSweep(t)
			if tagged := sandboxesTagged(w.world, again.ID); len(tagged) != 1 || tagged[0].ID != got.SandboxID {
				t.Errorf("the provider holds %+v for the fork, want only its sandbox", tagged)
			}
			page, err := w.svc.List(t.Context(), account, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			live := slices.DeleteFunc(page.Sessions, func(s *lifecycle.Session) bool { return s.State != lifecycle.StateRunning })
			if len(live) != 2 {
				t.Errorf("%d running sessions, want the source and one fork", len(live))
			}
			w.MustHistory(t, again.ID)
		})
	}
}
