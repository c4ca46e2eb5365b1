package e2btest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// call sends one control API request and decodes a JSON answer into out
// (when non-nil); it returns the status and the raw body.
func call(tb testing.TB, srv *e2btest.Server, method, path, body string, out any) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, srv.API.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("X-API-Key", e2btest.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, string(b)
}

func create(tb testing.TB, srv *e2btest.Server, body string) map[string]any {
	tb.Helper()
	var out map[string]any
	if st, b := call(tb, srv, "POST", "/v2/sandboxes", body, &out); st != http.StatusCreated {
		tb.Fatalf("create: %d %s", st, b)
	}
	return out
}

func TestFakeV2Routes(t *testing.T) {
	srv := e2btest.NewServer(t)
	sb := create(t, srv, `{"templateID":"base","timeout":60}`)
	id := sb["sandboxID"].(string)
	if st, b := call(t, srv, "POST", "/v2/sandboxes/"+id+"/connect", `{"timeout":60}`, nil); st != http.StatusOK {
		t.Errorf("v2 connect of a running sandbox: %d %s, want 200", st, b)
	}
	if got := srv.DeprecatedRequests(); got != 0 {
		t.Errorf("deprecated requests = %d, want 0", got)
	}
	if st, _ := call(t, srv, "POST", "/sandboxes", `{"templateID":"base"}`, nil); st != http.StatusCreated {
		t.Errorf("deprecated create: %d, want 201 (still served)", st)
	}
	if got := srv.DeprecatedRequests(); got != 1 {
		t.Errorf("deprecated requests = %d, want 1", got)
	}
}

func TestFakeRequiredResponseFields(t *testing.T) {
	srv := e2btest.NewServer(t)
	sb := create(t, srv, `{"templateID":"base"}`) // no "secure": v2 is always secure
	if _, ok := sb["clientID"].(string); !ok {
		t.Errorf("create answer has no clientID: %v", sb)
	}
	if tok, ok := sb["envdAccessToken"].(string); !ok || tok == "" {
		t.Errorf("create answer envdAccessToken = %v, want a string", sb["envdAccessToken"])
	}
	id := sb["sandboxID"].(string)
	var got map[string]any
	call(t, srv, "GET", "/sandboxes/"+id, "", &got)
	for _, k := range []string{"clientID", "cpuCount", "memoryMB", "diskSizeMB", "envdVersion", "domain"} {
		if _, ok := got[k]; !ok {
			t.Errorf("get answer has no %s: %v", k, got)
		}
	}
	var list []map[string]any
	call(t, srv, "GET", "/v2/sandboxes", "", &list)
	if len(list) != 1 {
		t.Fatalf("list = %v", list)
	}
	if _, ok := list[0]["domain"]; ok {
		t.Errorf("list item carries a domain: %v (ListedSandbox has none)", list[0])
	}
}

func TestFakeIgnoresUnknownFieldsAndParameters(t *testing.T) {
	srv := e2btest.NewServer(t)
	sb := create(t, srv, `{"templateID":"base","allow_internet_access":true}`)
	id := sb["sandboxID"].(string)
	if st, b := call(t, srv, "POST", "/v2/sandboxes/"+id+"/connect", `{"timeout":60,"memory":true}`, nil); st != http.StatusOK {
		t.Errorf("connect with an unknown field: %d %s", st, b)
	}
	if st, b := call(t, srv, "GET", "/v2/sandboxes?foo=1&order=asc", "", nil); st != http.StatusOK {
		t.Errorf("list with unknown parameters: %d %s", st, b)
	}
	got := strings.Join(srv.UnknownFields(), ",")
	if want := "create allow_internet_access,connect memory,list foo"; got != want {
		t.Errorf("UnknownFields = %q, want %q", got, want)
	}
}

func TestFakeCreateTimeout(t *testing.T) {
	srv := e2btest.NewServer(t)
	st, b := call(t, srv, "POST", "/v2/sandboxes", `{"templateID":"base","timeout":0}`, nil)
	if st != http.StatusBadRequest || !strings.Contains(b, "Timeout must be greater than 0") {
		t.Errorf("create timeout 0: %d %s, want 400", st, b)
	}
	sb := create(t, srv, `{"templateID":"base"}`)
	got, _ := srv.Sandbox(sb["sandboxID"].(string))
	if want := srv.Clock.Now().Add(300 * time.Second); !got.EndAt.Equal(want) {
		t.Errorf("default endAt = %v, want %v (300 s)", got.EndAt, want)
	}
}

func TestFakeSetTimeoutZeroExpiresNow(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base","timeout":600}`)["sandboxID"].(string)
	if st, b := call(t, srv, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":0}`, nil); st != http.StatusNoContent {
		t.Fatalf("set timeout 0: %d %s", st, b)
	}
	if st, _ := call(t, srv, "GET", "/sandboxes/"+id, "", nil); st != http.StatusNotFound {
		t.Errorf("get after set timeout 0: %d, want 404 (killed at once)", st)
	}
}

func TestFakeRunLengthCap(t *testing.T) {
	srv := e2btest.NewServer(t)
	start := srv.Clock.Now()
	id := create(t, srv, `{"templateID":"base","timeout":3500}`)["sandboxID"].(string)
	srv.Clock.Advance(50 * time.Minute)
	if st, b := call(t, srv, "POST", "/sandboxes/"+id+"/timeout", `{"timeout":1800}`, nil); st != http.StatusNoContent {
		t.Fatalf("set timeout past the cap: %d %s, want 204", st, b)
	}
	got, _ := srv.Sandbox(id)
	if want := start.Add(e2btest.MaxRunLength); !got.EndAt.Equal(want) {
		t.Errorf("endAt = %v, want %v (start + cap)", got.EndAt, want)
	}
	if st, b := call(t, srv, "POST", "/v2/sandboxes/"+id+"/connect", `{"timeout":3600}`, nil); st != http.StatusOK {
		t.Fatalf("connect past the cap: %d %s, want 200", st, b)
	}
	if got, _ := srv.Sandbox(id); !got.EndAt.Equal(start.Add(e2btest.MaxRunLength)) {
		t.Errorf("endAt after connect = %v, want the cap", got.EndAt)
	}
	srv.Put(e2btest.Sandbox{ID: "old", TemplateID: "base", State: lifecycle.SandboxRunning,
		StartedAt: srv.Clock.Now().Add(-2 * time.Hour), EndAt: srv.Clock.Now().Add(time.Minute)})
	if st, _ := call(t, srv, "POST", "/sandboxes/old/timeout", `{"timeout":60}`, nil); st != http.StatusBadRequest {
		t.Errorf("set timeout after the run-length limit: %d, want 400", st)
	}
}

func TestFakeConflictsWhilePausingOrKilling(t *testing.T) {
	srv := e2btest.NewServer(t)
	now := srv.Clock.Now()
	srv.Put(e2btest.Sandbox{ID: "pausing", State: lifecycle.SandboxRunning, Transition: e2btest.Pausing, StartedAt: now, EndAt: now.Add(time.Hour)})
	srv.Put(e2btest.Sandbox{ID: "killing", State: lifecycle.SandboxRunning, Transition: e2btest.Killing, StartedAt: now, EndAt: now.Add(time.Hour)})
	var got map[string]any
	if call(t, srv, "GET", "/sandboxes/pausing", "", &got); got["state"] != "paused" {
		t.Errorf("pausing reads as %v, want paused", got["state"])
	}
	if st, _ := call(t, srv, "POST", "/sandboxes/pausing/timeout", `{"timeout":60}`, nil); st != http.StatusConflict {
		t.Errorf("set timeout while pausing: %d, want 409", st)
	}
	if st, _ := call(t, srv, "GET", "/sandboxes/killing", "", nil); st != http.StatusNotFound {
		t.Errorf("get while killing: %d, want 404", st)
	}
	st, b := call(t, srv, "POST", "/sandboxes/killing/pause", "", nil)
	if st != http.StatusConflict || !strings.Contains(b, "killing") {
		t.Errorf("pause while killing: %d %s, want 409 naming killing", st, b)
	}
	if st, _ := call(t, srv, "POST", "/sandboxes/killing/timeout", `{"timeout":60}`, nil); st != http.StatusConflict {
		t.Errorf("set timeout while killing: %d, want 409", st)
	}
}

func TestFakeListNewestFirstLimitClamped(t *testing.T) {
	srv := e2btest.NewServer(t)
	var ids []string
	for range 3 {
		ids = append(ids, create(t, srv, `{"templateID":"base"}`)["sandboxID"].(string))
	}
	var list []map[string]any
	if st, b := call(t, srv, "GET", "/v2/sandboxes?limit=500", "", &list); st != http.StatusOK {
		t.Fatalf("limit 500: %d %s, want 200 (clamped)", st, b)
	}
	var got []string
	for _, it := range list {
		got = append(got, it["sandboxID"].(string))
	}
	if want := ids[2] + "," + ids[1] + "," + ids[0]; strings.Join(got, ",") != want {
		t.Errorf("list order = %v, want newest first %s", got, want)
	}
}

func TestFakeMetadataFilterDecodedThreeTimes(t *testing.T) {
	srv := e2btest.NewServer(t)
	want := create(t, srv, `{"templateID":"base","metadata":{"note":"x&y=z"}}`)["sandboxID"].(string)
	create(t, srv, `{"templateID":"base","metadata":{"note":"x","y":"z"}}`)
	var list []map[string]any
	// Exactly what E2B's JS SDK 2.51.0 sends for {note: "x&y=z"}.
	if st, b := call(t, srv, "GET", "/v2/sandboxes?metadata=note%3Dx%252526y%25253Dz", "", &list); st != http.StatusOK {
		t.Fatalf("list: %d %s", st, b)
	}
	if len(list) != 1 || list[0]["sandboxID"] != want {
		t.Errorf("list by the SDK's filter = %v, want only %s", list, want)
	}
}

func TestFakeHealthWithoutToken(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base"}`)["sandboxID"].(string)
	resp, err := http.Get(srv.EnvdURL(id, "") + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("envd /health without a token: %d, want 204", resp.StatusCode)
	}
}

// TestFakeSDKShapes: what E2B's JS SDK 2.51.0 relies on, found by running it
// against the fake: connect without a body, get's lifecycle.
func TestFakeSDKShapes(t *testing.T) {
	srv := e2btest.NewServer(t)
	id := create(t, srv, `{"templateID":"base","timeout":60,"autoPause":true,"autoResume":{"enabled":true}}`)["sandboxID"].(string)
	if st, b := call(t, srv, "POST", "/v2/sandboxes/"+id+"/connect", "", nil); st != http.StatusOK {
		t.Errorf("connect without a body: %d %s, want 200", st, b)
	}
	got, _ := srv.Sandbox(id)
	if want := srv.Clock.Now().Add(300 * time.Second); !got.EndAt.Equal(want) {
		t.Errorf("endAt after a bodiless connect = %v, want %v", got.EndAt, want)
	}
	var info struct {
		Lifecycle struct {
			AutoResume bool   `json:"autoResume"`
			OnTimeout  string `json:"onTimeout"`
		} `json:"lifecycle"`
	}
	call(t, srv, "GET", "/sandboxes/"+id, "", &info)
	if !info.Lifecycle.AutoResume || info.Lifecycle.OnTimeout != "pause" {
		t.Errorf("lifecycle = %+v, want autoResume true, onTimeout pause", info.Lifecycle)
	}
}

// `sandman fake e2b` takes the sandbox faults on its control route: a
// sandbox deleted there is gone for the API.
func TestControlRouteDeletesASandboxBehindTheClientsBack(t *testing.T) {
	srv := e2btest.New(e2btest.Config{})
	srv.Put(e2btest.Sandbox{ID: "isbx1", State: lifecycle.SandboxRunning, StartedAt: time.Now(), EndAt: time.Now().Add(time.Hour)})
	h := srv.Handler()
	send := func(method, path, body string) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("X-API-Key", e2btest.APIKey)
		h.ServeHTTP(w, r)
		return w.Code
	}
	if got := send("GET", "/sandboxes/isbx1", ""); got != 200 {
		t.Fatalf("GET before = %d", got)
	}
	if got := send("POST", "/_fake/sandboxes/isbx1/faults", `{"fault":"gone"}`); got != 204 {
		t.Fatalf("inject = %d", got)
	}
	if got := send("GET", "/sandboxes/isbx1", ""); got != 404 {
		t.Errorf("GET after gone = %d, want 404", got)
	}
}
