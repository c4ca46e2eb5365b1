//go:build linux

package checkpointjobs_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/dirstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// TestMain lets this test binary be a local sandbox child.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox" {
		if err := local.RunSandbox(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLocalCheckpointRestoreFork is the make run flow on the local stack's
// parts (the local provider's real sandboxes, archives in a folder, the
// whole files folder as the workspace): write a file, checkpoint, write a
// second, restore → the first is there and the second not, same session,
// served by the new sandbox's preview; fork → a second session with the
// first file, independent of the first.
func TestLocalCheckpointRestoreFork(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	p, err := local.New(local.Config{Dir: filepath.Join(dir, "sandboxes"), Command: []string{exe, "sandbox"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, sb := range mustList(t, p) {
			_ = p.Kill(ctx, sb.ID)
		}
		_ = p.Close(ctx)
	})
	store, err := dirstore.New(filepath.Join(dir, "archives"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := &reliability.Jobs{}
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: p, Log: quiet, CheckpointJobs: jobs,
		Archives: archive.NewArchives(store), ArchiveWorkspace: lifecycle.Workspace{Dir: "/", Excludes: archive.DefaultExcludes()}})
	ctx := t.Context()
	drain := func() {
		t.Helper()
		if errs := jobs.Drain(ctx, svc.RunCheckpointJob, 5); len(errs) > 0 {
			t.Fatalf("jobs: %v", errs)
		}
	}
	const acct = "dev"
	sess, _, err := svc.Create(ctx, acct, lifecycle.CreateInput{Template: local.TemplateWeb})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, p, sess.SandboxID, "/first.txt", "one")
	c, _, err := svc.CreateCheckpoint(ctx, acct, sess.ID, lifecycle.CheckpointInput{Label: "good"})
	if err != nil {
		t.Fatal(err)
	}
	drain()
	if c, err = svc.GetCheckpoint(ctx, acct, sess.ID, c.ID); err != nil || c.State != lifecycle.CheckpointReady || c.Kind != lifecycle.KindArchive {
		t.Fatalf("checkpoint = %+v (%v), want a ready archive", c, err)
	}
	if _, err := store.Head(ctx, c.ArchiveKey); err != nil {
		t.Errorf("the archive is not in the folder store: %v", err)
	}
	mustWrite(t, p, sess.SandboxID, "/second.txt", "two")

	if _, err := svc.Restore(ctx, acct, sess.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	drain()
	got, err := svc.Get(ctx, acct, sess.ID)
	if err != nil || got.State != lifecycle.StateRunning || got.SandboxID == sess.SandboxID {
		t.Fatalf("after the restore = %+v (%v), want running on a new sandbox", got, err)
	}
	if body := mustGet(t, got.PreviewURL+"first.txt"); body != "one" {
		t.Errorf("the restored preview serves first.txt = %q, want one", body)
	}
	wantNoFile(t, p, got.SandboxID, "/second.txt")
	if _, err := p.Get(ctx, sess.SandboxID); err == nil {
		t.Error("the old sandbox still exists after the restore")
	}

	fork, _, err := svc.Fork(ctx, acct, sess.ID, lifecycle.ForkInput{CheckpointID: c.ID})
	if err != nil {
		t.Fatal(err)
	}
	drain()
	forked, err := svc.Get(ctx, acct, fork.ID)
	if err != nil || forked.State != lifecycle.StateRunning || forked.ForkedFrom != sess.ID {
		t.Fatalf("fork = %+v (%v), want running, forked from %s", forked, err, sess.ID)
	}
	if body := mustGet(t, forked.PreviewURL+"first.txt"); body != "one" {
		t.Errorf("the fork serves first.txt = %q, want one", body)
	}
	mustWrite(t, p, forked.SandboxID, "/fork.txt", "f")
	wantNoFile(t, p, got.SandboxID, "/fork.txt")
}

func mustWrite(t *testing.T, p *local.Provider, id, path, content string) {
	t.Helper()
	if err := p.WriteFile(t.Context(), id, path, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

func wantNoFile(t *testing.T, p *local.Provider, id, path string) {
	t.Helper()
	if got, err := p.ReadFile(t.Context(), id, path); err == nil {
		t.Errorf("%s holds %q in %s, want no such file", path, got, id)
	}
}

func mustGet(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func mustList(t *testing.T, p *local.Provider) []lifecycle.Sandbox {
	page, err := p.List(context.Background(), lifecycle.ListRequest{})
	if err != nil {
		t.Errorf("list: %v", err)
	}
	return page.Sandboxes
}
