package vercel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// The checkpoint tag the adapter keeps on a sandbox (checkpoints.go).
const checkpointTag = "sandman-checkpoint"

func isCheckpointGone(err error) bool { return errors.Is(err, lifecycle.ErrCheckpointGone) }

func mustWriteFile(t *testing.T, p *vercel.Provider, id, path, data string) {
	t.Helper()
	if err := p.WriteFile(context.Background(), id, path, []byte(data)); err != nil {
		t.Fatalf("WriteFile %s: %v", path, err)
	}
}

func mustSnapshot(t *testing.T, p *vercel.Provider, id, name string) lifecycle.Snapshot {
	t.Helper()
	snap, err := p.Snapshot(context.Background(), id, lifecycle.SnapshotRequest{Name: name})
	if err != nil || snap.Ref == "" || snap.State != lifecycle.SnapshotReady {
		t.Fatalf("Snapshot(%s) = %+v, %v", id, snap, err)
	}
	return snap
}

func TestSnapshotOfARunningSession(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_snap", nil)
	session := mustSandbox(t, f, sb.ID).CurrentSessionID
	mustWriteFile(t, p, sb.ID, "/home/user/app/a.txt", "a")
	snap := mustSnapshot(t, p, sb.ID, "chk_1")

	rec := mustSandbox(t, f, sb.ID)
	if rec.Status != verceltest.StatusStopped || rec.CurrentSnapshotID != snap.Ref {
		t.Errorf("after the snapshot the sandbox is %s on %s; want stopped on %s", rec.Status, rec.CurrentSnapshotID, snap.Ref)
	}
	if got := rec.Tags[checkpointTag]; got != "chk_1/"+session {
		t.Errorf("checkpoint tag = %q, want chk_1/%s", got, session)
	}
	want := f.Clock.Now().Add(vercel.DefaultSnapshotRetention)
	if snap.Name != "chk_1" || snap.SourceSandboxID != sb.ID || !snap.ExpiresAt.Equal(want) || snap.Keeps != lifecycle.KeepsFilesystem {
		t.Errorf("snapshot = %+v; want chk_1 of %s expiring %s", snap, sb.ID, want)
	}
	if err := p.WriteFile(context.Background(), sb.ID, "/home/user/app/b.txt", nil); kindOf(err) != "conflict" {
		t.Errorf("WriteFile in the stopped session = %v, want conflict", err)
	}
	caps := p.SnapshotCaps()
	if !caps.StopsSource || !caps.SnapshotsPaused || caps.Retention != 30*24*time.Hour {
		t.Errorf("caps = %+v", caps)
	}
	if _, err := p.Resume(context.Background(), sb.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := p.ReadFile(context.Background(), sb.ID, "/home/user/app/a.txt"); err != nil || string(got) != "a" {
		t.Errorf("after resume a.txt = %q, %v", got, err)
	}
}

// A paused sandbox is not resumed: its stop's snapshot is the checkpoint,
// and LastSnapshot returns the same one.
func TestSnapshotOfAPausedSandboxRecordsItsStop(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_paused", nil)
	if _, err := p.LastSnapshot(context.Background(), sb.ID); kindOf(err) != "conflict" {
		t.Errorf("LastSnapshot of a running sandbox = %v, want conflict", err)
	}
	if err := p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	rec := mustSandbox(t, f, sb.ID)
	boots := f.Boots()
	last, err := p.LastSnapshot(context.Background(), sb.ID)
	if err != nil || last.Ref != rec.CurrentSnapshotID || last.Name != "" {
		t.Fatalf("LastSnapshot = %+v, %v; want %s", last, err, rec.CurrentSnapshotID)
	}
	if _, ok := mustSandbox(t, f, sb.ID).Tags[checkpointTag]; !ok {
		t.Error("LastSnapshot left no checkpoint tag: a kill would delete the snapshot")
	}
	snap := mustSnapshot(t, p, sb.ID, "chk_p")
	if snap.Ref != rec.CurrentSnapshotID || f.Boots() != boots || f.Requests(verceltest.OpSnapshot) != 0 {
		t.Errorf("Snapshot of a paused sandbox = %s with %d boots and %d snapshot calls; want %s, none",
			snap.Ref, f.Boots()-boots, f.Requests(verceltest.OpSnapshot), rec.CurrentSnapshotID)
	}
	list, err := p.ListSnapshots(context.Background(), sb.ID)
	if err != nil || len(list) != 1 || list[0].Name != "chk_p" {
		t.Errorf("ListSnapshots = %+v, %v; want the stop's snapshot named chk_p", list, err)
	}
	f.ExpireSnapshot(project, sb.ID)
	if _, err := p.LastSnapshot(context.Background(), sb.ID); kindOf(err) != "gone" {
		t.Errorf("LastSnapshot once the snapshot expired = %v, want gone (the paused state is lost)", err)
	}
}

// A snapshot whose answer was lost is found again: by the retry, which sees
// the session stopped, and by ListSnapshots, which names it.
func TestSnapshotWhoseAnswerWasLost(t *testing.T) {
	t.Run("TheRetryReturnsIt", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_lost", nil)
		f.Fail(verceltest.OpSnapshot, verceltest.Fault{Lose: true})
		snap := mustSnapshot(t, p, sb.ID, "chk_lost")
		if f.Requests(verceltest.OpSnapshot) != 1 || snap.Ref != mustSandbox(t, f, sb.ID).CurrentSnapshotID {
			t.Errorf("%d snapshot calls, got %s; want one call and the sandbox's current snapshot", f.Requests(verceltest.OpSnapshot), snap.Ref)
		}
	})
	t.Run("ListSnapshotsNamesIt", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.MaxRetries = -1 })
		sb := create(t, p, "ses_crash", nil)
		// An earlier checkpoint, then a pause and resume: a second session.
		first := mustSnapshot(t, p, sb.ID, "chk_a")
		if _, err := p.Resume(context.Background(), sb.ID, time.Minute); err != nil {
			t.Fatal(err)
		}
		f.Fail(verceltest.OpSnapshot, verceltest.Fault{Lose: true})
		if _, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_b"}); kindOf(err) != "transient" {
			t.Fatalf("Snapshot with its answer lost = %v, want transient", err)
		}
		list, err := p.ListSnapshots(context.Background(), sb.ID)
		if err != nil || len(list) != 2 {
			t.Fatalf("ListSnapshots = %+v, %v; want 2", list, err)
		}
		names := map[string]string{}
		for _, s := range list {
			names[s.Ref] = s.Name
		}
		cur := mustSandbox(t, f, sb.ID).CurrentSnapshotID
		if names[cur] != "chk_b" || names[first.Ref] != "" {
			t.Errorf("names = %v; want %s named chk_b and the older one unnamed", names, cur)
		}
	})
}

func TestSlowAndFailingSnapshots(t *testing.T) {
	t.Run("Slow", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
			c.StopTimeout = 50 * time.Millisecond
			c.MaxRetries = -1
		})
		sb := create(t, p, "ses_slow", nil)
		f.SetSnapshotFault(project, sb.ID, verceltest.SnapshotFault{Slow: time.Minute})
		if _, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_s"}); kindOf(err) != "transient" {
			t.Fatalf("Snapshot past StopTimeout = %v, want transient", err)
		}
		if _, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_s"}); kindOf(err) != "conflict" {
			t.Errorf("Snapshot while it snapshots = %v, want conflict", err)
		}
		f.Clock.Advance(time.Minute)
		snap := mustSnapshot(t, p, sb.ID, "chk_s")
		if snap.Ref != mustSandbox(t, f, sb.ID).CurrentSnapshotID || f.Requests(verceltest.OpSnapshot) != 1 {
			t.Errorf("after the clock passed it: %s, %d calls; want the one snapshot taken", snap.Ref, f.Requests(verceltest.OpSnapshot))
		}
	})
	t.Run("Failed", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_fail", nil)
		f.SetSnapshotFault(project, sb.ID, verceltest.SnapshotFault{Fail: true})
		snap, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_f"})
		if err != nil || snap.State != lifecycle.SnapshotFailed || snap.Reason == "" {
			t.Errorf("Snapshot = %+v, %v; want failed with a reason", snap, err)
		}
		if _, err := p.GetSnapshot(context.Background(), snap.Ref); !isCheckpointGone(err) {
			t.Errorf("GetSnapshot of a failed snapshot = %v, want ErrCheckpointGone", err)
		}
	})
}

func TestSnapshotGoneAnswers(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_gone", nil)
	snap := mustSnapshot(t, p, sb.ID, "chk_g")
	if _, err := p.GetSnapshot(context.Background(), "snap_never"); !isCheckpointGone(err) {
		t.Errorf("GetSnapshot of an unknown id = %v, want ErrCheckpointGone", err)
	}
	f.Fail(verceltest.OpSnapshotGet, verceltest.Fault{Status: 503}, verceltest.Fault{Status: 503}, verceltest.Fault{Status: 503})
	if _, err := p.GetSnapshot(context.Background(), snap.Ref); kindOf(err) != "transient" {
		t.Errorf("GetSnapshot through 503s = %v, want transient", err)
	}
	f.DropSnapshot(snap.Ref) // behind our back
	if _, err := p.GetSnapshot(context.Background(), snap.Ref); !isCheckpointGone(err) {
		t.Errorf("GetSnapshot of a deleted snapshot = %v, want ErrCheckpointGone", err)
	}
	// The sandbox's current snapshot is gone: a plain get still answers,
	// a resume is the definitive loss; a snapshot of it is gone too.
	if got, err := p.Get(context.Background(), sb.ID); err != nil || got.State != lifecycle.SandboxPaused {
		t.Errorf("Get = %+v, %v; want paused (a plain get proves nothing)", got, err)
	}
	if _, err := p.Resume(context.Background(), sb.ID, time.Minute); kindOf(err) != "gone" {
		t.Errorf("Resume = %v, want gone (410 snapshot_not_found)", err)
	}
	if _, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_h"}); kindOf(err) != "gone" {
		t.Errorf("Snapshot of a sandbox whose snapshot is gone = %v, want gone", err)
	}
	_, err := p.CreateFromSnapshot(context.Background(), snap.Ref, lifecycle.CreateRequest{Template: "web", Timeout: time.Minute})
	if !isCheckpointGone(err) {
		t.Errorf("CreateFromSnapshot = %v, want ErrCheckpointGone", err)
	}
}

func TestCreateFromSnapshot(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	src := create(t, p, "ses_src", nil)
	mustWriteFile(t, p, src.ID, "/home/user/app/kept.txt", "kept")
	snap := mustSnapshot(t, p, src.ID, "chk_c")
	md := map[string]string{lifecycle.MetadataSessionID: "ses_src", lifecycle.MetadataDeployment: "dep1"}
	req := lifecycle.CreateRequest{Template: "web", Timeout: 10 * time.Minute, AutoPause: true, Metadata: md}
	f.Fail(verceltest.OpCreate, verceltest.Fault{Lose: true})
	dst, err := p.CreateFromSnapshot(context.Background(), snap.Ref, req)
	if err != nil {
		t.Fatal(err)
	}
	if dst.ID == src.ID || dst.State != lifecycle.SandboxRunning || dst.PreviewURL == "" || dst.Template != "web" {
		t.Errorf("CreateFromSnapshot = %+v; want a new running sandbox with a preview", dst)
	}
	if dst.Metadata[lifecycle.MetadataSessionID] != "ses_src" || len(dst.Metadata) != 2 {
		t.Errorf("metadata = %v; want the request's only (no internal tags)", dst.Metadata)
	}
	rec := mustSandbox(t, f, dst.ID)
	se, _ := f.Session(rec.CurrentSessionID)
	if se.SourceSnapshotID != snap.Ref || rec.Tags[checkpointTag] != snap.Ref || rec.Image != "" {
		t.Errorf("session from %q, tag %q, image %q; want from %s, tagged, no image", se.SourceSnapshotID, rec.Tags[checkpointTag], rec.Image, snap.Ref)
	}
	if got, err := p.ReadFile(context.Background(), dst.ID, "/home/user/app/kept.txt"); err != nil || string(got) != "kept" {
		t.Errorf("kept.txt = %q, %v", got, err)
	}
	if page, _ := p.List(context.Background(), lifecycle.ListRequest{Metadata: md}); len(page.Sandboxes) != 2 {
		t.Errorf("sandboxes of the session = %d, want 2 (the retry adopted the lost create's sandbox)", len(page.Sandboxes))
	}
}

// Kill deletes a sandbox's snapshots only when none of them is a
// checkpoint.
func TestKillKeepsCheckpoints(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	plain := create(t, p, "ses_plain", nil)
	if err := p.Pause(context.Background(), plain.ID); err != nil {
		t.Fatal(err)
	}
	stop := mustSandbox(t, f, plain.ID).CurrentSnapshotID
	kept := create(t, p, "ses_kept", nil)
	snap := mustSnapshot(t, p, kept.ID, "chk_k")
	for _, id := range []string{plain.ID, kept.ID} {
		if err := p.Kill(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.GetSnapshot(context.Background(), stop); !isCheckpointGone(err) {
		t.Errorf("the stop snapshot of a sandbox without checkpoints: %v, want deleted with it", err)
	}
	if _, err := p.GetSnapshot(context.Background(), snap.Ref); err != nil {
		t.Errorf("the checkpoint of a killed sandbox: %v, want kept", err)
	}
	if list, err := p.ListSnapshots(context.Background(), kept.ID); err != nil || len(list) != 1 || list[0].Name != "" {
		t.Errorf("ListSnapshots of a killed sandbox = %+v, %v; want its checkpoint, unnamed", list, err)
	}
	if err := p.DeleteSnapshot(context.Background(), snap.Ref); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSnapshot(context.Background(), snap.Ref); err != nil {
		t.Errorf("deleting a deleted snapshot: %v", err)
	}
}

func TestFiles(t *testing.T) {
	_, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_files", nil)
	data := string([]byte{0, 1, 2, 255, '\n', '\''})
	mustWriteFile(t, p, sb.ID, "/home/user/app/bin/x", data)
	if got, err := p.ReadFile(context.Background(), sb.ID, "/home/user/app/bin/x"); err != nil || string(got) != data {
		t.Errorf("ReadFile = %q, %v; want %q", got, err, data)
	}
	if _, err := p.ReadFile(context.Background(), sb.ID, "/nope"); !errors.Is(err, lifecycle.ErrNoFile) {
		t.Errorf("ReadFile of a missing file = %v, want ErrNoFile", err)
	}
	if err := p.WriteFile(context.Background(), sb.ID, "relative", nil); kindOf(err) != "plain" {
		t.Errorf("WriteFile of a relative path = %v, want a plain error", err)
	}
	if err := p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadFile(context.Background(), sb.ID, "/home/user/app/bin/x"); kindOf(err) != "conflict" {
		t.Errorf("ReadFile of a paused sandbox = %v, want conflict", err)
	}
}

// A session call answered 410 sandbox_stopped is a conflict: the session
// is over, the sandbox is fine. Never gone.
func TestSessionStoppedIsNotLoss(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.MaxRetries = -1 })
	sb := create(t, p, "ses_410", nil)
	f.Fail(verceltest.OpCommand, verceltest.Fault{Status: 410, Code: "sandbox_stopped"})
	if err := p.WriteFile(context.Background(), sb.ID, "/a", nil); kindOf(err) != "conflict" {
		t.Errorf("WriteFile answered sandbox_stopped = %v, want conflict", err)
	}
	f.Fail(verceltest.OpSnapshot, verceltest.Fault{Status: 410, Code: "sandbox_stopped"})
	if _, err := p.Snapshot(context.Background(), sb.ID, lifecycle.SnapshotRequest{Name: "chk_x"}); kindOf(err) != "transient" {
		t.Errorf("Snapshot answered sandbox_stopped = %v, want transient (read it again)", err)
	}
}
