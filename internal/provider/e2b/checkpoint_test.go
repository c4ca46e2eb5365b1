package e2b_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// The checkpoint facts of docs/providers/e2b.md "Checkpoints", each against
// the fake; the conformance rows (TestConformance) hold the rest.

func mustRunning(t *testing.T, srv *e2btest.Server, p *e2b.Provider) lifecycle.Sandbox {
	t.Helper()
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: 10 * time.Minute, AutoPause: true,
		Metadata: map[string]string{"sandman_session_id": "ses_src"}})
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

func TestSnapshotOfAPausedSandboxIsAConflictNeverGone(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	MustPut(t, srv, "paused", lifecycle.SandboxPaused, srv.Clock.Now())
	_, err := p.Snapshot(ctx, "paused", lifecycle.SnapshotRequest{Name: "chk_1"})
	if !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("Snapshot of a paused sandbox: %v, want conflict (E2B answers 404 for it)", err)
	}
	if _, err := p.Snapshot(ctx, "unknown", lifecycle.SnapshotRequest{Name: "chk_2"}); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Snapshot of an unknown sandbox: %v, want gone", err)
	}
	MustPut(t, srv, "busy", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour),
		func(sb *e2btest.Sandbox) { sb.Transition = e2btest.Snapshotting })
	if _, err := p.Snapshot(ctx, "busy", lifecycle.SnapshotRequest{Name: "chk_3"}); !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("Snapshot of a sandbox being snapshotted: %v, want conflict", err)
	}
	if err := p.Pause(ctx, "busy"); !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("Pause of a sandbox being snapshotted: %v, want conflict", err)
	}
	MustPut(t, srv, "old", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour),
		func(sb *e2btest.Sandbox) { sb.EnvdVersion = "0.4.9" })
	if _, err := p.Snapshot(ctx, "old", lifecycle.SnapshotRequest{Name: "chk_4"}); err == nil || isProviderError(err) {
		t.Errorf("Snapshot of a sandbox with envd 0.4.9: %v, want a plain error (rebuild the template)", err)
	}
}

// A 500 from a snapshot or a fork may mean E2B killed the source: the
// adapter reads it back before calling the failure transient.
func TestCheckpoint500ReadsTheSourceBack(t *testing.T) {
	for _, op := range []e2btest.Op{e2btest.OpSnapshot, e2btest.OpFork} {
		t.Run(string(op), func(t *testing.T) {
			srv := e2btest.NewServer(t)
			p, _ := MustProvider(t, srv)
			killed, alive := mustRunning(t, srv, p), mustRunning(t, srv, p)
			srv.Fail(e2btest.ForSandbox(op, killed.ID), e2btest.Fault{Status: 500})
			srv.Fail(e2btest.ForSandbox(op, alive.ID), e2btest.Fault{Status: 500, Message: "Error getting sandbox"})
			checkpoint := func(id string) error {
				if op == e2btest.OpFork {
					_, err := p.Fork(ctx, id, lifecycle.CreateRequest{Timeout: time.Minute})
					return err
				}
				_, err := p.Snapshot(ctx, id, lifecycle.SnapshotRequest{Name: "chk_x"})
				return err
			}
			if err := checkpoint(killed.ID); !isKind(err, lifecycle.ErrSandboxGone) {
				t.Errorf("after a 500 that killed the source: %v, want gone", err)
			}
			if err := checkpoint(alive.ID); !isKind(err, lifecycle.ErrProviderTransient) {
				t.Errorf("after a 500 with the source alive: %v, want transient", err)
			}
			if _, ok := srv.Sandbox(alive.ID); !ok {
				t.Error("the source the 500 left alive is gone")
			}
			if n := srv.Requests(op); n != 2 {
				t.Errorf("%s requests = %d, want 2 (never retried)", op, n)
			}
		})
	}
}

// A snapshot whose answer was lost exists: ListSnapshots finds it by the
// name the checkpoint gave it, and a retry is not made by the adapter.
func TestSnapshotWithALostAnswerIsFoundByName(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb := mustRunning(t, srv, p)
	srv.Fail(e2btest.OpSnapshot, e2btest.Fault{Lose: true})
	if _, err := p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "chk_lost"}); !isKind(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("Snapshot with a lost answer: %v, want transient", err)
	}
	list, err := p.ListSnapshots(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "chk_lost" || list[0].Ref != e2btest.TeamSlug+"/chk_lost:default" {
		t.Fatalf("ListSnapshots = %+v, want the one snapshot named chk_lost", list)
	}
	got, err := p.GetSnapshot(ctx, list[0].Ref)
	if err != nil || got.State != lifecycle.SnapshotReady || got.Keeps != lifecycle.KeepsFilesystemMemory {
		t.Errorf("GetSnapshot = %+v, %v; want it ready with memory", got, err)
	}
}

func TestSnapshotNameIsOneE2BTakes(t *testing.T) {
	if got := e2b.SnapshotName("chk_0123abc"); got != "chk_0123abc" {
		t.Errorf("SnapshotName of a chk_ id = %q, want it unchanged", got)
	}
	a, b := e2b.SnapshotName("Chk_A/B:1"), e2b.SnapshotName("chk_a-b-1")
	if a == b || !strings.HasPrefix(a, "chk_a-b-1-") {
		t.Errorf("SnapshotName(Chk_A/B:1) = %q, SnapshotName(chk_a-b-1) = %q: want a cleaned name with a hash, unlike the other", a, b)
	}
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb := mustRunning(t, srv, p)
	snap, err := p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "Chk_A/B:1"})
	if err != nil || snap.Ref != e2btest.TeamSlug+"/"+a+":default" || snap.Name != "Chk_A/B:1" {
		t.Errorf("Snapshot named Chk_A/B:1 = %+v, %v", snap, err)
	}
}

func TestListSnapshotsPagesAndKeepsToItsSandbox(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb, other := mustRunning(t, srv, p), mustRunning(t, srv, p)
	for i := range 120 {
		if _, err := p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: fmt.Sprintf("chk_%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Snapshot(ctx, other.ID, lifecycle.SnapshotRequest{Name: "chk_other"}); err != nil {
		t.Fatal(err)
	}
	list, err := p.ListSnapshots(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 120 || list[0].Name != "chk_119" || list[119].Name != "chk_000" || list[0].SourceSandboxID != sb.ID {
		t.Errorf("ListSnapshots = %d snapshots, first %+v; want 120, newest first", len(list), list[0])
	}
	if n := srv.Requests(e2btest.OpListSnapshots); n != 2 {
		t.Errorf("list requests = %d, want 2 pages", n)
	}
}

func TestDeleteSnapshotInUseIsAConflict(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	snap, err := p.Snapshot(ctx, mustRunning(t, srv, p).ID, lifecycle.SnapshotRequest{Name: "chk_used"})
	if err != nil {
		t.Fatal(err)
	}
	made, err := p.CreateFromSnapshot(ctx, snap.Ref, lifecycle.CreateRequest{Timeout: time.Minute, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx, made.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSnapshot(ctx, snap.Ref); !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("DeleteSnapshot while a paused sandbox uses it: %v, want conflict", err)
	}
	if err := p.Kill(ctx, made.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteSnapshot(ctx, snap.Ref); err != nil {
		t.Errorf("DeleteSnapshot once unused: %v", err)
	}
	if _, err := p.GetSnapshot(ctx, snap.Ref); !errors.Is(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("GetSnapshot after delete: %v, want gone", err)
	}
}

func TestSnapshotDeletedBehindOurBackIsGone(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	snap, err := p.Snapshot(ctx, mustRunning(t, srv, p).ID, lifecycle.SnapshotRequest{Name: "chk_dropped"})
	if err != nil {
		t.Fatal(err)
	}
	if !srv.DropSnapshot(snap.Ref) {
		t.Fatal("the fake had no such snapshot")
	}
	if _, err := p.GetSnapshot(ctx, snap.Ref); !isKind(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("GetSnapshot: %v, want gone", err)
	}
	if _, err := p.CreateFromSnapshot(ctx, snap.Ref, lifecycle.CreateRequest{Timeout: time.Minute}); !isKind(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("CreateFromSnapshot: %v, want gone", err)
	}
	if err := p.DeleteSnapshot(ctx, snap.Ref); err != nil {
		t.Errorf("DeleteSnapshot of a gone snapshot: %v, want success", err)
	}
}

// A snapshot keeps memory: the processes run on in a sandbox made from it
// and in a fork.
func TestSnapshotAndForkKeepProcesses(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	src := mustRunning(t, srv, p)
	if _, err := p.StartCommand(ctx, src.ID, lifecycle.Command{Name: "sandman-app", Line: "npm run dev", Port: 3000}); err != nil {
		t.Fatal(err)
	}
	snap, err := p.Snapshot(ctx, src.ID, lifecycle.SnapshotRequest{Name: "chk_procs"})
	if err != nil {
		t.Fatal(err)
	}
	made, err := p.CreateFromSnapshot(ctx, snap.Ref, lifecycle.CreateRequest{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	fork, err := p.Fork(ctx, src.ID, lifecycle.CreateRequest{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{src.ID, made.ID, fork.ID} {
		if st, err := p.CommandStatus(ctx, id, "sandman-app"); err != nil || !st.Running {
			t.Errorf("the app in %s: %+v, %v; want running", id, st, err)
		}
	}
}

func TestForkAlwaysSendsATimeoutAndCarriesTheParentsMetadata(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	src := mustRunning(t, srv, p)
	fork, err := p.Fork(ctx, src.ID, lifecycle.CreateRequest{Metadata: map[string]string{"sandman_session_id": "ses_fork"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.Clock.Now().Add(e2b.DefaultCreateTimeout); !fork.ExpiresAt.Equal(want) {
		t.Errorf("fork expires at %v, want %v (E2B's default would be 15 s)", fork.ExpiresAt, want)
	}
	if got := fork.Metadata["sandman_session_id"]; got != "ses_src" {
		t.Errorf("fork's sandman_session_id = %q, want the parent's ses_src (E2B cannot set a fork's metadata)", got)
	}
	if got := srv.UnknownFields(); len(got) != 0 {
		t.Errorf("fields E2B would ignore: %v", got)
	}
	if err := p.Pause(ctx, src.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Fork(ctx, src.ID, lifecycle.CreateRequest{Timeout: time.Minute}); !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("Fork of a paused sandbox: %v, want conflict", err)
	}
	if _, err := p.Fork(ctx, "gone", lifecycle.CreateRequest{Timeout: time.Minute}); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Fork of an unknown sandbox: %v, want gone", err)
	}
}

// Another process (another function) has no envd token of a sandbox it did
// not create: Files reads it from the control API.
func TestFilesFromAnotherProcessReadTheEnvdToken(t *testing.T) {
	srv := e2btest.NewServer(t)
	creator, _ := MustProvider(t, srv)
	sb := mustRunning(t, srv, creator)
	other, _ := MustProvider(t, srv)
	if err := other.WriteFile(ctx, sb.ID, "/home/user/app/x.txt", []byte("x")); err != nil {
		t.Fatalf("WriteFile from a second provider: %v", err)
	}
	if got, err := creator.ReadFile(ctx, sb.ID, "/home/user/app/x.txt"); err != nil || string(got) != "x" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
}

func TestFilesOfAGoneOrPausedSandbox(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv, noRetries)
	sb := mustRunning(t, srv, p)
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadFile(ctx, sb.ID, "/home/user/app/x.txt"); !isKind(err, lifecycle.ErrProviderTransient) {
		t.Errorf("ReadFile of a paused sandbox: %v, want transient", err)
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteFile(ctx, sb.ID, "/home/user/app/x.txt", nil); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Errorf("WriteFile of a killed sandbox: %v, want gone (E2B's proxy answers 502; the control API 404)", err)
	}
}
