package verceltest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

const prj = "?projectId=" + verceltest.DefaultProjectID

// box creates the sandbox name (persistent, port 3000) through the API,
// with extra JSON fields, and returns its current session.
func box(t *testing.T, f *verceltest.Test, name, extra string) string {
	t.Helper()
	status, _, body := call(t, f, "POST", "/v3/sandboxes",
		fmt.Sprintf(`{"projectId":%q,"name":%q,"ports":[3000]%s}`, verceltest.DefaultProjectID, name, extra), nil)
	if status != 200 {
		t.Fatalf("create %s answered %d %v", name, status, body)
	}
	return body["sandbox"].(map[string]any)["currentSessionId"].(string)
}

// snapshot snapshots the session and returns the snapshot object.
func snapshot(t *testing.T, f *verceltest.Test, session, body string) map[string]any {
	t.Helper()
	status, _, ans := call(t, f, "POST", "/v2/sandboxes/sessions/"+session+"/snapshot", body, nil)
	if status != 200 {
		t.Fatalf("snapshot of %s answered %d %v", session, status, ans)
	}
	return ans["snapshot"].(map[string]any)
}

// sandbox reads a sandbox (resume as given) and returns the status and
// answer.
func sandbox(t *testing.T, f *verceltest.Test, name string, resume bool) (int, map[string]any) {
	t.Helper()
	status, _, body := call(t, f, "GET", fmt.Sprintf("/v2/sandboxes/%s%s&resume=%v", name, prj, resume), "", nil)
	return status, body
}

func current(body map[string]any) string {
	id, _ := body["sandbox"].(map[string]any)["currentSnapshotId"].(string)
	return id
}

func wantFile(t *testing.T, p *vercel.Provider, id, path, want string) {
	t.Helper()
	got, err := p.ReadFile(context.Background(), id, path)
	switch {
	case want == "" && !errors.Is(err, lifecycle.ErrNoFile):
		t.Errorf("%s in %s = %q, %v; want none", path, id, got, err)
	case want != "" && (err != nil || string(got) != want):
		t.Errorf("%s in %s = %q, %v; want %q", path, id, got, err, want)
	}
}

func write(t *testing.T, p *vercel.Provider, id, path, data string) {
	t.Helper()
	if err := p.WriteFile(context.Background(), id, path, []byte(data)); err != nil {
		t.Fatalf("WriteFile %s in %s: %v", path, id, err)
	}
}

// A snapshot stops its session and becomes the current snapshot (its
// parent: the one before); session calls then answer 410 sandbox_stopped;
// a resume boots from it; PATCH moves the pointer back; create from a
// snapshot and fork start from its files, not the live ones.
func TestSnapshotsStopRestoreAndFork(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	p := f.MustProvider(t, nil)
	s1 := box(t, f, "src", "")
	write(t, p, "src", "/app/v", "1")
	first := snapshot(t, f, s1, "")
	if first["expiresAt"] == nil || first["parentId"] != nil || first["sourceSessionId"] != s1 {
		t.Errorf("first snapshot %v; want an expiry (the sandbox's 30 days), no parent, from %s", first, s1)
	}
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+s1+"/cmd", `{"command":"true"}`, nil); status != 410 || errCode(body) != "sandbox_stopped" {
		t.Errorf("a command after the snapshot answered %d %v, want 410 sandbox_stopped", status, body)
	}
	_, body := sandbox(t, f, "src", true)
	s2 := body["session"].(map[string]any)
	if s2["sourceSnapshotId"] != first["id"] || body["resumed"] != true {
		t.Errorf("resume %v; want a new session from %s", body, first["id"])
	}
	wantFile(t, p, "src", "/app/v", "1")
	write(t, p, "src", "/app/v", "2")
	second := snapshot(t, f, s2["id"].(string), `{"expiration":0}`)
	if second["parentId"] != first["id"] || second["expiresAt"] != nil {
		t.Errorf("second snapshot %v; want parent %s and no expiry (0: never)", second, first["id"])
	}
	// Restore in place: the pointer back to the first, then resume.
	if status, _, body := call(t, f, "PATCH", "/v2/sandboxes/src"+prj, `{"currentSnapshotId":"snap_nope"}`, nil); status != 404 {
		t.Errorf("PATCH to an unknown snapshot answered %d %v, want 404", status, body)
	}
	if status, _, body := call(t, f, "PATCH", "/v2/sandboxes/src"+prj, fmt.Sprintf(`{"currentSnapshotId":%q}`, first["id"]), nil); status != 200 || current(body) != first["id"] {
		t.Errorf("PATCH currentSnapshotId answered %d %v", status, body)
	}
	sandbox(t, f, "src", true)
	wantFile(t, p, "src", "/app/v", "1")
	write(t, p, "src", "/app/live", "unsaved")

	// Fork: from the current snapshot (the first), not the live files.
	status, _, fork := call(t, f, "POST", "/v2/sandboxes/src/fork"+prj, `{"name":"forked","tags":{"t":"1"}}`, nil)
	if status != 200 || fork["sandbox"].(map[string]any)["name"] != "forked" {
		t.Fatalf("fork answered %d %v", status, fork)
	}
	wantFile(t, p, "forked", "/app/v", "1")
	wantFile(t, p, "forked", "/app/live", "")
	if status, _, _ := call(t, f, "POST", "/v2/sandboxes/nope/fork"+prj, `{}`, nil); status != 404 {
		t.Errorf("fork of an unknown sandbox answered %d, want 404", status)
	}
	// Create from the second snapshot.
	status, _, made := call(t, f, "POST", "/v3/sandboxes", fmt.Sprintf(
		`{"projectId":%q,"name":"made","ports":[3000],"source":{"type":"snapshot","snapshotId":%q}}`, verceltest.DefaultProjectID, second["id"]), nil)
	if status != 200 || made["session"].(map[string]any)["sourceSnapshotId"] != second["id"] {
		t.Fatalf("create from a snapshot answered %d %v", status, made)
	}
	wantFile(t, p, "made", "/app/v", "2")
}

// Expiry runs on the clock: a resume of an expired current snapshot
// answers 410 snapshot_not_found while a plain get answers 200; a create
// from it answers 410 too; get shows it deleted.
func TestSnapshotExpiry(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	s := box(t, f, "old", `,"snapshotExpiration":86400000`)
	snap := snapshot(t, f, s, "")
	f.Clock.Advance(24*time.Hour + time.Second)
	if status, body := sandbox(t, f, "old", false); status != 200 || current(body) != snap["id"] {
		t.Errorf("plain get answered %d %v, want 200 naming the expired snapshot", status, body)
	}
	status, body := sandbox(t, f, "old", true)
	if msg, _ := body["error"].(map[string]any)["message"].(string); status != 410 || errCode(body) != "snapshot_not_found" || msg != "Cannot resume sandbox: no snapshot available." {
		t.Errorf("resume answered %d %v, want 410 snapshot_not_found", status, body)
	}
	status, _, body = call(t, f, "POST", "/v3/sandboxes", fmt.Sprintf(
		`{"projectId":%q,"source":{"type":"snapshot","snapshotId":%q}}`, verceltest.DefaultProjectID, snap["id"]), nil)
	if status != 410 || errCode(body) != "snapshot_not_found" {
		t.Errorf("create from it answered %d %v", status, body)
	}
	if status, _, body := call(t, f, "GET", "/v2/sandboxes/snapshots/"+snap["id"].(string), "", nil); status != 200 || body["snapshot"].(map[string]any)["status"] != "deleted" {
		t.Errorf("get answered %d %v, want it deleted", status, body)
	}
}

// The list pages by cursor (next present, null on the last page), filters
// by sandbox name; the tree walks parents with a string count;
// keepLastSnapshots evicts; delete answers the snapshot deleted, 404 for
// an unknown id. No answer holds a null besides pagination.next.
func TestSnapshotListTreeEvictionDelete(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	// snapshots takes n snapshots of name, resuming in between.
	snapshots := func(name string, n int, extra string) (ids []string) {
		s := box(t, f, name, extra)
		for i := range n {
			if i > 0 {
				_, body := sandbox(t, f, name, true)
				s = body["session"].(map[string]any)["id"].(string)
			}
			ids = append(ids, snapshot(t, f, s, "")["id"].(string))
		}
		return ids
	}
	ids := snapshots("a", 3, "")
	evicted := snapshots("b", 2, `,"keepLastSnapshots":{"count":1}`)
	var listed []string
	for cursor := ""; ; {
		status, _, body := call(t, f, "GET", "/v2/sandboxes/snapshots?project="+verceltest.DefaultProjectID+"&name=a&limit=2"+cursor, "", nil)
		pg, _ := body["pagination"].(map[string]any)
		next, present := pg["next"]
		if status != 200 || !present || hasNullAnywhere(body["snapshots"]) {
			t.Fatalf("list answered %d %v; want pagination.next present and no other null", status, body)
		}
		for _, s := range body["snapshots"].([]any) {
			listed = append(listed, s.(map[string]any)["id"].(string))
		}
		if next == nil {
			break
		}
		cursor = "&cursor=" + next.(string)
	}
	if fmt.Sprint(listed) != fmt.Sprint([]string{ids[2], ids[1], ids[0]}) {
		t.Errorf("listed %v, want %v newest first", listed, ids)
	}
	status, _, tree := call(t, f, "GET", "/v2/sandboxes/snapshots/tree?project="+verceltest.DefaultProjectID+"&snapshotId="+ids[2], "", nil)
	nodes, _ := tree["snapshots"].([]any)
	if status != 200 || len(nodes) != 3 || nodes[2].(map[string]any)["count"] != "1" || hasNullAnywhere(nodes) {
		t.Errorf("tree answered %d %v, want 3 nodes walking the parents", status, tree)
	}
	for i, want := range []string{"deleted", "created"} {
		if _, _, body := call(t, f, "GET", "/v2/sandboxes/snapshots/"+evicted[i], "", nil); body["snapshot"].(map[string]any)["status"] != want {
			t.Errorf("snapshot %d of a sandbox keeping 1: %v, want %s", i, body, want)
		}
	}
	if status, _, body := call(t, f, "DELETE", "/v2/sandboxes/snapshots/"+ids[0], "", nil); status != 200 || body["snapshot"].(map[string]any)["status"] != "deleted" {
		t.Errorf("delete answered %d %v", status, body)
	}
	if status, _, _ := call(t, f, "DELETE", "/v2/sandboxes/snapshots/snap_nope", "", nil); status != 404 {
		t.Errorf("delete of an unknown snapshot answered %d, want 404", status)
	}
}

// SetSnapshotFault: a failed snapshot stops the session and leaves the
// current snapshot alone; a slow one keeps the session snapshotting (422
// on session calls) until the clock passes it.
func TestSnapshotFaults(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	s := box(t, f, "bad", "")
	f.SetSnapshotFault(verceltest.DefaultProjectID, "bad", verceltest.SnapshotFault{Fail: true})
	if snap := snapshot(t, f, s, ""); snap["status"] != "failed" {
		t.Errorf("snapshot %v, want failed", snap)
	}
	if _, body := sandbox(t, f, "bad", false); current(body) != "" || body["sandbox"].(map[string]any)["status"] != "stopped" {
		t.Errorf("after a failed snapshot: %v; want stopped with no current snapshot", body)
	}
	s = box(t, f, "slow", "")
	f.SetSnapshotFault(verceltest.DefaultProjectID, "slow", verceltest.SnapshotFault{Slow: time.Minute})
	done := make(chan map[string]any)
	go func() {
		_, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+s+"/snapshot", "", nil)
		done <- body
	}()
	for { // until the call has reached the fake (no time passes on its clock)
		if _, body := sandbox(t, f, "slow", false); body["sandbox"].(map[string]any)["status"] == "snapshotting" {
			break
		}
	}
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+s+"/cmd", `{"command":"true"}`, nil); status != 422 || errCode(body) != "sandbox_snapshotting" {
		t.Errorf("a command while it snapshots answered %d %v", status, body)
	}
	f.Clock.Advance(time.Minute)
	if body := <-done; body["snapshot"].(map[string]any)["status"] != "created" || body["session"].(map[string]any)["status"] != "stopped" {
		t.Errorf("slow snapshot answered %v", body)
	}
}

func hasNullAnywhere(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if hasNullAnywhere(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNullAnywhere(e) {
				return true
			}
		}
	}
	return false
}
