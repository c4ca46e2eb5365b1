package verceltest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// previewStatus GETs a route's URL and returns its status and error code.
func previewStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	code := ""
	if resp.StatusCode >= 400 {
		var m map[string]any
		_ = jsonDecode(resp, &m)
		code = errCode(m)
	}
	return resp.StatusCode, code
}

// TestCommandListensAfterBootDelayUntilKilled: a port's preview answers 502
// SANDBOX_NOT_LISTENING until a command with that PORT has booted, 200
// then, 502 again once the command is killed, and 410 SANDBOX_STOPPED
// after the session stopped.
func TestCommandListensAfterBootDelayUntilKilled(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{BootDelay: 2 * time.Second})
	status, _, out := call(t, f, "POST", "/v3/sandboxes", createOK, nil)
	if status != 200 {
		t.Fatalf("create answered %d %v", status, out)
	}
	session := out["session"].(map[string]any)["id"].(string)
	url := out["routes"].([]any)[0].(map[string]any)["url"].(string)
	if st, code := previewStatus(t, url); st != 502 || code != "SANDBOX_NOT_LISTENING" {
		t.Errorf("preview before a command = %d %s, want 502 SANDBOX_NOT_LISTENING", st, code)
	}
	status, _, out = call(t, f, "POST", "/v2/sandboxes/sessions/"+session+"/cmd",
		`{"command":"sh","args":["-c","npm run dev"],"env":{"PORT":"3000"},"sudo":false}`, nil)
	cmd, _ := out["command"].(map[string]any)
	if status != 200 || cmd["id"] == nil || cmd["exitCode"] != nil {
		t.Fatalf("run command answered %d %v; want a running command", status, out)
	}
	id := cmd["id"].(string)
	if st, _ := previewStatus(t, url); st != 502 {
		t.Errorf("preview during the boot delay = %d, want 502", st)
	}
	f.Clock.Advance(2 * time.Second)
	if st, _ := previewStatus(t, url); st != 200 {
		t.Errorf("preview after the boot delay = %d, want 200", st)
	}
	status, _, out = call(t, f, "POST", "/v2/sandboxes/sessions/"+session+"/cmd/"+id+"/kill", `{"signal":15}`, nil)
	if code, _ := out["command"].(map[string]any)["exitCode"].(float64); status != 200 || code != 143 {
		t.Errorf("kill answered %d %v; want exit code 143", status, out)
	}
	if st, _ := previewStatus(t, url); st != 502 {
		t.Errorf("preview after the kill = %d, want 502", st)
	}
	if status, _, out = call(t, f, "POST", "/v2/sandboxes/sessions/"+session+"/stop", "", nil); status != 200 {
		t.Fatalf("stop answered %d %v", status, out)
	}
	if st, code := previewStatus(t, url); st != 410 || code != "SANDBOX_STOPPED" {
		t.Errorf("preview after the stop = %d %s, want 410 SANDBOX_STOPPED", st, code)
	}
	if status, _, out = call(t, f, "GET", "/v2/sandboxes/sessions/"+session+"/cmd/"+id, "", nil); status != 410 {
		t.Errorf("get of a stopped session's command answered %d %v, want 410", status, out)
	}
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
