package e2btest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// What docs/providers/e2b.md "Checkpoints" says the fake must do for E2B's
// own SDK, status by status.

func snapshotOf(t *testing.T, srv *e2btest.Server, id, body string) map[string]any {
	t.Helper()
	var out map[string]any
	if st, b := call(t, srv, "POST", "/sandboxes/"+id+"/snapshots", body, &out); st != http.StatusCreated {
		t.Fatalf("snapshot %s: %d %s", id, st, b)
	}
	return out
}

func TestFakeSnapshotAnswers(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base"}`)["sandboxID"].(string)
	if got := snapshotOf(t, srv, id, `{"name":"My-Snap"}`); got["snapshotID"] != e2btest.TeamSlug+"/my-snap:default" ||
		fmt.Sprint(got["names"]) != "["+e2btest.TeamSlug+"/my-snap:default]" {
		t.Errorf("named snapshot = %v", got)
	}
	if got := snapshotOf(t, srv, id, `{}`); !strings.HasSuffix(got["snapshotID"].(string), ":default") ||
		fmt.Sprint(got["names"]) != "[]" {
		t.Errorf("unnamed snapshot = %v, want <templateID>:default and no names", got)
	}
	if sb, _ := srv.Sandbox(id); sb.State != lifecycle.SandboxRunning {
		t.Errorf("the source is %s after its snapshots, want running", sb.State)
	}
	srv.Put(e2btest.Sandbox{ID: "paused", State: lifecycle.SandboxPaused})
	srv.Put(e2btest.Sandbox{ID: "busy", State: lifecycle.SandboxRunning, EndAt: srv.Clock.Now().Add(time.Hour), Transition: e2btest.Pausing})
	srv.Put(e2btest.Sandbox{ID: "old", State: lifecycle.SandboxRunning, EndAt: srv.Clock.Now().Add(time.Hour), EnvdVersion: "0.4.0"})
	for _, c := range []struct {
		id, body string
		want     int
	}{
		{"paused", `{}`, 404}, {"unknown", `{}`, 404}, {"busy", `{}`, 409}, {"old", `{}`, 400},
		{id, `{"name":"other-team/x"}`, 400}, {id, `{"name":"bad name!"}`, 400},
	} {
		if st, b := call(t, srv, "POST", "/sandboxes/"+c.id+"/snapshots", c.body, nil); st != c.want {
			t.Errorf("snapshot %s %s: %d %s, want %d", c.id, c.body, st, b, c.want)
		}
	}
}

func TestFakeListSnapshotsPagesByHeader(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base"}`)["sandboxID"].(string)
	other := create(t, srv, `{"templateID":"base"}`)["sandboxID"].(string)
	for i := range 3 {
		snapshotOf(t, srv, id, fmt.Sprintf(`{"name":"s%d"}`, i))
	}
	snapshotOf(t, srv, other, `{"name":"o"}`)
	req, _ := http.NewRequest("GET", srv.API.URL+"/snapshots?sandboxID="+id+"&limit=2", nil)
	req.Header.Set("X-API-Key", e2btest.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page []map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&page)
	next := resp.Header.Get("X-Next-Token")
	if len(page) != 2 || page[0]["snapshotID"] != e2btest.TeamSlug+"/s2:default" || next == "" {
		t.Fatalf("first page = %v, next %q", page, next)
	}
	var rest []map[string]any
	if st, b := call(t, srv, "GET", "/snapshots?sandboxID="+id+"&limit=2&nextToken="+next, "", &rest); st != 200 || len(rest) != 1 {
		t.Errorf("second page: %d %s", st, b)
	}
	var named []map[string]any
	call(t, srv, "GET", "/snapshots?name="+e2btest.TeamSlug+"/o", "", &named)
	if len(named) != 1 || named[0]["snapshotID"] != e2btest.TeamSlug+"/o:default" {
		t.Errorf("list by name = %v", named)
	}
	if st, b := call(t, srv, "GET", "/snapshots?name=nope", "", nil); st != 200 || strings.TrimSpace(b) != "[]" {
		t.Errorf("list by an unknown name: %d %s, want 200 []", st, b)
	}
}

func TestFakeDeleteSnapshotAndCreateFromIt(t *testing.T) {
	srv := e2btest.NewServer(t)
	files := &sandboxfs.Mem{}
	w, _ := sandboxfs.WriteCommand("/home/user/a.txt", []byte("a"))
	files.Run(w)
	id := "src"
	srv.Put(e2btest.Sandbox{ID: id, State: lifecycle.SandboxRunning, EndAt: srv.Clock.Now().Add(time.Hour), Files: files})
	path := "/templates/" + e2btest.TeamSlug + "%2Fsnap%3Adefault"
	snapshotOf(t, srv, id, `{"name":"snap"}`)
	w2, _ := sandboxfs.WriteCommand("/home/user/a.txt", []byte("after"))
	files.Run(w2)
	made := create(t, srv, `{"templateID":"`+e2btest.TeamSlug+`/snap:default","metadata":{"k":"mine"}}`)
	got, _ := srv.Sandbox(made["sandboxID"].(string))
	if got.FromSnapshot != e2btest.TeamSlug+"/snap:default" || got.Metadata["k"] != "mine" || got.Files == nil {
		t.Fatalf("made from the snapshot: %+v", got)
	}
	r, _ := sandboxfs.ReadCommand("/home/user/a.txt")
	if out, code, _ := got.Files.Run(r); code != 0 || string(out) != "YQ==" {
		t.Errorf("its a.txt reads %q (exit %d), want the snapshot's \"a\"", out, code)
	}
	if st, b := call(t, srv, "DELETE", path, "", nil); st != 400 || !strings.Contains(b, "running sandboxes using it") {
		t.Errorf("delete while a sandbox uses it: %d %s", st, b)
	}
	call(t, srv, "DELETE", "/sandboxes/"+got.ID, "", nil)
	if st, b := call(t, srv, "DELETE", path, "", nil); st != 204 {
		t.Errorf("delete: %d %s, want 204 (the id arrives percent-encoded)", st, b)
	}
	if st, _ := call(t, srv, "DELETE", path, "", nil); st != 404 {
		t.Errorf("second delete: %d, want 404", st)
	}
	st, b := call(t, srv, "POST", "/v2/sandboxes", `{"templateID":"`+e2btest.TeamSlug+`/snap:default"}`, nil)
	if st != 404 || !strings.Contains(b, "template '"+e2btest.TeamSlug+"/snap:default' not found") {
		t.Errorf("create from a deleted snapshot: %d %s", st, b)
	}
}

func TestFakeForkEntries(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base","metadata":{"sandman_session_id":"ses_1"},"autoPause":true}`)["sandboxID"].(string)
	var out []map[string]map[string]any
	if st, b := call(t, srv, "POST", "/sandboxes/"+id+"/fork", `{"count":2}`, &out); st != 201 || len(out) != 2 {
		t.Fatalf("fork: %d %s", st, b)
	}
	fork, _ := srv.Sandbox(out[0]["sandbox"]["sandboxID"].(string))
	if fork.ID == id || fork.Metadata["sandman_session_id"] != "ses_1" || !fork.AutoPause ||
		!fork.EndAt.Equal(srv.Clock.Now().Add(15*time.Second)) || out[0]["sandbox"]["envdAccessToken"] == "" {
		t.Errorf("fork = %+v, want the parent's metadata and autoPause, 15 s by default", fork)
	}
	for body, want := range map[string]int{`{"count":0}`: 400, `{"count":101}`: 400} {
		if st, _ := call(t, srv, "POST", "/sandboxes/"+id+"/fork", body, nil); st != want {
			t.Errorf("fork %s: %d, want %d", body, st, want)
		}
	}
	call(t, srv, "POST", "/sandboxes/"+id+"/pause", "", nil)
	if st, b := call(t, srv, "POST", "/sandboxes/"+id+"/fork", `{}`, nil); st != 409 || !strings.Contains(b, "resume it first") {
		t.Errorf("fork of a paused sandbox: %d %s", st, b)
	}
}

// A file command runs at once on the sandbox's files: its output comes in a
// data event, base64 as protobuf's JSON has it, and its end leaves out a 0
// exit code.
func TestAFileCommandStreamsItsOutputAndExitCode(t *testing.T) {
	_, base, _, id, token := oneAddress(t)
	run := func(line string) (stdout string, end string) {
		body, _ := json.Marshal(map[string]any{"process": map[string]any{"cmd": "/bin/bash", "args": []string{"-l", "-c", line}}})
		resp := envd(t, base, id, token, "/process.Process/Start", "application/connect+json", startFrame(t, string(body)), nil)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			flags, msg := readFrame(t, r)
			var ev struct {
				Event struct {
					Data *struct{ Stdout []byte }
					End  json.RawMessage
				}
			}
			_ = json.Unmarshal([]byte(msg), &ev)
			switch {
			case flags == 0x02:
				return stdout, end
			case ev.Event.Data != nil:
				stdout += string(ev.Event.Data.Stdout)
			case ev.Event.End != nil:
				end = string(ev.Event.End)
			}
		}
	}
	w, _ := sandboxfs.WriteCommand("/home/user/app/x", []byte("hi"))
	if _, end := run(w); strings.Contains(end, "exitCode") {
		t.Errorf("a write's end = %s, want no exitCode (0 is left out)", end)
	}
	r, _ := sandboxfs.ReadCommand("/home/user/app/x")
	if out, _ := run(r); out != "aGk=" {
		t.Errorf("a read's stdout = %q, want the content in base64", out)
	}
	missing, _ := sandboxfs.ReadCommand("/home/user/app/missing")
	if _, end := run(missing); !strings.Contains(end, fmt.Sprintf(`"exitCode":%d`, sandboxfs.NoFileExit)) {
		t.Errorf("a read of a missing file ends %s", end)
	}
}
