package providertest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The checkpoint rows (docs/CHECKPOINTS.md "Providers"): run for a Provider
// that implements lifecycle.Files and lifecycle.Snapshotter (the fork row
// also lifecycle.Forker; the archive rows are archives.go's). They hold every adapter to the contract the
// checkpoint service relies on: a snapshot keeps the files written before
// it and not those written after; a sandbox made from it or forked is
// independent of its source; delete and expiry end in ErrCheckpointGone,
// the definitive answer.

func checkpointRows() []Behaviour {
	return []Behaviour{
		{Name: "ReadMissingFileIsErrNoFile", Needs: "Files", Run: readMissingFile},
		{Name: "SnapshotKeepsTheFilesWrittenBeforeIt", Needs: "Snapshotter", Run: snapshotKeepsFilesBefore},
		{Name: "SnapshotIsFoundByItsSandbox", Needs: "Snapshotter", Run: snapshotIsListed},
		{Name: "DeletedSnapshotIsGone", Needs: "Snapshotter", Run: deletedSnapshotIsGone},
		{Name: "SnapshotExpiresAfterItsRetention", Needs: "SnapshotRetention", Run: snapshotExpires},
		{Name: "ForkIsIndependentOfItsSource", Needs: "Forker", Run: forkIsIndependent},
	}
}

// workDir is where the rows write; every template's home has it.
const workDir = "/home/user/app"

func files(e Env) lifecycle.Files           { return e.Provider.(lifecycle.Files) }
func snapshots(e Env) lifecycle.Snapshotter { return e.Provider.(lifecycle.Snapshotter) }
func checkpointName(t *testing.T) string    { return fmt.Sprintf("chk_conf%d", time.Now().UnixNano()) }
func fileAt(name string) string             { return workDir + "/" + name }
func isGone(err error) bool                 { return errors.Is(err, lifecycle.ErrCheckpointGone) }
func hasSnapshotCaps(e Env) (lifecycle.SnapshotCaps, bool) {
	s, ok := e.Provider.(lifecycle.Snapshotter)
	if !ok {
		return lifecycle.SnapshotCaps{}, false
	}
	_, files := e.Provider.(lifecycle.Files)
	return s.SnapshotCaps(), files
}

func mustWrite(t *testing.T, e Env, id, name, content string) {
	t.Helper()
	if err := files(e).WriteFile(ctx(t), id, fileAt(name), []byte(content)); err != nil {
		t.Fatalf("WriteFile %s in %s: %v", name, id, err)
	}
}

// wantFile fails unless the file name in sandbox id holds content, or, with
// content "", does not exist.
func wantFile(t *testing.T, e Env, id, name, content string) {
	t.Helper()
	got, err := files(e).ReadFile(ctx(t), id, fileAt(name))
	switch {
	case content == "" && !errors.Is(err, lifecycle.ErrNoFile):
		t.Errorf("ReadFile %s in %s = %q, %v; want ErrNoFile", name, id, got, err)
	case content != "" && (err != nil || string(got) != content):
		t.Errorf("ReadFile %s in %s = %q, %v; want %q", name, id, got, err, content)
	}
}

// mustSnapshot takes a snapshot of id and waits (advancing the fake's clock
// when it can) until it is ready.
func mustSnapshot(t *testing.T, e Env, id, name string) lifecycle.Snapshot {
	t.Helper()
	snap, err := snapshots(e).Snapshot(ctx(t), id, lifecycle.SnapshotRequest{Name: name})
	if err != nil {
		t.Fatalf("Snapshot %s: %v", id, err)
	}
	if snap.Ref == "" {
		t.Fatal("Snapshot returned no ref")
	}
	for i := 0; snap.State == lifecycle.SnapshotSaving && i < 600; i++ {
		if e.Advance != nil {
			e.Advance(time.Second)
		}
		if snap, err = snapshots(e).GetSnapshot(ctx(t), snap.Ref); err != nil {
			t.Fatalf("GetSnapshot %s: %v", snap.Ref, err)
		}
	}
	if snap.State != lifecycle.SnapshotReady {
		t.Fatalf("snapshot %s is %q (%s), want ready", snap.Ref, snap.State, snap.Reason)
	}
	if snap.Keeps != snapshots(e).SnapshotCaps().Keeps {
		t.Errorf("snapshot keeps %q, the provider declares %q", snap.Keeps, snapshots(e).SnapshotCaps().Keeps)
	}
	return snap
}

// running makes sure id runs after a snapshot that may have stopped it
// (SnapshotCaps.StopsSource).
func running(t *testing.T, e Env, id string) {
	t.Helper()
	if mustGet(t, e, id).State == lifecycle.SandboxRunning {
		if snapshots(e).SnapshotCaps().StopsSource {
			t.Error("the provider declares that a snapshot stops its source, yet it runs")
		}
		return
	}
	if !snapshots(e).SnapshotCaps().StopsSource {
		t.Error("the source stopped after a snapshot, yet the provider declares it keeps running")
	}
	if _, err := e.Provider.Resume(ctx(t), id, 10*time.Minute); err != nil {
		t.Fatalf("Resume after the snapshot: %v", err)
	}
}

func readMissingFile(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	wantFile(t, e, sb.ID, "never-written.txt", "")
	mustWrite(t, e, sb.ID, "nested/dir/hello.txt", "hello\x00 'quoted' \n")
	wantFile(t, e, sb.ID, "nested/dir/hello.txt", "hello\x00 'quoted' \n")
}

func snapshotKeepsFilesBefore(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, map[string]string{sessionKey: "sess_src"})
	mustWrite(t, e, src.ID, "before.txt", "v1")
	snap := mustSnapshot(t, e, src.ID, checkpointName(t))
	running(t, e, src.ID)
	mustWrite(t, e, src.ID, "after.txt", "v2")
	mustWrite(t, e, src.ID, "before.txt", "v1-changed")

	dst, err := snapshots(e).CreateFromSnapshot(ctx(t), snap.Ref, lifecycle.CreateRequest{
		Template: e.Template, Timeout: 10 * time.Minute, AutoPause: true,
		Metadata: map[string]string{sessionKey: "sess_dst"},
	})
	if err != nil {
		t.Fatalf("CreateFromSnapshot: %v", err)
	}
	if dst.ID == "" || dst.ID == src.ID {
		t.Fatalf("CreateFromSnapshot gave sandbox %q, want a new one", dst.ID)
	}
	wantFile(t, e, dst.ID, "before.txt", "v1")
	wantFile(t, e, dst.ID, "after.txt", "")
	if got := mustGet(t, e, dst.ID).Metadata[sessionKey]; got != "sess_dst" {
		t.Errorf("the new sandbox's %s = %q, want the request's sess_dst", sessionKey, got)
	}
	mustWrite(t, e, dst.ID, "only-in-dst.txt", "x")
	wantFile(t, e, src.ID, "only-in-dst.txt", "")
	wantFile(t, e, src.ID, "before.txt", "v1-changed")
}

func snapshotIsListed(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	other := mustCreate(t, e, 10*time.Minute, nil)
	name := checkpointName(t)
	snap := mustSnapshot(t, e, src.ID, name)
	running(t, e, src.ID)
	mustSnapshot(t, e, other.ID, name+"x")
	list, err := snapshots(e).ListSnapshots(ctx(t), src.ID)
	if err != nil {
		t.Fatalf("ListSnapshots: %v", err)
	}
	i := slices.IndexFunc(list, func(s lifecycle.Snapshot) bool { return s.Ref == snap.Ref })
	if i < 0 {
		t.Fatalf("ListSnapshots(%s) = %+v, missing %s", src.ID, list, snap.Ref)
	}
	if len(list) != 1 {
		t.Errorf("ListSnapshots(%s) holds %d snapshots, want only the one of this sandbox", src.ID, len(list))
	}
	if list[i].Name != "" && list[i].Name != name {
		t.Errorf("listed snapshot named %q, want %q", list[i].Name, name)
	}
	if list[i].SourceSandboxID != "" && list[i].SourceSandboxID != src.ID {
		t.Errorf("listed snapshot's source = %q, want %q", list[i].SourceSandboxID, src.ID)
	}
}

func deletedSnapshotIsGone(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	snap := mustSnapshot(t, e, src.ID, checkpointName(t))
	for i := range 2 {
		if err := snapshots(e).DeleteSnapshot(ctx(t), snap.Ref); err != nil {
			t.Fatalf("DeleteSnapshot #%d: %v", i+1, err)
		}
	}
	if _, err := snapshots(e).GetSnapshot(ctx(t), snap.Ref); !isGone(err) {
		t.Errorf("GetSnapshot after delete: %v, want ErrCheckpointGone", err)
	}
	_, err := snapshots(e).CreateFromSnapshot(ctx(t), snap.Ref, lifecycle.CreateRequest{Template: e.Template, Timeout: time.Minute})
	if !isGone(err) {
		t.Errorf("CreateFromSnapshot of a deleted snapshot: %v, want ErrCheckpointGone", err)
	}
}

func snapshotExpires(t *testing.T, e Env) {
	caps, _ := hasSnapshotCaps(e)
	src := mustCreate(t, e, 10*time.Minute, nil)
	snap := mustSnapshot(t, e, src.ID, checkpointName(t))
	if snap.ExpiresAt.IsZero() {
		t.Errorf("snapshot has no expiry, though the provider keeps one %s", caps.Retention)
	}
	e.Advance(caps.Retention + time.Hour)
	if _, err := snapshots(e).GetSnapshot(ctx(t), snap.Ref); !isGone(err) {
		t.Errorf("GetSnapshot past its retention: %v, want ErrCheckpointGone", err)
	}
	_, err := snapshots(e).CreateFromSnapshot(ctx(t), snap.Ref, lifecycle.CreateRequest{Template: e.Template, Timeout: time.Minute})
	if !isGone(err) {
		t.Errorf("CreateFromSnapshot of an expired snapshot: %v, want ErrCheckpointGone", err)
	}
}

func forkIsIndependent(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, map[string]string{sessionKey: "sess_src"})
	mustWrite(t, e, src.ID, "before.txt", "v1")
	fork, err := e.Provider.(lifecycle.Forker).Fork(ctx(t), src.ID, lifecycle.CreateRequest{
		Template: e.Template, Timeout: 10 * time.Minute, AutoPause: true,
		Metadata: map[string]string{sessionKey: "sess_fork"},
	})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if fork.ID == "" || fork.ID == src.ID {
		t.Fatalf("Fork gave sandbox %q, want a new one", fork.ID)
	}
	if got := mustGet(t, e, src.ID).State; got != lifecycle.SandboxRunning {
		t.Errorf("the source after a fork is %q, want running", got)
	}
	mustWrite(t, e, src.ID, "after.txt", "v2")
	mustWrite(t, e, fork.ID, "fork.txt", "f")
	wantFile(t, e, fork.ID, "before.txt", "v1")
	wantFile(t, e, fork.ID, "after.txt", "")
	wantFile(t, e, src.ID, "fork.txt", "")
}
