package e2btest_test

import (
	"bufio"
	"encoding/binary"
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

// oneAddress serves a fake on one address as `sandman fake e2b` does, on a
// manual clock, and creates a sandbox there; it returns the base URL, the
// clock, the sandbox id and its envd access token.
func oneAddress(t *testing.T) (*e2btest.Server, string, *lifecycle.ManualClock, string, string) {
	t.Helper()
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := e2btest.New(e2btest.Config{Now: clock.Now, BootDelay: time.Second})
	hs := httptest.NewServer(f.Handler())
	t.Cleanup(func() { f.Close(); hs.Close() })
	req, _ := http.NewRequest("POST", hs.URL+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", e2btest.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb struct {
		SandboxID, EnvdAccessToken string
	}
	if err := json.NewDecoder(resp.Body).Decode(&sb); err != nil || sb.SandboxID == "" {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	return f, hs.URL, clock, sb.SandboxID, sb.EnvdAccessToken
}

// envd sends a request to envd the way E2B's SDK does with E2B_SANDBOX_URL
// set: to the base URL, the sandbox named by E2b-Sandbox-Id and
// E2b-Sandbox-Port headers.
func envd(t *testing.T, base, id, token, path, contentType string, body io.Reader, hdr map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+path, body)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	req.Header.Set("X-Access-Token", token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func startFrame(t *testing.T, msg string) io.Reader {
	t.Helper()
	b := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:5], uint32(len(msg)))
	copy(b[5:], msg)
	return strings.NewReader(string(b))
}

// readFrame reads one Connect envelope: its flags and message.
func readFrame(t *testing.T, r *bufio.Reader) (byte, string) {
	t.Helper()
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		t.Fatalf("read a frame: %v", err)
	}
	msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(r, msg); err != nil {
		t.Fatalf("read a frame's message: %v", err)
	}
	return head[0], string(msg)
}

// previewAt fetches the preview of port the way a browser reaches
// https://<port>-<id>.<domain>: the fake's address, that Host.
func previewAt(t *testing.T, base, id, port string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Host = port + "-" + id + "." + e2btest.Domain
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStartStreamStaysOpenUntilTheProcessIsKilled(t *testing.T) {
	_, base, _, id, token := oneAddress(t)
	resp := envd(t, base, id, token, "/process.Process/Start", "application/connect+json",
		startFrame(t, `{"process":{"cmd":"/bin/bash","args":["-l","-c","serve"],"envs":{"PORT":"3000"}},"tag":"app"}`), nil)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if flags, msg := readFrame(t, r); flags != 0 || !strings.Contains(msg, `"start":{"pid":`) {
		t.Fatalf("first frame: %d %s, want the start event", flags, msg)
	}
	kill := envd(t, base, id, token, "/process.Process/SendSignal", "application/json",
		strings.NewReader(`{"process":{"tag":"app"},"signal":"SIGNAL_SIGKILL"}`), nil)
	kill.Body.Close()
	if kill.StatusCode != 200 {
		t.Fatalf("SendSignal by tag: %d, want 200", kill.StatusCode)
	}
	if flags, msg := readFrame(t, r); flags != 0 || !strings.Contains(msg, `"end":`) {
		t.Errorf("after the kill: %d %s, want the end event", flags, msg)
	}
	if flags, _ := readFrame(t, r); flags != 0x02 {
		t.Errorf("after the end event: flags %d, want the end of the stream", flags)
	}
	again := envd(t, base, id, token, "/process.Process/SendSignal", "application/json",
		strings.NewReader(`{"process":{"tag":"app"},"signal":"SIGNAL_SIGKILL"}`), nil)
	again.Body.Close()
	if again.StatusCode != http.StatusNotFound {
		t.Errorf("a second kill: %d, want 404 (Connect not_found)", again.StatusCode)
	}
}

func TestConnectTimeoutKillsTheProcessAndItsPreview(t *testing.T) {
	f, base, clock, id, token := oneAddress(t)
	resp := envd(t, base, id, token, "/process.Process/Start", "application/connect+json",
		startFrame(t, `{"process":{"cmd":"/bin/bash","args":["-l","-c","serve"],"envs":{"PORT":"3000"}}}`),
		map[string]string{"Connect-Timeout-Ms": "60000"})
	readFrame(t, bufio.NewReader(resp.Body))
	resp.Body.Close() // a background client drops the stream
	if st, body := previewAt(t, base, id, "3000"); st != http.StatusBadGateway || !strings.Contains(body, e2btest.PortClosedMessage) {
		t.Errorf("while it boots: %d %s, want 502 port not open", st, body)
	}
	clock.Advance(2 * time.Second)
	if st, body := previewAt(t, base, id, "3000"); st != http.StatusOK {
		t.Errorf("after the boot delay: %d %s, want 200", st, body)
	}
	clock.Advance(time.Minute)
	if n := len(f.Processes(id)); n != 0 {
		t.Errorf("%d processes after Connect-Timeout-Ms passed, want 0 (envd kills it)", n)
	}
	if st, body := previewAt(t, base, id, "3000"); st != http.StatusBadGateway || !strings.Contains(body, `"port":3000`) {
		t.Errorf("after the timeout killed it: %d %s, want 502 port not open", st, body)
	}
}

func TestSandboxHeadersRouteToEnvdOnlyOnALocalHost(t *testing.T) {
	_, base, _, id, token := oneAddress(t)
	list := envd(t, base, id, token, "/process.Process/List", "application/json", strings.NewReader(`{}`), nil)
	list.Body.Close()
	if list.StatusCode != 200 {
		t.Errorf("List by E2b-Sandbox-Id on the base address: %d, want 200", list.StatusCode)
	}
	req, _ := http.NewRequest("POST", base+"/process.Process/List", strings.NewReader(`{}`))
	req.Host = "api." + e2btest.Domain
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", "49983")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Error("the sandbox headers routed on a named host that is not sandbox.*; E2B's proxy reads them only on localhost, an IP or sandbox.*")
	}
}

func TestAnExitCommandEndsAtOnceWithItsCode(t *testing.T) {
	f, base, _, id, token := oneAddress(t)
	resp := envd(t, base, id, token, "/process.Process/Start", "application/connect+json",
		startFrame(t, `{"process":{"cmd":"/bin/bash","args":["-l","-c","exit 3"]}}`), nil)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	readFrame(t, r) // start
	if flags, msg := readFrame(t, r); flags != 0 || !strings.Contains(msg, `"exitCode":3`) || !strings.Contains(msg, `"exited":true`) {
		t.Errorf("after the start: %d %s, want the end event with exit code 3", flags, msg)
	}
	if flags, _ := readFrame(t, r); flags != 0x02 {
		t.Errorf("flags %d, want the end of the stream", flags)
	}
	if n := len(f.Processes(id)); n != 0 {
		t.Errorf("%d processes listed, want none (it exited)", n)
	}
}
