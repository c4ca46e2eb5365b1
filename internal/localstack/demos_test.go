package localstack_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// The "Done when" demos of docs/RELIABILITY.md "Try it on make run", on the
// real local stack (DynamoDB Local, the local process provider, the
// in-process workers), through the HTTP API and the session's stable link.

// heldRestores holds the restore jobs the stack queues (a recovery's, an
// unarchive's) while holding, and queues them on next at release: the
// session stays restoring meanwhile, so a test can look at what its link
// says then. Every other job goes straight to next.
type heldRestores struct {
	next    lifecycle.CheckpointJobs
	mu      sync.Mutex
	holding bool
	held    []lifecycle.CheckpointJob
}

// compose is the stack's Config.Compose: it puts h in front of the
// stack's checkpoint jobs and, when clock is not nil, makes clock the
// stack's.
func (h *heldRestores) compose(clock lifecycle.Clock) func(*app.Deps) {
	return func(d *app.Deps) {
		h.next, h.holding, d.CheckpointJobs = d.CheckpointJobs, true, h
		if clock != nil {
			d.Clock = clock
		}
	}
}

func (h *heldRestores) EnqueueCheckpoint(ctx context.Context, job lifecycle.CheckpointJob) error {
	h.mu.Lock()
	if h.holding && job.Op == lifecycle.CheckpointOpRestore {
		h.held = append(h.held, job)
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	return h.next.EnqueueCheckpoint(ctx, job)
}

// release stops holding and queues the jobs held.
func (h *heldRestores) release(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	held := h.held
	h.holding, h.held = false, nil
	h.mu.Unlock()
	if len(held) != 1 {
		t.Errorf("%d restore jobs held, want 1", len(held))
	}
	for _, job := range held {
		if err := h.next.EnqueueCheckpoint(t.Context(), job); err != nil {
			t.Fatalf("queue the held restore: %v", err)
		}
	}
}

// demoSession is a session of the demos and where its work lives.
type demoSession struct {
	c         stackClient
	sandboxes string // the local provider's folder
	id        string
	sandboxID string
}

// newDemoSession creates a web session with body's options on top and
// writes notes.txt into its sandbox's files (the folder its preview
// serves).
func newDemoSession(c stackClient, sandboxes string, body map[string]any) demoSession {
	c.t.Helper()
	body["template"] = "web"
	var s api.Session
	c.do(http.MethodPost, "/v1/sessions", body, &s)
	if s.State != "running" || s.SandboxID == nil {
		c.t.Fatalf("create = %s with sandbox %v, want running with one", s.State, s.SandboxID)
	}
	d := demoSession{c: c, sandboxes: sandboxes, id: s.ID, sandboxID: *s.SandboxID}
	if err := os.WriteFile(filepath.Join(d.folder(), "files", "notes.txt"), []byte("work from before\n"), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return d
}

// folder is the local sandbox's folder.
func (d demoSession) folder() string { return filepath.Join(d.sandboxes, d.sandboxID) }

func (d demoSession) get() api.Session {
	d.c.t.Helper()
	var s api.Session
	d.c.do(http.MethodGet, "/v1/sessions/"+d.id, nil, &s)
	return s
}

// await re-reads the session until ok says so, for up to a minute of
// wall time (the stack's workers and sweep run on their own).
func (d demoSession) await(what string, ok func(api.Session) bool) api.Session {
	d.c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := d.get()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			d.c.t.Fatalf("session %s not %s after a minute: state %s, reason %s", d.id, what, s.State, s.Reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d demoSession) checkpoints() []api.Checkpoint {
	d.c.t.Helper()
	var l api.CheckpointList
	d.c.do(http.MethodGet, "/v1/sessions/"+d.id+"/checkpoints", nil, &l)
	return l.Checkpoints
}

// checkpoint takes a checkpoint and returns it once ready.
func (d demoSession) checkpoint() api.Checkpoint {
	d.c.t.Helper()
	var ck api.Checkpoint
	d.c.do(http.MethodPost, "/v1/sessions/"+d.id+"/checkpoints", map[string]any{"label": "demo"}, &ck)
	deadline := time.Now().Add(time.Minute)
	for ck.State != "ready" {
		if ck.State == "failed" || time.Now().After(deadline) {
			d.c.t.Fatalf("checkpoint %s: %s, want ready", ck.ID, ck.State)
		}
		time.Sleep(20 * time.Millisecond)
		d.c.do(http.MethodGet, "/v1/sessions/"+d.id+"/checkpoints/"+ck.ID, nil, &ck)
	}
	return ck
}

func (d demoSession) pause() {
	d.c.t.Helper()
	d.c.do(http.MethodPost, "/v1/sessions/"+d.id+"/pause", nil, nil)
	d.await("paused", func(s api.Session) bool { return s.State == "paused" })
}

// open opens the session's stable link as a browser does (html) or as
// any other client, following no redirect: the status, the Location and
// the body.
func (d demoSession) open(html bool) (int, string, string) {
	d.c.t.Helper()
	req, _ := http.NewRequestWithContext(d.c.t.Context(), http.MethodGet, d.c.base+"/v1/sessions/"+d.id+"/open", nil)
	req.Header.Set("x-api-key", d.c.key)
	if html {
		req.Header.Set("Accept", "text/html")
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		d.c.t.Fatalf("open %s: %v", d.id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// openRestored opens the link of a session that has just been restored
// and reads notes.txt from the preview it leads to: the link answers 302
// to the preview of a sandbox other than the old one, which serves the
// checkpoint's files.
func (d demoSession) openRestored() {
	d.c.t.Helper()
	s := d.await("running", func(s api.Session) bool { return s.State == "running" })
	if s.SandboxID == nil || *s.SandboxID == d.sandboxID {
		d.c.t.Fatalf("restored session %s runs on %v, want a new sandbox (not %s)", d.id, s.SandboxID, d.sandboxID)
	}
	code, loc, body := d.open(false)
	if code != http.StatusFound || s.PreviewURL == nil || loc != *s.PreviewURL {
		d.c.t.Fatalf("open after the restore = %d to %q (%.200s), want 302 to the preview %v", code, loc, body, s.PreviewURL)
	}
	resp, err := http.Get(loc + "notes.txt")
	if err != nil {
		d.c.t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != "work from before\n" {
		d.c.t.Errorf("the restored preview's notes.txt = %d %q, want the checkpoint's file", resp.StatusCode, got)
	}
}

// timeline returns the session's events once it holds one for the
// transition from → to (the stream publisher records them a moment after
// the commit).
func (d demoSession) timeline(from, to string) []api.SessionEvent {
	d.c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var l api.SessionEventList
		d.c.do(http.MethodGet, "/v1/sessions/"+d.id+"/events?limit=100", nil, &l)
		for _, ev := range l.Events {
			if ev.From == from && ev.To == to {
				return l.Events
			}
		}
		if time.Now().After(deadline) {
			d.c.t.Fatalf("no %s → %s event for session %s after a minute: %+v", from, to, d.id, l.Events)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// count returns how many of evs go from → to for reason.
func count(evs []api.SessionEvent, from, to, reason string) int {
	n := 0
	for _, ev := range evs {
		if ev.From == from && ev.To == to && ev.Reason == reason {
			n++
		}
	}
	return n
}

// gone fails the test unless path does not exist.
func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v, want it gone", path, err)
	}
}

// archiveFiles returns the files of the stack's archive store.
func archiveFiles(t *testing.T, state string) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(filepath.Join(state, "archives"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// TestMakeRunRecoversASandboxWhoseFolderWasRemoved is the recovery demo:
// a paused session's local sandbox folder removed behind Sandman's back,
// an open of the session's link starts the one recovery (resuming →
// restoring, reason lost), the waking page says "Restoring your work from
// <the checkpoint's time>", and the same link then leads to a new
// sandbox's preview serving the checkpoint's files.
func TestMakeRunRecoversASandboxWhoseFolderWasRemoved(t *testing.T) {
	vars := stackVars(t)
	state := vars[envnames.StateDir]
	sandboxes := filepath.Join(state, "sandboxes")
	hold := &heldRestores{}
	base, _, _ := runStackComposed(t, vars, hold.compose(nil))
	t.Cleanup(func() { killSandboxes(t, sandboxes) })
	d := newDemoSession(stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}, sandboxes, map[string]any{})
	ck := d.checkpoint()
	d.pause()

	if err := os.RemoveAll(d.folder()); err != nil { // behind Sandman's back
		t.Fatal(err)
	}
	if code, _, body := d.open(true); code != http.StatusOK || !strings.Contains(body, "Waking up the preview") {
		t.Fatalf("open of the lost session = %d %.300s, want 200 and the waking page", code, body)
	}
	s := d.await("restoring", func(s api.Session) bool { return s.State == "restoring" })
	if s.Reason != "lost" || s.Recovery == nil || s.Recovery.Lost != "gone" ||
		s.Recovery.CheckpointID == nil || *s.Recovery.CheckpointID != ck.ID {
		t.Fatalf("restoring session: reason %s, recovery %+v; want lost, gone, from %s", s.Reason, s.Recovery, ck.ID)
	}
	created, err := time.Parse(time.RFC3339Nano, *ck.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	when := created.UTC().Format("2 Jan 2006, 15:04 UTC")
	code, _, body := d.open(true)
	if code != http.StatusOK || !strings.Contains(body, "Restoring your work from "+when) {
		t.Fatalf("open while restoring = %d %.300s, want the waking page saying \"Restoring your work from %s\"", code, body, when)
	}

	hold.release(t)
	d.openRestored()
	awaitProcesses(t, state, 1, 10*time.Second) // the new sandbox's; the removed one's process was ended
	evs := d.timeline("restoring", "running")
	if n := count(evs, "resuming", "restoring", "lost"); n != 1 {
		t.Errorf("%d resuming → restoring events for reason lost, want 1: %+v", n, evs)
	}
	// The event published (events.jsonl; EventBridge in AWS) says how the
	// sandbox was lost and from which checkpoint, with its age.
	lines := eventLines(t, filepath.Join(state, "events.jsonl"), d.id, "lost")
	if len(lines) != 1 || !strings.Contains(lines[0], `"lost":"gone checkpoint=`+ck.ID+` age_seconds=`) {
		t.Errorf("published events of reason lost: %q, want one whose lost names %s and its age", lines, ck.ID)
	}
}

// eventLines returns the lines of the stack's events file for session id
// and reason once there is one (the stream publisher writes them a moment
// after the commit), or none after a minute.
func eventLines(t *testing.T, path, id, reason string) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(path)
		var out []string
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, `"session_id":"`+id+`"`) && strings.Contains(line, `"reason":"`+reason+`"`) {
				out = append(out, strings.TrimSpace(line))
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tierStack starts a local stack on clock (its sweep every 50 ms of wall
// time, so each move of the clock is acted on at once) with restores held
// by hold, and returns a client of it and its state folder.
func tierStack(t *testing.T, clock lifecycle.Clock, hold *heldRestores) (stackClient, string) {
	t.Helper()
	vars := stackVars(t)
	vars[envnames.SweepInterval] = "50ms"
	base, _, _ := runStackComposed(t, vars, hold.compose(clock))
	t.Cleanup(func() { killSandboxes(t, filepath.Join(vars[envnames.StateDir], "sandboxes")) })
	return stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}, vars[envnames.StateDir]
}

// TestMakeRunArchivesAPausedSessionAndItsLinkRestoresIt is the first tier
// demo, with archive_after_seconds 60 and the stack's clock moved by the
// test: a minute after its pause the sweep takes a checkpoint (trigger
// archive), and once it is ready archives the session: the local sandbox
// is gone, the checkpoint kept. An open of the link restores it (reason
// unarchive, the waking page on its restore step) onto a new sandbox
// serving the same files.
func TestMakeRunArchivesAPausedSessionAndItsLinkRestoresIt(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Now())
	hold := &heldRestores{}
	c, state := tierStack(t, clock, hold)
	d := newDemoSession(c, filepath.Join(state, "sandboxes"), map[string]any{"archive_after_seconds": 60})
	d.pause()

	clock.Advance(61 * time.Second)
	var ck api.Checkpoint
	deadline := time.Now().Add(time.Minute)
	for ck.State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("no ready archive checkpoint after a minute: %+v", d.checkpoints())
		}
		time.Sleep(20 * time.Millisecond)
		if cks := d.checkpoints(); len(cks) == 1 && cks[0].Trigger == "archive" {
			ck = cks[0]
		}
	}
	clock.Advance(time.Minute) // the sweep looks again a minute later
	s := d.await("archived", func(s api.Session) bool { return s.State == "archived" && s.SandboxID == nil })
	if s.Reason != "archive" {
		t.Errorf("archived for reason %s, want archive", s.Reason)
	}
	gone(t, d.folder())
	if cks := d.checkpoints(); len(cks) != 1 || cks[0].ID != ck.ID || cks[0].State != "ready" {
		t.Errorf("checkpoints of the archived session = %+v, want %s kept ready", cks, ck.ID)
	}

	code, _, body := d.open(true)
	if code != http.StatusOK || !strings.Contains(body, "Restoring the sandbox from a checkpoint") {
		t.Fatalf("open of the archived session = %d %.300s, want the waking page on its restore step", code, body)
	}
	if s := d.get(); s.State != "restoring" || s.Reason != "unarchive" {
		t.Fatalf("after the open: %s for reason %s, want restoring for unarchive", s.State, s.Reason)
	}
	hold.release(t)
	d.openRestored()
	d.timeline("restoring", "running")
}

// TestMakeRunDeletesASessionPastDeleteAfterWithItsCheckpoints is the
// second tier demo: a paused session with delete_after_seconds 120 and a
// checkpoint is deleted two minutes after its pause (the stack's clock
// moved by the test), its sandbox and checkpoint with it (none left in
// the archive store), and its link answers 410.
func TestMakeRunDeletesASessionPastDeleteAfterWithItsCheckpoints(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Now())
	c, state := tierStack(t, clock, &heldRestores{})
	d := newDemoSession(c, filepath.Join(state, "sandboxes"), map[string]any{"archive_after_seconds": 0, "delete_after_seconds": 120})
	d.checkpoint()
	d.pause()
	if n := len(archiveFiles(t, state)); n == 0 {
		t.Fatal("the checkpoint left no archive in the store")
	}

	clock.Advance(121 * time.Second)
	s := d.await("deleted", func(s api.Session) bool { return s.State == "deleted" })
	if s.Reason != "retention" {
		t.Errorf("deleted for reason %s, want retention", s.Reason)
	}
	deadline := time.Now().Add(time.Minute)
	for len(d.checkpoints()) > 0 || len(archiveFiles(t, state)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the deletion: checkpoints %+v, archives %v; want none", d.checkpoints(), archiveFiles(t, state))
		}
		time.Sleep(20 * time.Millisecond)
	}
	gone(t, d.folder())
	if code, _, body := d.open(false); code != http.StatusGone {
		t.Errorf("open of the deleted session = %d %.200s, want 410", code, body)
	}
}
