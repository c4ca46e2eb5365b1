package verceltest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// call sends one request to the fake with the right token and team unless
// the path carries its own query, and decodes the answer into a map.
func call(t *testing.T, f *verceltest.Test, method, path, body string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	url := f.HTTP.URL + path + sep + "teamId=" + verceltest.DefaultTeamID
	if hdr != nil && hdr["noteam"] != "" {
		url = f.HTTP.URL + path
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+verceltest.DefaultToken)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s answered %d with non-JSON %q", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, out
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

const createOK = `{"projectId":"prj_sandmantest","name":"box","timeout":60000,"ports":[3000],"tags":{"k":"v"}}`

func TestServerRefusals(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"NoToken", "GET", "/v2/sandboxes?project=prj_sandmantest", "", map[string]string{"Authorization": ""}, 403, "forbidden"},
		{"NoTeam", "GET", "/v2/sandboxes?project=prj_sandmantest", "", map[string]string{"noteam": "1"}, 403, "forbidden"},
		{"NoProject", "GET", "/v2/sandboxes", "", nil, 400, "bad_request"},
		{"UnknownProject", "GET", "/v2/sandboxes/box?projectId=prj_other", "", nil, 404, "not_found"},
		{"UnknownField", "POST", "/v3/sandboxes", `{"projectId":"prj_sandmantest","Timeout":1000}`, nil, 400, "bad_request"},
		{"BadName", "POST", "/v3/sandboxes", `{"projectId":"prj_sandmantest","name":"a b"}`, nil, 400, "bad_request"},
		{"TimeoutPastPlan", "POST", "/v3/sandboxes", `{"projectId":"prj_sandmantest","timeout":2700001}`, nil, 400, "bad_request"},
		{"SixTags", "POST", "/v3/sandboxes", `{"projectId":"prj_sandmantest","tags":{"a":"1","b":"1","c":"1","d":"1","e":"1","f":"1"}}`, nil, 400, "bad_request"},
		{"LimitTooBig", "GET", "/v2/sandboxes?project=prj_sandmantest&limit=51", "", nil, 400, "bad_request"},
		{"TwoTags", "GET", "/v2/sandboxes?project=prj_sandmantest&tags=a:1&tags=b:2", "", nil, 400, "bad_request"},
		{"NamePrefixWithoutName", "GET", "/v2/sandboxes?project=prj_sandmantest&namePrefix=x", "", nil, 400, "bad_request"},
		{"BadCursor", "GET", "/v2/sandboxes?project=prj_sandmantest&cursor=zzz", "", nil, 400, "bad_request"},
		{"UnknownSession", "POST", "/v2/sandboxes/sessions/sbx_nope/stop", "", nil, 404, "not_found"},
		{"UnknownRoute", "GET", "/v1/sandboxes", "", nil, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := call(t, f, tc.method, tc.path, tc.body, tc.hdr)
			if status != tc.status || errCode(body) != tc.code {
				t.Errorf("answered %d %v, want %d %s", status, body, tc.status, tc.code)
			}
		})
	}
}

func TestServerLifecycle(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	status, _, body := call(t, f, "POST", "/v3/sandboxes", createOK, nil)
	if status != 200 {
		t.Fatalf("create answered %d %v", status, body)
	}
	sb := body["sandbox"].(map[string]any)
	first := sb["currentSessionId"].(string)
	if sb["persistent"] != true || sb["status"] != "running" {
		t.Errorf("created sandbox %v, want persistent and running (the service's default)", sb)
	}
	if _, null := sb["currentSnapshotId"]; null {
		t.Errorf("currentSnapshotId present before any snapshot: %v", sb)
	}
	if status, _, body := call(t, f, "POST", "/v3/sandboxes", createOK, nil); status != 400 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "GET /sandboxes/:name") {
		t.Errorf("second create answered %d %v, want 400 naming GET /sandboxes/:name", status, body)
	}
	// The session is extended within the plan maximum, then stopped by
	// its deadline on the clock.
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+first+"/extend-timeout", `{"duration":60000}`, nil); status != 200 ||
		body["session"].(map[string]any)["timeout"].(float64) != 120000 {
		t.Errorf("extend answered %d %v, want timeout 120000", status, body)
	}
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+first+"/extend-timeout", `{"duration":2700000}`, nil); status != 400 {
		t.Errorf("extend past the plan answered %d %v, want 400", status, body)
	}
	f.Clock.Advance(2 * time.Minute)
	_, _, body = call(t, f, "GET", "/v2/sandboxes/box?projectId=prj_sandmantest", "", nil)
	if got := body["sandbox"].(map[string]any); got["status"] != "stopped" || got["currentSnapshotId"] == nil {
		t.Errorf("after the deadline: %v, want stopped with a snapshot", got)
	}
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+first+"/extend-timeout", `{"duration":60000}`, nil); status != 410 || errCode(body) != "sandbox_stopped" {
		t.Errorf("extend of a stopped session answered %d %v, want 410 sandbox_stopped", status, body)
	}
	status, _, body = call(t, f, "GET", "/v2/sandboxes/box?projectId=prj_sandmantest&resume=true", "", nil)
	second := body["sandbox"].(map[string]any)["currentSessionId"]
	if status != 200 || body["resumed"] != true || second == first {
		t.Errorf("resume answered %d %v, want resumed with a new session", status, body)
	}
	status, _, body = call(t, f, "POST", "/v2/sandboxes/sessions/"+second.(string)+"/stop", "", nil)
	if status != 200 || body["snapshot"] == nil || body["session"].(map[string]any)["status"] != "stopped" {
		t.Errorf("stop answered %d %v, want the stopped session and its snapshot", status, body)
	}
	if status, _, body := call(t, f, "POST", "/v2/sandboxes/sessions/"+second.(string)+"/stop", "", nil); status != 200 || body["snapshot"] != nil {
		t.Errorf("second stop answered %d %v, want 200 without a snapshot", status, body)
	}
	f.Clock.Advance(verceltest.DefaultSnapshotExpiration + time.Second)
	if status, _, body := call(t, f, "GET", "/v2/sandboxes/box?projectId=prj_sandmantest&resume=true", "", nil); status != 410 || errCode(body) != "snapshot_not_found" {
		t.Errorf("resume after the snapshot expired answered %d %v, want 410 snapshot_not_found", status, body)
	}
	if status, _, _ := call(t, f, "DELETE", "/v2/sandboxes/box?projectId=prj_sandmantest", "", nil); status != 200 {
		t.Errorf("delete answered %d", status)
	}
	if status, _, _ := call(t, f, "DELETE", "/v2/sandboxes/box?projectId=prj_sandmantest", "", nil); status != 404 {
		t.Errorf("second delete answered %d, want 404", status)
	}
}

func TestServerFaults(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	f.FailNext(verceltest.Fault{Status: 429, RetryAfter: "3"}, verceltest.Fault{Status: 503})
	status, hdr, body := call(t, f, "GET", "/v2/sandboxes?project=prj_sandmantest", "", nil)
	if status != 429 || hdr.Get("Retry-After") != "3" || errCode(body) != "rate_limited" {
		t.Errorf("first answered %d %v %v, want 429 with Retry-After 3", status, hdr, body)
	}
	if status, _, _ := call(t, f, "POST", "/v3/sandboxes", createOK, nil); status != 503 {
		t.Errorf("second answered %d, want 503 (any operation)", status)
	}
	if status, _, body := call(t, f, "GET", "/v2/sandboxes?project=prj_sandmantest", "", nil); status != 200 ||
		!hasNull(body["pagination"].(map[string]any), "next") {
		t.Errorf("third answered %d %v, want 200 with next null", status, body)
	}
	if got, want := f.Requests(verceltest.OpList), 2; got != want {
		t.Errorf("list requests = %d, want %d", got, want)
	}
	if got := f.Boots(); got != 0 {
		t.Errorf("boots = %d, want 0 (the create was faulted)", got)
	}
}

// hasNull reports whether m holds key with the value null (present, not
// absent: the SDK insists on it).
func hasNull(m map[string]any, key string) bool {
	v, ok := m[key]
	return ok && v == nil
}

func TestListenAndServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- verceltest.ListenAndServe(ctx, "127.0.0.1:0", verceltest.Config{}, func(base string, _ *verceltest.Server) { ready <- base })
	}()
	base := <-ready
	req, _ := http.NewRequest("POST", base+"/v3/sandboxes?teamId="+verceltest.DefaultTeamID, strings.NewReader(createOK))
	req.Header.Set("Authorization", "Bearer "+verceltest.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Routes []verceltest.RouteJSON `json:"routes"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || len(out.Routes) != 1 || !strings.HasPrefix(out.Routes[0].URL, base+"/_preview/") {
		t.Fatalf("create answered %d %+v; want a route on %s/_preview/", resp.StatusCode, out, base)
	}
	// Nothing runs in the new session, so its route is not listened on.
	page, err := http.Get(out.Routes[0].URL)
	if err != nil || page.StatusCode != http.StatusBadGateway {
		t.Fatalf("preview before any command: %v %v; want 502 SANDBOX_NOT_LISTENING", page, err)
	}
	_ = page.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe = %v, want nil after cancel", err)
	}
}
