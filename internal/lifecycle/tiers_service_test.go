package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// The retention tiers' rules (docs/CHECKPOINTS.md "Retention tiers"):
// paused → archived only once a ready checkpoint holds the work, an open
// of an archived session restores it (reason unarchive), and past
// delete_after the session and its checkpoints are deleted.

func dur(d time.Duration) *time.Duration { return &d }

// mustPausedWithTiers creates a session with the given tiers, writes a
// file and pauses it on request (no automatic checkpoint).
func mustPausedWithTiers(t *testing.T, w *ckptWorld, archive, del time.Duration) *lifecycle.Session {
	t.Helper()
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600,
		Tiers: lifecycle.Tiers{ArchiveAfter: dur(archive), DeleteAfter: dur(del)}})
	if sess.ArchiveAfter != archive || sess.DeleteAfter != del {
		t.Fatalf("created with tiers %v/%v, want %v/%v", sess.ArchiveAfter, sess.DeleteAfter, archive, del)
	}
	w.mustWrite(t, sess.SandboxID, "work.txt", "mine")
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), lifecycle.ReasonRequest, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	return w.mustGet(t, sess.ID)
}

// The archive path (a provider whose workspace Sandman archives): the
// whole way down and back up.
func TestArchiveThenOpenRestoresThenDelete(t *testing.T) {
	w := mustCheckpointWorld(t, true)
	sess := mustPausedWithTiers(t, w, time.Hour, 48*time.Hour)
	old := sess.SandboxID

	w.clock.Advance(30 * time.Minute)
	if sum := MustRun(t, w.sweeper); sum.TierDue != 0 {
		t.Errorf("before the archive deadline the sweep found %d due", sum.TierDue)
	}
	w.clock.Advance(30 * time.Minute)
	sum := MustRun(t, w.sweeper)
	if sum.TierHeld != 1 || sum.Archived != 0 {
		t.Fatalf("at the deadline with no checkpoint: %+v, want it held for a checkpoint", sum)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || w.sandboxState(old) == sandboxGone {
		t.Fatalf("no checkpoint yet: session %s, sandbox %s; want paused with its sandbox", got.State, w.sandboxState(old))
	}
	w.drain(t) // the archive checkpoint's save
	if sum := MustRun(t, w.sweeper); sum.Archived != 0 {
		t.Errorf("archived before the retry time: %+v", sum)
	}
	w.clock.Advance(time.Minute)
	if sum := MustRun(t, w.sweeper); sum.Archived != 1 {
		t.Fatalf("with a ready checkpoint: %+v, want archived", sum)
	}
	got = w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateArchived || got.Reason != lifecycle.ReasonArchive || got.SandboxID != "" || got.TierPending {
		t.Fatalf("after the demotion = %s/%s sandbox %q pending %v, want archived without a sandbox", got.State, got.Reason, got.SandboxID, got.TierPending)
	}
	if st := w.sandboxState(old); st != sandboxGone {
		t.Errorf("the provider still has the archived session's sandbox: %s", st)
	}
	cps, err := w.svc.ListCheckpoints(t.Context(), acct, sess.ID, "", 10)
	if err != nil || len(cps.Checkpoints) != 1 || cps.Checkpoints[0].Trigger != lifecycle.TriggerArchive {
		t.Fatalf("checkpoints = %+v (%v), want the one archive checkpoint", cps, err)
	}
	if kept := cps.Checkpoints[0].SizeBytes; kept == 0 || got.CheckpointBytes != kept {
		t.Errorf("the archived session stores %d checkpoint bytes, want its checkpoint's %d", got.CheckpointBytes, kept)
	}

	// An open restores it: archived → restoring (unarchive) → running.
	opened, err := w.svc.Open(t.Context(), acct, sess.ID)
	if err != nil || opened.State != lifecycle.StateRestoring || opened.Reason != lifecycle.ReasonUnarchive {
		t.Fatalf("open of an archived session = %+v, %v; want restoring, reason unarchive", opened, err)
	}
	if again, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil || again.State != lifecycle.StateRestoring {
		t.Fatalf("a second open = %v, %v; want it to join the restore", again.State, err)
	}
	w.drain(t)
	got = w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonUnarchive || got.SandboxID == "" {
		t.Fatalf("after the unarchive = %s/%s, want running, reason unarchive", got.State, got.Reason)
	}
	w.wantFile(t, got.SandboxID, "work.txt", "mine")

	// Paused again, then archived and past delete_after: deleted
	// with its checkpoints.
	if err := w.svc.Pause(t.Context(), got, lifecycle.ReasonRequest, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	second := w.mustGet(t, sess.ID).SandboxID
	w.clock.Advance(49 * time.Hour)
	MustRun(t, w.sweeper) // a checkpoint of the new sandbox first
	w.drain(t)
	w.clock.Advance(time.Minute)
	MustRun(t, w.sweeper) // archived
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateArchived {
		t.Fatalf("second demotion: %s, want archived", got.State)
	}
	if sum := MustRun(t, w.sweeper); sum.Deleted != 1 {
		t.Fatalf("past delete_after: %+v, want deleted", sum)
	}
	got = w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateDeleted || got.Reason != lifecycle.ReasonRetention || got.TierPending {
		t.Fatalf("after delete_after = %s/%s pending %v", got.State, got.Reason, got.TierPending)
	}
	if cps, err := w.svc.ListCheckpoints(t.Context(), acct, sess.ID, "", 10); err != nil || len(cps.Checkpoints) != 0 {
		t.Errorf("a deleted session keeps checkpoints: %+v (%v)", cps, err)
	}
	if st := w.sandboxState(second); st != sandboxGone {
		t.Errorf("the provider still has the deleted session's sandbox: %s", st)
	}
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); !lifecycle.IsCode(err, lifecycle.CodeGone) {
		t.Errorf("open of a deleted session: %v, want gone", err)
	}
	w.MustHistory(t, sess.ID)
}

// A provider that snapshots only running sandboxes, with no archives: a
// paused session without a checkpoint cannot be archived. It stays
// paused with its sandbox, TierError says why, and the sweep tries again
// only after TierRetryInterval.
func TestArchiveWithoutACheckpointStaysPaused(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	sess := mustPausedWithTiers(t, w, time.Hour, 0)
	w.clock.Advance(time.Hour)
	if sum := MustRun(t, w.sweeper); sum.TierHeld != 1 || sum.Archived != 0 {
		t.Fatalf("sweep = %+v, want the session held", sum)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.TierError == "" || w.sandboxState(sess.SandboxID) != lifecycle.SandboxPaused {
		t.Fatalf("session %s (tier error %q), sandbox %s; want paused with its sandbox and why", got.State, got.TierError, w.sandboxState(sess.SandboxID))
	}
	if !got.TierRetryAt.Equal(w.clock.Now().Add(lifecycle.TierRetryInterval)) {
		t.Errorf("retry at %v, want now + %v", got.TierRetryAt, lifecycle.TierRetryInterval)
	}
	if sum := MustRun(t, w.sweeper); sum.TierDue != 0 {
		t.Errorf("found again before the retry time: %+v", sum)
	}
	// Resumed by its user: the tier error goes with the pause.
	if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	if got := w.mustGet(t, sess.ID); got.TierError != "" || !got.TierRetryAt.IsZero() {
		t.Errorf("running again keeps tier error %q retry %v", got.TierError, got.TierRetryAt)
	}
	w.MustHistory(t, sess.ID)
}

// On the same provider, the checkpoint of an automatic pause (taken
// before the pause, while the sandbox runs) holds the work: the archive
// uses it and takes none.
func TestArchiveUsesThePauseCheckpoint(t *testing.T) {
	w := mustCheckpointWorld(t, false)
	on := true
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600, Checkpoints: lifecycle.CheckpointOptions{OnPause: &on},
		Tiers: lifecycle.Tiers{ArchiveAfter: dur(time.Hour)}})
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), lifecycle.ReasonIdle, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	w.drain(t)
	w.clock.Advance(time.Hour)
	if sum := MustRun(t, w.sweeper); sum.Archived != 1 {
		t.Fatalf("sweep = %+v, want archived with the pause's checkpoint", sum)
	}
	cps, err := w.svc.ListCheckpoints(t.Context(), acct, sess.ID, "", 10)
	if err != nil || len(cps.Checkpoints) != 1 || cps.Checkpoints[0].Trigger != lifecycle.TriggerPause {
		t.Fatalf("checkpoints = %+v (%v), want only the pause's", cps, err)
	}
	if st := w.sandboxState(sess.SandboxID); st != sandboxGone {
		t.Errorf("archived session's sandbox is %s at the provider", st)
	}
	if resumed, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil || resumed.State != lifecycle.StateRestoring {
		t.Fatalf("resume of an archived session = %v, %v; want restoring", resumed, err)
	}
	w.drain(t)
	if got := w.mustGet(t, sess.ID); got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonUnarchive {
		t.Errorf("after the unarchive: %s/%s", got.State, got.Reason)
	}
	w.MustHistory(t, sess.ID)
}

// A create's tiers come from its own fields, then the deployment's, then
// its provider's retention of paused sandboxes (less TierMargin).
func TestCreateResolvesTiers(t *testing.T) {
	day := 24 * time.Hour
	w := MustWorld(t)
	w.rewire(t, func(c *lifecycle.Config) {
		c.PausedRetention = map[string]time.Duration{"fake": 30 * day}
		c.Tiers = lifecycle.Tiers{DeleteAfter: dur(90 * day)}
	})
	got := w.mustCreate(t, lifecycle.CreateInput{})
	if got.ArchiveAfter != 27*day || got.DeleteAfter != 90*day {
		t.Errorf("defaults: %v/%v, want 27d (the provider's) and 90d (the deployment's)", got.ArchiveAfter, got.DeleteAfter)
	}
	got = w.mustCreate(t, lifecycle.CreateInput{Tiers: lifecycle.Tiers{ArchiveAfter: dur(0), DeleteAfter: dur(day)}})
	if got.ArchiveAfter != 0 || got.DeleteAfter != day {
		t.Errorf("the session's own: %v/%v, want never/1d", got.ArchiveAfter, got.DeleteAfter)
	}
	if _, _, err := w.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", Tiers: lifecycle.Tiers{ArchiveAfter: dur(time.Second)}}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("archive after 1 s: %v, want invalid", err)
	}
}

// A killed event for the sandbox of a session its demotion archived but
// whose kill has not been recorded yet (the kill failed, or its event
// overtook the write that records it) is the demotion's own doing: the
// session stays archived on its checkpoint, never expired.
func TestAKilledEventMidDemotionKeepsTheSessionArchived(t *testing.T) {
	w := mustCheckpointWorld(t, true)
	sess := mustPausedWithTiers(t, w, time.Hour, 48*time.Hour)
	w.clock.Advance(time.Hour)
	MustRun(t, w.sweeper) // holds it for a checkpoint, queues the save
	w.drain(t)
	w.clock.Advance(time.Minute)
	w.fake.FailNext(fake.OpKill, nil)
	MustRun(t, w.sweeper)
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateArchived || !got.TierPending || got.SandboxID != sess.SandboxID {
		t.Fatalf("with the kill failed = %s pending %v on %q, want archived, pending, on %q", got.State, got.TierPending, got.SandboxID, sess.SandboxID)
	}
	w.clock.Advance(time.Second)
	out, err := w.svc.ApplyProviderEvent(t.Context(), lifecycle.ProviderEvent{ID: "evt_killed", Provider: got.Provider,
		Type: lifecycle.ProviderEventKilled, SandboxID: got.SandboxID, Timestamp: w.clock.Now(), KillReason: "request"})
	if err != nil || out != lifecycle.WebhookRecorded {
		t.Fatalf("killed mid-demotion = %s, %v; want recorded", out, err)
	}
	if after := w.mustGet(t, sess.ID); after.State != lifecycle.StateArchived {
		t.Fatalf("after the killed event the session is %s (%s), want archived", after.State, after.Reason)
	}
}

// TestCreateResolvesAccountTiers: the account's tiers, which the HTTP edge
// puts on the request's context from the authenticating key
// (WithAccountTiers), come between the session's and the deployment's,
// field by field: session > key (account) > deployment > the provider's
// default. A fork made with the key follows them too; a create made
// without them (another key) does not.
func TestCreateResolvesAccountTiers(t *testing.T) {
	day := 24 * time.Hour
	w := mustCheckpointWorld(t, false, func(c *lifecycle.Config) {
		c.PausedRetention = map[string]time.Duration{"fake": 30 * day}
		c.Tiers = lifecycle.Tiers{ArchiveAfter: dur(10 * day), DeleteAfter: dur(90 * day)}
	})
	key := lifecycle.WithAccountTiers(t.Context(), lifecycle.Tiers{ArchiveAfter: dur(2 * day)})
	create := func(ctx context.Context, in lifecycle.CreateInput) *lifecycle.Session {
		t.Helper()
		in.Template = "base"
		sess, _, err := w.svc.Create(ctx, acct, in)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return sess
	}
	for _, tc := range []struct {
		name          string
		ctx           context.Context
		in            lifecycle.Tiers
		archive, dele time.Duration
	}{
		{"Deployment", t.Context(), lifecycle.Tiers{}, 10 * day, 90 * day},
		{"Key", key, lifecycle.Tiers{}, 2 * day, 90 * day},
		{"Session", key, lifecycle.Tiers{ArchiveAfter: dur(day), DeleteAfter: dur(0)}, day, 0},
		{"KeyNever", lifecycle.WithAccountTiers(t.Context(), lifecycle.Tiers{ArchiveAfter: dur(0), DeleteAfter: dur(5 * day)}),
			lifecycle.Tiers{}, 0, 5 * day},
	} {
		got := create(tc.ctx, lifecycle.CreateInput{Tiers: tc.in})
		if got.ArchiveAfter != tc.archive || got.DeleteAfter != tc.dele {
			t.Errorf("%s: %v/%v, want %v/%v", tc.name, got.ArchiveAfter, got.DeleteAfter, tc.archive, tc.dele)
		}
	}

	w.rewire(t, func(c *lifecycle.Config) { c.Tiers = lifecycle.Tiers{} })
	if got := create(t.Context(), lifecycle.CreateInput{}); got.ArchiveAfter != 27*day || got.DeleteAfter != 0 {
		t.Errorf("nothing set: %v/%v, want the provider's 27d and never", got.ArchiveAfter, got.DeleteAfter)
	}
	src := create(t.Context(), lifecycle.CreateInput{})
	fork, _, err := w.svc.Fork(key, acct, src.ID, lifecycle.ForkInput{})
	if err != nil {
		t.Fatalf("fork: %v", err)
	}
	if fork.ArchiveAfter != 2*day || fork.DeleteAfter != 0 {
		t.Errorf("a fork with the key: %v/%v, want the key's 2d and never", fork.ArchiveAfter, fork.DeleteAfter)
	}
	if ctx := lifecycle.WithAccountTiers(t.Context(), lifecycle.Tiers{}); ctx != t.Context() {
		t.Error("WithAccountTiers of nothing changed the context")
	}
}
