package localstack_test

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/localstack/consoletest"
	"github.com/sandmanhq/sandman/internal/webclient"
)

// TestNewMux: the console's dev routes (reads, the operator's restore and
// fork, and the user view's client token) reach the API under /v1 with the
// dev key, query included, the browser's own credentials dropped; restore
// and fork without an Idempotency-Key or from another origin are refused;
// other writes and console API paths are 404; the browser files, the feed
// and /v1/ws are served; the rest goes to the API.
func TestNewMux(t *testing.T) {
	var got []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI()+" key="+r.Header.Get("x-api-key")+" authz="+r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusTeapot)
	})
	ws := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	feed := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNonAuthoritativeInfo) })
	srv := httptest.NewServer(localstack.NewMux(api, ws, "sk_dev", feed))
	t.Cleanup(srv.Close)
	do := func(method, path string, headers ...string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer sk_browser")
		if method == http.MethodPost && (strings.HasSuffix(path, "/restore") || strings.HasSuffix(path, "/fork")) {
			req.Header.Set("Idempotency-Key", "k1")
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/console/api/sessions?state=running,paused&metadata%5Buser%5D=ada", "GET /v1/sessions?state=running,paused&metadata%5Buser%5D=ada key=sk_dev authz="},
		{"GET", "/console/api/sessions/ses_x", "GET /v1/sessions/ses_x key=sk_dev authz="},
		{"GET", "/console/api/sessions/ses_x/events?cursor=c", "GET /v1/sessions/ses_x/events?cursor=c key=sk_dev authz="},
		{"GET", "/console/api/sessions/ses_x/checkpoints?limit=20", "GET /v1/sessions/ses_x/checkpoints?limit=20 key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/restore", "POST /v1/sessions/ses_x/restore key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/fork", "POST /v1/sessions/ses_x/fork key=sk_dev authz="},
		{"GET", "/console/api/sessions?order=asc&state=killed", "GET /v1/sessions?order=asc&state=killed key=sk_dev authz="},
		{"GET", "/console/api/pools", "GET /v1/pools key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/client-tokens", "POST /v1/sessions/ses_x/client-tokens key=sk_dev authz="},
		{"GET", "/console/api/webhook-endpoints", "GET /v1/webhook-endpoints key=sk_dev authz="},
		{"GET", "/console/api/webhook-endpoints/we_x/deliveries", "GET /v1/webhook-endpoints/we_x/deliveries key=sk_dev authz="},
		{"GET", "/v1/sessions", "GET /v1/sessions key= authz=Bearer sk_browser"},
	} {
		got = nil
		if status, _ := do(tc.method, tc.path); status != http.StatusTeapot || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s: status %d, API saw %v; want %q", tc.method, tc.path, status, got, tc.want)
		}
	}
	got = nil
	for _, r := range []struct{ method, path string }{
		{"POST", "/console/api/sessions"}, {"DELETE", "/console/api/sessions/ses_x"},
		{"POST", "/console/api/sessions/ses_x/resume"}, {"POST", "/console/api/sessions/ses_x/snapshot"},
		{"GET", "/console/api/sessions/ses_x/open"}, {"GET", "/console/api/sessions/ses_x/diagnose"}, {"GET", "/console/api/keys"},
		{"POST", "/console/api/sessions/ses_x/checkpoints"}, {"DELETE", "/console/api/sessions/ses_x/checkpoints/chk_x"},
		{"POST", "/console/api/sessions/ses_x/pause"}, {"POST", "/console/api/sessions/ses_x/activity"},
	} {
		if status, _ := do(r.method, r.path); status != http.StatusNotFound && status != http.StatusMethodNotAllowed || len(got) != 0 {
			t.Errorf("%s %s: status %d, forwarded %v; want 404 or 405 and nothing forwarded", r.method, r.path, status, got)
		}
	}
	// An action needs its Idempotency-Key and the stack's own origin (a
	// page elsewhere cannot send the header without a preflight).
	for _, h := range [][]string{{"Idempotency-Key", " "}, {"Origin", "http://evil.example"}, {"Origin", "null"}} {
		got = nil
		status, body := do("POST", "/console/api/sessions/ses_x/restore", h...)
		if status != http.StatusForbidden || len(got) != 0 || !strings.Contains(body, `"error_type":"forbidden"`) {
			t.Errorf("restore with %v: %d %s, forwarded %v; want 403 forbidden and nothing forwarded", h, status, body, got)
		}
	}
	got = nil
	if status, _ := do("POST", "/console/api/sessions/ses_x/fork", "Origin", srv.URL); status != http.StatusTeapot || len(got) != 1 {
		t.Errorf("fork from the stack's own origin: %d, forwarded %v", status, got)
	}
	if status, _ := do("GET", "/console/api/feed"); status != http.StatusNonAuthoritativeInfo {
		t.Errorf("GET /console/api/feed: %d, want the feed", status)
	}
	if status, _ := do("GET", localstack.WSPath); status != http.StatusAccepted {
		t.Errorf("GET %s: %d, want the channel", localstack.WSPath, status)
	}
	for _, p := range []string{"/sandman.js", "/console/", "/console/console.js", "/console/preview.html"} {
		if status, body := do("GET", p); status != http.StatusOK || body == "" {
			t.Errorf("GET %s: %d", p, status)
		}
	}
}

// TestWatchingIsNotPresence: everything the console does to watch — its
// files, the sessions table with and without filters, in either order, a
// session's page, timeline and checkpoints, pools, webhooks, and the live
// feed held open — leaves a paused
// session that resumes on return paused and a running session whose last
// client left with its deadlines: no write, no event, no provider call
// (docs/CONSOLE.md "Watching is not presence"). The console's scripts open
// no client channel, mint no client token and never open a stable link;
// only actions.js writes, and only a restore or a fork.
func TestWatchingIsNotPresence(t *testing.T) {
	stack, err := consoletest.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	seeded, err := stack.Seed(40, 4, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var paused, running *lifecycle.Session
	for _, s := range seeded {
		switch {
		case s.State == lifecycle.StatePaused && s.ResumeOnReturn:
			paused = s
		case s.State == lifecycle.StateRunning && !s.AwayDeadline.IsZero():
			running = s
		}
	}
	if paused == nil || running == nil {
		t.Fatal("the seed has no paused session resuming on return, or no running one whose client left")
	}
	if _, err := stack.SeedCheckpoints(paused, 25, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	feedReq, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/console/api/feed", nil)
	feed, err := http.DefaultClient.Do(feedReq)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Body.Close()
	if line, err := bufio.NewReader(feed.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("feed: first line %q, %v; want its comment", line, err)
	}
	for _, p := range []string{
		"/console/", "/console/console.js", "/console/console.css",
		"/console/api/sessions?state=provisioning,running,pausing,paused,resuming&limit=20",
		"/console/api/sessions?limit=20", "/console/api/sessions?state=killed&provider=e2b&metadata%5Buser%5D=u1",
		"/console/api/sessions?order=asc&limit=20", "/console/api/sessions?order=asc&state=paused",
		"/console/api/sessions/" + paused.ID, "/console/api/sessions/" + paused.ID + "/events",
		"/console/api/sessions/" + paused.ID + "/checkpoints?limit=20",
		"/console/api/sessions/" + running.ID, "/console/api/sessions/" + running.ID + "/events",
		"/console/api/pools", "/console/api/webhook-endpoints",
	} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", p, resp.StatusCode)
		}
	}
	if got := stack.Feed.Watchers(); got != 1 {
		t.Errorf("%d feed watchers, want 1", got)
	}
	for _, want := range []*lifecycle.Session{paused, running} {
		got, err := stack.Store.GetSession(t.Context(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != want.State || got.Version != want.Version || !got.LastActivityAt.Equal(want.LastActivityAt) ||
			!got.IdleDeadline.Equal(want.IdleDeadline) || !got.AwayDeadline.Equal(want.AwayDeadline) {
			t.Errorf("%s after watching: %s v%d, activity %v, idle %v, away %v; want it untouched: %s v%d, %v, %v, %v", want.ID,
				got.State, got.Version, got.LastActivityAt, got.IdleDeadline, got.AwayDeadline,
				want.State, want.Version, want.LastActivityAt, want.IdleDeadline, want.AwayDeadline)
		}
	}
	if evs := stack.Events(); len(evs) != 0 {
		t.Errorf("watching committed %d transitions, want none: %+v", len(evs), evs)
	}
	if n := stack.ProviderCalls(); n != 0 {
		t.Errorf("watching made %d provider calls, want none", n)
	}
	scripts, err := fs.Glob(webclient.Files, "console/*.js")
	if err != nil || len(scripts) < 4 {
		t.Fatalf("console scripts %v, %v", scripts, err)
	}
	for _, name := range scripts {
		if name == "console/preview.js" {
			continue // the end user's view, not the console
		}
		script, err := fs.ReadFile(webclient.Files, name)
		if err != nil {
			t.Fatal(err)
		}
		banned := []string{"sandman.js", "client-tokens", "/open", "/v1/ws", "/activity", "heartbeat", "/resume", "/pause",
			"/snapshot", "DELETE", "PATCH"}
		if name != "console/actions.js" {
			banned = append(banned, "method:", "/restore", "/fork") // watching only
		}
		for _, b := range banned {
			if strings.Contains(string(script), b) {
				t.Errorf("%s mentions %q: the console must only watch (and act only by restore and fork, in actions.js)", name, b)
			}
		}
	}
}
