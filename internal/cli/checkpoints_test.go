package cli_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
	oapi "github.com/sandmanhq/sandman/internal/openapi/api"
)

// runCheckpoints runs `sandman checkpoints args...` against url with key.
func runCheckpoints(tb testing.TB, url, key string, args ...string) (int, string, string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		return map[string]string{"SANDMAN_URL": url, "SANDMAN_API_KEY": key}[k]
	}}
	code := cli.CheckpointsMain(tb.Context(), args, env)
	return code, out.String(), errOut.String()
}

// TestCheckpointCommands: create, list, get and delete a checkpoint, and
// restore and fork a session from it, through the CLI against the real
// API.
func TestCheckpointCommands(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	key := apigw.DevAPIKey
	drain := func() {
		t.Helper()
		if errs := a.jobs.Drain(t.Context(), a.svc.RunCheckpointJob, 5); len(errs) > 0 {
			t.Fatalf("jobs: %v", errs)
		}
	}
	s := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base")
	code, out, errOut := runCheckpoints(t, a.url, key, "create", s.ID, "--label", "good", "--metadata", "k=v", "-o", "json")
	if code != 0 {
		t.Fatalf("create: exit %d, %s", code, errOut)
	}
	var c oapi.Checkpoint
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.State != "saving" || c.Label != "good" || c.Metadata["k"] != "v" {
		t.Fatalf("create answered %q (%v)", out, err)
	}
	drain()
	code, out, _ = runCheckpoints(t, a.url, key, "list", s.ID)
	if code != 0 || !strings.Contains(out, c.ID) || !strings.Contains(out, "ready") {
		t.Errorf("list: exit %d:\n%s", code, out)
	}
	code, out, _ = runCheckpoints(t, a.url, key, "get", s.ID, c.ID)
	if code != 0 || !strings.Contains(out, "snapshot") {
		t.Errorf("get: exit %d:\n%s", code, out)
	}

	restored := mustJSON[cli.Session](t, a.url, key, "restore", s.ID, "--checkpoint", c.ID)
	if restored.State != "restoring" {
		t.Errorf("restore answered %s, want restoring", restored.State)
	}
	drain()
	fork := mustJSON[cli.Session](t, a.url, key, "fork", s.ID, "--checkpoint", c.ID, "--idempotency-key", "f-1")
	if fork.ForkedFrom == nil || fork.ForkedFrom.CheckpointID != c.ID {
		t.Errorf("fork answered %+v", fork)
	}
	drain()

	code, out, _ = runCheckpoints(t, a.url, key, "delete", s.ID, c.ID)
	if code != 0 || !strings.Contains(out, "deleted "+c.ID) {
		t.Errorf("delete: exit %d: %s", code, out)
	}
	if code, _, _ = runCheckpoints(t, a.url, key, "get", s.ID, c.ID); code != cli.ExitNotFound {
		t.Errorf("get after delete: exit %d, want %d", code, cli.ExitNotFound)
	}
	if code, _, _ := run(t, a.url, key, "restore", s.ID); code != cli.ExitUsage {
		t.Errorf("restore without --checkpoint: exit %d, want %d", code, cli.ExitUsage)
	}
	if killed := mustJSON[cli.Session](t, a.url, key, "delete", s.ID, "--purge"); killed.State != "killed" {
		t.Errorf("delete --purge answered %s", killed.State)
	}
	if code, _, _ := runCheckpoints(t, a.url, key, "get", s.ID); code != cli.ExitUsage {
		t.Errorf("get without a checkpoint id: exit %d, want %d", code, cli.ExitUsage)
	}
}
