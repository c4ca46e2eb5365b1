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

// TestCommandLogsAndWaitReadAnExitedCommand: ?wait=true answers once the
// command has exited, and its logs endpoint streams its output as NDJSON
// {"stream","data"} lines, as the SDK's wait() and stderr() read them.
func TestCommandLogsAndWaitReadAnExitedCommand(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	_, _, out := call(t, f, "POST", "/v3/sandboxes", createOK, nil)
	session := out["session"].(map[string]any)["id"].(string)
	_, _, out = call(t, f, "POST", "/v2/sandboxes/sessions/"+session+"/cmd", `{"command":"sh","args":["-c","exit 3"]}`, nil)
	id := out["command"].(map[string]any)["id"].(string)
	status, _, out := call(t, f, "GET", "/v2/sandboxes/sessions/"+session+"/cmd/"+id+"?wait=true", "", nil)
	if code, _ := out["command"].(map[string]any)["exitCode"].(float64); status != 200 || code != 3 {
		t.Errorf("wait answered %d %v; want exit code 3", status, out)
	}
	req, _ := http.NewRequest("GET", f.HTTP.URL+"/v2/sandboxes/sessions/"+session+"/cmd/"+id+"/logs?teamId="+verceltest.DefaultTeamID, nil)
	req.Header.Set("Authorization", "Bearer "+verceltest.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/x-ndjson" {
		t.Fatalf("logs answered %d %s, want 200 application/x-ndjson", resp.StatusCode, ct)
	}
	var lines []verceltest.LogLine
	for dec := json.NewDecoder(resp.Body); dec.More(); {
		var l verceltest.LogLine
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 2 || lines[1].Stream != "stderr" || lines[1].Data != "exited with 3\n" {
		t.Errorf("logs = %+v, want a start line then stderr \"exited with 3\"", lines)
	}
}

// TestPreviewServedByHost: a request whose Host is <subdomain>.vercel.run
// (what the SDK's domain(port) builds) is that route's preview.
func TestPreviewServedByHost(t *testing.T) {
	f := verceltest.MustStart(t, verceltest.Config{})
	_, _, out := call(t, f, "POST", "/v3/sandboxes", createOK, nil)
	sub := out["routes"].([]any)[0].(map[string]any)["subdomain"].(string)
	req, _ := http.NewRequest("GET", f.HTTP.URL+"/", nil)
	req.Host = sub + "." + verceltest.PreviewDomain
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = jsonDecode(resp, &m)
	if resp.StatusCode != 502 || errCode(m) != "SANDBOX_NOT_LISTENING" {
		t.Errorf("preview by Host = %d %v, want 502 SANDBOX_NOT_LISTENING", resp.StatusCode, m)
	}
}
