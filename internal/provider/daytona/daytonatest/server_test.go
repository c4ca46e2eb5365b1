package daytonatest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

type client struct {
	tb  testing.TB
	url string
	key string
}

// do sends method path with body (JSON when non-nil) and decodes a JSON
// answer into a map.
func (c client) do(method, path string, body any) (int, http.Header, map[string]any) {
	c.tb.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, resp.Header, out
}

func mustStart(tb testing.TB, opts daytonatest.Config) (*daytonatest.Server, client, *lifecycle.ManualClock) {
	tb.Helper()
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	opts.Clock = clock
	srv, hs := daytonatest.Start(tb, opts)
	return srv, client{tb: tb, url: hs.URL, key: srv.APIKey()}, clock
}

func TestLifecycleAndConflicts(t *testing.T) {
	var mu sync.Mutex
	var changes []string
	srv, c, clock := mustStart(t, daytonatest.Config{CreateTime: 5 * time.Second, StopTime: 10 * time.Second,
		OnStateChange: func(ch daytonatest.StateChange) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, ch.OldState+">"+ch.NewState)
		}})
	status, _, sb := c.do("POST", "/api/sandbox", map[string]any{"snapshot": "base", "labels": map[string]string{"a": "1"},
		"autoStopInterval": 5, "env": map[string]string{}})
	if status != 200 || sb["state"] != "creating" || sb["desiredState"] != "started" || sb["toolboxProxyUrl"] == "" {
		t.Fatalf("create = %d %v", status, sb)
	}
	id := sb["id"].(string)
	if status, _, body := c.do("POST", "/sandbox/"+id+"/stop?force=false", nil); status != 409 || body["message"] != "Sandbox state change in progress" ||
		body["statusCode"] != float64(409) || body["error"] != "Conflict" || body["path"] != "/sandbox/"+id+"/stop" {
		t.Fatalf("stop while creating = %d %v", status, body)
	}
	clock.Advance(5 * time.Second)
	if _, _, got := c.do("GET", "/sandbox/"+id, nil); got["state"] != "started" {
		t.Fatalf("after create time: %v", got["state"])
	}
	if status, _, got := c.do("POST", "/sandbox/"+id+"/stop", nil); status != 200 || got["state"] != "stopping" {
		t.Fatalf("stop = %d %v", status, got["state"])
	}
	if status, _, _ := c.do("DELETE", "/sandbox/"+id, nil); status != 409 {
		t.Fatalf("delete while stopping = %d, want 409", status)
	}
	if status, _, _ := c.do("POST", "/sandbox/"+id+"/pause", nil); status != 409 {
		t.Fatalf("pause while stopping = %d, want 409", status)
	}
	clock.Advance(10 * time.Second)
	if status, _, body := c.do("POST", "/sandbox/"+id+"/stop", nil); status != 400 || body["message"] != "Sandbox is not in a stoppable state" {
		t.Fatalf("stop of stopped = %d %v", status, body)
	}
	if status, _, _ := c.do("POST", "/sandbox/"+id+"/pause", nil); status != 422 {
		t.Fatalf("pause of a container = %d, want 422", status)
	}
	if status, _, got := c.do("DELETE", "/sandbox/"+id, nil); status != 200 || got["desiredState"] != "destroyed" {
		t.Fatalf("delete = %d %v", status, got)
	}
	if status, _, _ := c.do("GET", "/sandbox/"+id, nil); status != 404 {
		t.Fatalf("get after delete = %d, want 404", status)
	}
	if status, _, _ := c.do("DELETE", "/sandbox/"+id, nil); status != 404 {
		t.Fatalf("second delete = %d, want 404", status)
	}
	srv.Sandbox(id) // flushes pending changes
	mu.Lock()
	defer mu.Unlock()
	want := ">creating,creating>started,started>stopping,stopping>stopped,stopped>destroying,destroying>destroyed"
	if got := strings.Join(changes, ","); got != want {
		t.Fatalf("state changes = %s, want %s", got, want)
	}
}

func TestCreateValidation(t *testing.T) {
	_, c, _ := mustStart(t, daytonatest.Config{Snapshots: []string{"base"}})
	for name, body := range map[string]map[string]any{
		"Both":            {"snapshot": "base", "buildInfo": map[string]any{"dockerfileContent": "FROM x"}},
		"ResourcesOnSnap": {"snapshot": "base", "cpu": 2},
		"StopAndPause":    {"snapshot": "base", "autoStopInterval": 5, "autoPauseInterval": 5},
		"UnknownSnapshot": {"snapshot": "nope"},
		"NegativeTimer":   {"snapshot": "base", "autoStopInterval": -1},
	} {
		t.Run(name, func(t *testing.T) {
			if status, _, out := c.do("POST", "/sandbox", body); status != 400 || out["message"] == "" {
				t.Fatalf("create = %d %v, want 400 with a message", status, out)
			}
		})
	}
	if status, _, _ := c.do("POST", "/sandbox", map[string]any{"snapshot": "base", "name": "n1"}); status != 200 {
		t.Fatalf("create n1 = %d", status)
	}
	if status, _, _ := c.do("POST", "/sandbox", map[string]any{"snapshot": "base", "name": "n1"}); status != 409 {
		t.Fatalf("second n1 = %d, want 409", status)
	}
	if status, _, got := c.do("GET", "/sandbox/n1", nil); status != 200 || got["name"] != "n1" {
		t.Fatalf("get by name = %d %v", status, got)
	}
}

func TestListFiltersAndCursor(t *testing.T) {
	srv, c, _ := mustStart(t, daytonatest.Config{})
	for i := range 5 {
		st := "started"
		if i%2 == 1 {
			st = "stopped"
		}
		srv.Put(daytonatest.Sandbox{ID: "sb" + string(rune('a'+i)), State: st, AutoDelete: -1,
			Labels: map[string]string{"team": "x", "n": string(rune('a' + i))}})
	}
	labels := url.QueryEscape(`{"team":"x"}`)
	var ids []string
	cursor := ""
	for range 5 {
		path := "/sandbox?labels=" + labels + "&states=started&states=stopped&limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, _, out := c.do("GET", path, nil)
		if status != 200 {
			t.Fatalf("list = %d %v", status, out)
		}
		for _, it := range out["items"].([]any) {
			item := it.(map[string]any)
			if _, hasEnv := item["env"]; hasEnv {
				t.Error("list items carry env")
			}
			ids = append(ids, item["id"].(string))
		}
		next, _ := out["nextCursor"].(string)
		if next == "" {
			if out["nextCursor"] != nil {
				t.Fatalf("nextCursor = %v, want null", out["nextCursor"])
			}
			break
		}
		cursor = next
	}
	if got := strings.Join(ids, ","); got != "sba,sbb,sbc,sbd,sbe" {
		t.Fatalf("paged ids = %s", got)
	}
	_, _, out := c.do("GET", "/sandbox?states=stopped&labels="+url.QueryEscape(`{"team":"x","n":"b"}`), nil)
	if items := out["items"].([]any); len(items) != 1 {
		t.Fatalf("label+state filter = %v", items)
	}
	for name, q := range map[string]string{
		"BadLabels": "labels=" + url.QueryEscape("{nope"), "Destroyed": "states=destroyed",
		"BadCursor": "cursor=zz", "BigLimit": "limit=201", "BadSort": "sort=size",
	} {
		if status, _, _ := c.do("GET", "/sandbox?"+q, nil); status != 400 {
			t.Errorf("%s: status %d, want 400", name, status)
		}
	}
}

func TestRateLimitHeaders(t *testing.T) {
	srv, c, clock := mustStart(t, daytonatest.Config{RateLimits: map[string]int{daytonatest.BucketLifecycle: 1}})
	srv.Put(daytonatest.Sandbox{ID: "sb", State: "started", AutoDelete: -1})
	_, h, _ := c.do("GET", "/sandbox/sb", nil)
	if h.Get("X-RateLimit-Limit-authenticated") != "10000" || h.Get("X-RateLimit-Remaining-authenticated") != "9999" {
		t.Fatalf("authenticated headers = %v", h)
	}
	if status, _, _ := c.do("POST", "/sandbox/sb/stop", nil); status != 200 {
		t.Fatalf("stop = %d", status)
	}
	status, h, body := c.do("POST", "/sandbox/sb/start", nil)
	if status != 429 || h.Get("Retry-After-sandbox-lifecycle") == "" || h.Get("Retry-After") != "" ||
		body["message"] != "ThrottlerException: Too Many Requests" {
		t.Fatalf("over the limit = %d %v %v", status, h, body)
	}
	clock.Advance(time.Minute)
	if status, _, _ := c.do("POST", "/sandbox/sb/start", nil); status != 200 {
		t.Fatalf("next window = %d", status)
	}
	srv.Fail(daytonatest.OpAny, daytonatest.Fault{Status: 429, RetryAfter: 12})
	if _, h, _ := c.do("POST", "/sandbox", map[string]any{}); h.Get("Retry-After-sandbox-create") != "12" {
		t.Fatalf("injected 429 headers = %v", h)
	}
	if got := srv.Requests(daytonatest.OpStart); got != 2 {
		t.Errorf("start requests = %d, want 2", got)
	}
}

func TestAuthAndRoutes(t *testing.T) {
	var logs strings.Builder
	var logMu sync.Mutex
	srv, c, _ := mustStart(t, daytonatest.Config{Logger: slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(b)
	}), nil))})
	t.Cleanup(func() {
		logMu.Lock()
		defer logMu.Unlock()
		if !strings.Contains(logs.String(), "method=GET path=/sandbox/sb status=401") {
			t.Errorf("request log lacks the refused GET: %s", logs.String())
		}
	})
	srv.Fail(daytonatest.OpGet, daytonatest.Fault{Drop: true})
	if _, err := http.Get(c.url + "/sandbox/x"); err == nil {
		t.Error("a dropped request got an answer")
	}
	srv.Put(daytonatest.Sandbox{ID: "sb", State: "started", AutoDelete: -1})
	bad := c
	bad.key = "wrong"
	if status, _, _ := bad.do("GET", "/sandbox/sb", nil); status != 401 {
		t.Fatalf("bad key = %d", status)
	}
	if status, _, _ := c.do("GET", "/api/socket.io/?EIO=4&transport=websocket", nil); status != 404 {
		t.Fatalf("socket.io = %d, want 404", status)
	}
	if status, _, out := c.do("GET", "/sandbox/sb/toolbox-proxy-url", nil); status != 200 || out["url"] == "" {
		t.Fatalf("toolbox proxy = %d %v", status, out)
	}
	if status, _, _ := c.do("GET", "/sandbox/sb/ports/70000/preview-url", nil); status != 400 {
		t.Fatalf("bad port = %d", status)
	}
	_, _, p1 := c.do("GET", "/sandbox/sb/ports/3000/preview-url", nil)
	c.do("POST", "/sandbox/sb/stop", nil)
	c.do("POST", "/sandbox/sb/start", nil)
	_, _, p2 := c.do("GET", "/sandbox/sb/ports/3000/preview-url", nil)
	if p1["token"] == p2["token"] || p1["url"] != p2["url"] || p1["url"] != "https://3000-sb."+daytonatest.DefaultProxyDomain {
		t.Fatalf("preview before/after a start: %v / %v", p1, p2)
	}
	if status, _, _ := c.do("POST", "/sandbox/sb/last-activity", map[string]any{}); status != 201 {
		t.Fatalf("last-activity = %d", status)
	}
	if status, _, out := c.do("POST", "/sandbox/sb/autostop/30", nil); status != 201 || out["autoStopInterval"] != float64(30) {
		t.Fatalf("autostop = %d %v", status, out)
	}
	if status, _, out := c.do("PUT", "/sandbox/sb/labels", map[string]any{"labels": map[string]string{"x": "y"}}); status != 200 ||
		out["labels"].(map[string]any)["x"] != "y" {
		t.Fatalf("labels = %d %v", status, out)
	}
	if got := srv.Wakes("sb"); got != 1 {
		t.Errorf("wakes = %d, want 1", got)
	}
}

// TestProviderConfig: the adapter on ProviderConfig settles slow
// transitions by advancing the manual clock, never by sleeping.
func TestProviderConfig(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	opts := daytonatest.StandaloneConfig()
	opts.Clock, opts.StopTime = clock, time.Hour
	srv, hs := daytonatest.Start(t, opts)
	cfg := srv.ProviderConfig(hs.URL)
	cfg.StopTimeout, cfg.PollInterval = 2*time.Hour, 5*time.Minute
	p, err := daytona.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: 3 * time.Hour, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if got, ok := srv.Sandbox(sb.ID); !ok || got.State != daytonatest.StateStopped {
		t.Fatalf("after pause: %+v", got)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("pause took %s of real time", took)
	}
	if got := clock.Now().Sub(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); got < time.Hour {
		t.Errorf("clock advanced %s, want at least the hour-long stop", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestSnapshotsAndActivation(t *testing.T) {
	srv, c, clock := mustStart(t, daytonatest.Config{SnapshotTime: 5 * time.Second, ActivateTime: 10 * time.Second})
	srv.Put(daytonatest.Sandbox{ID: "sb", State: "started", AutoDelete: -1, Labels: map[string]string{"a": "1"}})
	if status, _, got := c.do("POST", "/sandbox/sb/snapshot", map[string]any{"name": "s1"}); status != 200 || got["state"] != "snapshotting" {
		t.Fatalf("snapshot = %d %v", status, got)
	}
	if status, _, _ := c.do("GET", "/snapshots/s1", nil); status != 404 {
		t.Fatalf("get while capturing = %d, want 404 (no record until it ends)", status)
	}
	if status, _, _ := c.do("POST", "/sandbox/sb/stop", nil); status != 409 {
		t.Fatalf("stop while capturing = %d, want 409", status)
	}
	clock.Advance(5 * time.Second)
	status, _, snap := c.do("GET", "/api/snapshots/s1", nil)
	if status != 200 || snap["state"] != "active" || snap["sourceSandboxId"] != "sb" || snap["general"] != false || snap["id"] == "" {
		t.Fatalf("get after the capture = %d %v", status, snap)
	}
	if sb, _ := srv.Sandbox("sb"); sb.State != "started" {
		t.Fatalf("sandbox after the capture = %s", sb.State)
	}
	c.do("POST", "/sandbox/sb/snapshot", map[string]any{"name": "s1"}) // a name taken: fails silently
	clock.Advance(5 * time.Second)
	if _, _, page := c.do("GET", "/snapshots?sourceSandboxId=sb", nil); page["total"] != float64(1) {
		t.Fatalf("snapshots after a second capture of s1 = %v, want one", page)
	}
	id := snap["id"].(string)
	if status, _, _ := c.do("POST", "/snapshots/"+id+"/activate", nil); status != 400 {
		t.Errorf("activate of an active snapshot = %d, want 400", status)
	}
	clock.Advance(daytonatest.DefaultDeactivation)
	if _, _, got := c.do("GET", "/snapshots/"+id, nil); got["state"] != "inactive" {
		t.Fatalf("after 14 days unused = %v, want inactive", got["state"])
	}
	if status, _, got := c.do("POST", "/sandbox", map[string]any{"snapshot": "s1"}); status != 400 || got["message"] != "Snapshot s1 is inactive" {
		t.Fatalf("create from an inactive snapshot = %d %v", status, got)
	}
	if status, _, got := c.do("POST", "/snapshots/"+id+"/activate", nil); status != 200 || got["state"] != "pending" {
		t.Fatalf("activate = %d %v", status, got)
	}
	clock.Advance(10 * time.Second)
	if status, _, got := c.do("POST", "/sandbox", map[string]any{"snapshot": "s1"}); status != 200 || got["snapshot"] != "s1" {
		t.Fatalf("create from the activated snapshot = %d %v", status, got)
	}
	if status, _, _ := c.do("DELETE", "/snapshots/s1", nil); status != 400 {
		t.Errorf("delete by name = %d, want 400 (an id only)", status)
	}
	if status, _, _ := c.do("DELETE", "/snapshots/"+id, nil); status != 200 {
		t.Fatalf("delete = %d", status)
	}
	if status, _, got := c.do("POST", "/sandbox", map[string]any{"snapshot": "s1"}); status != 400 || !strings.Contains(got["message"].(string), "not found") {
		t.Fatalf("create from a deleted snapshot = %d %v", status, got)
	}
	for i := range 3 {
		c.do("POST", "/sandbox/sb/snapshot", map[string]any{"name": "p" + string(rune('0'+i))})
		clock.Advance(5 * time.Second)
	}
	_, _, page := c.do("GET", "/snapshots?limit=2&page=2&name=p", nil)
	if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "p2" ||
		page["total"] != float64(3) || page["page"] != float64(2) || page["totalPages"] != float64(2) {
		t.Errorf("page 2 = %v", page)
	}
}

func TestForkAndExecute(t *testing.T) {
	srv, c, clock := mustStart(t, daytonatest.Config{ForkTime: 3 * time.Second})
	srv.Put(daytonatest.Sandbox{ID: "box", State: "started", AutoDelete: -1})
	srv.Put(daytonatest.Sandbox{ID: "vm", State: "started", Class: "linux-vm", AutoDelete: -1, AutoPause: 30,
		Labels: map[string]string{"a": "1"}})
	run := func(id, line string) (float64, string) {
		wrapped := `sh -c "echo ` + base64.StdEncoding.EncodeToString([]byte(line)) + ` | base64 -d | sh"`
		status, _, out := c.do("POST", "/toolbox/"+id+"/process/execute", map[string]any{"command": wrapped})
		if status != 200 {
			t.Fatalf("execute in %s = %d %v", id, status, out)
		}
		return out["exitCode"].(float64), out["result"].(string)
	}
	write, _ := sandboxfs.WriteCommand("/app/a.txt", []byte("v1"))
	read, _ := sandboxfs.ReadCommand("/app/a.txt")
	if code, _ := run("vm", write); code != 0 {
		t.Fatalf("write exit = %v", code)
	}
	if code, _ := run("vm", "exit 3"); code != 3 {
		t.Errorf("exit 3 = %v", code)
	}
	if status, _, _ := c.do("POST", "/sandbox/box/fork", map[string]any{}); status != 422 {
		t.Errorf("fork of a container = %d, want 422", status)
	}
	status, _, child := c.do("POST", "/sandbox/vm/fork", map[string]any{})
	if status != 200 || child["state"] != "creating" || child["labels"].(map[string]any)["a"] != "1" || child["autoPauseInterval"] != float64(0) {
		t.Fatalf("fork = %d %v", status, child)
	}
	if sb, _ := srv.Sandbox("vm"); sb.State != "forking" {
		t.Fatalf("source while forking = %s", sb.State)
	}
	if status, _, _ := c.do("POST", "/sandbox/vm/fork", map[string]any{}); status != 400 {
		t.Errorf("fork of a forking sandbox = %d, want 400", status)
	}
	clock.Advance(3 * time.Second)
	id := child["id"].(string)
	run("vm", strings.Replace(write, "djE=", "djI=", 1)) // the source's file changes after the fork
	if code, out := run(id, read); code != 0 || out != "djE=" {
		t.Errorf("the fork's file = %v %q, want v1 (base64 djE=)", code, out)
	}
	if code, _ := run(id, strings.Replace(read, "a.txt", "b.txt", 2)); code != sandboxfs.NoFileExit {
		t.Errorf("a missing file's exit = %v, want %d", code, sandboxfs.NoFileExit)
	}
}
