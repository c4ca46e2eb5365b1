package localstack_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// syncBuffer is a bytes.Buffer safe for the stack's writer and the test's
// reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runStack starts localstack.Run with vars as its whole environment and
// returns the API's base URL, the banner written so far, and a func that
// stops the stack (and waits for it; also run at cleanup). A stopped stack
// leaves its sandboxes to the caller.
func runStack(t *testing.T, vars map[string]string) (base string, banner *syncBuffer, stop func()) {
	t.Helper()
	return runStackComposed(t, vars, nil)
}

// runStackComposed is runStack with compose as the stack's Config.Compose
// (nil: none).
func runStackComposed(t *testing.T, vars map[string]string, compose func(*app.Deps)) (base string, banner *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	banner = &syncBuffer{}
	env := maps.Clone(vars)
	go func() {
		done <- localstack.Run(ctx, localstack.Config{Getenv: func(k string) string { return env[k] }, Out: banner,
			Log: slog.New(slog.DiscardHandler), Ready: func(u string) { ready <- u }, Compose: compose})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("local stack: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case base = <-ready:
	case err := <-done:
		done <- err // for stop
		t.Fatalf("local stack did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("local stack did not start within 2 min")
	}
	return base, banner, stop
}

// stackVars is the environment of a local stack on the test's DynamoDB
// Local (a table of its own) with its own state folder.
func stackVars(t *testing.T) map[string]string {
	t.Helper()
	endpoint := os.Getenv(envnames.DynamoEndpoint)
	if endpoint == "" {
		t.Skip("DYNAMODB_ENDPOINT is not set: this test needs DynamoDB Local (make test starts it)")
	}
	return map[string]string{
		envnames.DynamoEndpoint: endpoint,
		envnames.Table:          "newcomer-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		envnames.Addr:           "127.0.0.1:0",
		envnames.StateDir:       t.TempDir(),
		envnames.Provider:       local.ProviderName,
		envnames.DevAPIKey:      "sk_newcomernewcomernewcomer234567",
	}
}

// TestMakeRunBannerNamesTheConsoleURL: the banner `make run` prints names
// the console's URL, and that URL serves the console.
func TestMakeRunBannerNamesTheConsoleURL(t *testing.T) {
	base, banner, _ := runStack(t, stackVars(t))
	url := base + "/console/"
	if !strings.Contains(banner.String(), url) {
		t.Fatalf("banner does not name %s:\n%s", url, banner)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<html") {
		t.Errorf("GET %s = %d %.80q, want 200 and the console page", url, resp.StatusCode, body)
	}
}

// TestMakeRunStartsDynamoDBLocalOnSANDMAN_DDB_PORT: with SANDMAN_DDB_PORT
// set, the DynamoDB Local the stack starts listens on that port (the banner
// names it and it answers there); a value that is not a port stops the
// boot naming the variable.
func TestMakeRunStartsDynamoDBLocalOnSANDMAN_DDB_PORT(t *testing.T) {
	vars := stackVars(t)
	delete(vars, envnames.DynamoEndpoint) // the stack starts its own
	vars[envnames.InMemory] = "1"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	vars[envnames.DDBPort] = strconv.Itoa(port)

	_, banner, _ := runStack(t, vars)
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(banner.String(), "DynamoDB Local   "+endpoint+" ") {
		t.Errorf("banner does not name DynamoDB Local at %s:\n%s", endpoint, banner)
	}
	resp, err := http.Get(endpoint + "/")
	if err != nil {
		t.Fatalf("DynamoDB Local does not answer on %s: %v", endpoint, err)
	}
	resp.Body.Close()

	bad := stackVars(t)
	delete(bad, envnames.DynamoEndpoint)
	bad[envnames.DDBPort] = "99999"
	err = localstack.Run(t.Context(), localstack.Config{Getenv: func(k string) string { return bad[k] }, Out: io.Discard,
		Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), envnames.DDBPort) {
		t.Errorf("Run with %s=99999 = %v, want an error naming the variable", envnames.DDBPort, err)
	}
}

// sandboxProcesses returns the pids of the processes whose working
// directory is under dir: a local sandbox runs in its own folder, and so
// do its commands (below its files folder).
func sandboxProcesses(t *testing.T, dir string) []string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, p := range procs {
		if cwd, err := os.Readlink(p + "/cwd"); err == nil && strings.HasPrefix(cwd, abs+string(filepath.Separator)) {
			pids = append(pids, filepath.Base(p))
		}
	}
	return pids
}

// awaitProcesses waits up to within until exactly n sandbox processes run
// under dir, and fails the test with what runs when they never do.
func awaitProcesses(t *testing.T, dir string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		pids := sandboxProcesses(t, dir)
		if len(pids) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sandbox processes under %s after %s (%v), want %d", len(pids), dir, within, pids, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poolStack is stackVars with a pool of two paused spares of the web
// template.
func poolStack(t *testing.T) map[string]string {
	vars := stackVars(t)
	vars[envnames.Pools] = `[{"template":"web","size":2,"tier":"paused"}]`
	return vars
}

// TestMakeResetAfterMakeRunWithAPoolLeavesNoSandboxProcess: `make reset`
// after a `make run` with a pool and a session kills every sandbox process
// of the state folder (spares, the session's) and removes the folder; while
// the stack runs it refuses and touches nothing.
func TestMakeResetAfterMakeRunWithAPoolLeavesNoSandboxProcess(t *testing.T) {
	vars := poolStack(t)
	state := vars[envnames.StateDir]
	base, _, stop := runStack(t, vars)
	t.Cleanup(func() { killSandboxes(t, filepath.Join(state, "sandboxes")) })
	c := stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}
	c.awaitPool(2, time.Minute)
	c.do(http.MethodPost, "/v1/sessions", map[string]any{"template": "base"}, nil) // no pool's: no refill
	awaitProcesses(t, state, 3, 10*time.Second)

	getenv := func(k string) string { return vars[k] }
	if _, _, err := localstack.Reset(t.Context(), getenv); err == nil || !strings.Contains(err.Error(), "Ctrl-C") {
		t.Errorf("reset while the stack runs = %v, want a refusal", err)
	}
	if n := len(sandboxProcesses(t, state)); n != 3 {
		t.Errorf("a refused reset left %d of 3 sandbox processes", n)
	}

	stop()
	killed, dir, err := localstack.Reset(t.Context(), getenv)
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	if killed != 3 || dir != state {
		t.Errorf("reset = %d killed in %s, want 3 in %s", killed, dir, state)
	}
	if pids := sandboxProcesses(t, state); len(pids) != 0 {
		t.Errorf("sandbox processes left after reset: %v", pids)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state folder after reset: %v, want removed", err)
	}
}

// TestMakeStopPausesEverySandboxAndKeepsItsData: `make stop` after `make
// run` pauses every running sandbox of the state folder (its process
// stopped, state T) and keeps the sandboxes, their files and the table's
// data; the next `make run` serves the same session again.
func TestMakeStopPausesEverySandboxAndKeepsItsData(t *testing.T) {
	vars := stackVars(t)
	state := vars[envnames.StateDir]
	sandboxes := filepath.Join(state, "sandboxes")
	base, _, stop := runStack(t, vars)
	t.Cleanup(func() { killSandboxes(t, sandboxes) })
	c := stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}
	var sess api.Session
	c.do(http.MethodPost, "/v1/sessions", map[string]any{"template": "web"}, &sess)
	stop()
	if sess.SandboxID == nil {
		t.Fatalf("session %s has no sandbox", sess.ID)
	}
	sandboxID := *sess.SandboxID

	n, err := localstack.Stop(t.Context(), func(k string) string { return vars[k] })
	if err != nil || n != 1 {
		t.Fatalf("stop = %d, %v; want 1 stopped", n, err)
	}
	p, err := local.New(local.Config{Dir: sandboxes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Get(t.Context(), sandboxID)
	if err != nil || sb.State != lifecycle.SandboxPaused {
		t.Fatalf("sandbox after stop = %+v, %v; want paused", sb, err)
	}
	if _, err := os.Stat(filepath.Join(sandboxes, sandboxID, "files", "index.html")); err != nil {
		t.Errorf("the sandbox's files after stop: %v", err)
	}

	base, _, _ = runStack(t, vars)
	c.base = base
	var again api.Session
	c.do(http.MethodGet, "/v1/sessions/"+sess.ID, nil, &again)
	if again.SandboxID == nil || *again.SandboxID != sandboxID {
		t.Errorf("after stop and run, session %s holds %v, want %s", sess.ID, again.SandboxID, sandboxID)
	}
}

// TestMakeRunDrainsTheSparesOfARemovedPoolAtBoot: a `make run` whose
// SANDMAN_POOLS no longer names a pool kills that pool's spares at boot.
func TestMakeRunDrainsTheSparesOfARemovedPoolAtBoot(t *testing.T) {
	vars := poolStack(t)
	state := vars[envnames.StateDir]
	t.Cleanup(func() { killSandboxes(t, filepath.Join(state, "sandboxes")) })
	base, _, stop := runStack(t, vars)
	stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}.awaitPool(2, time.Minute)
	stop()
	awaitProcesses(t, state, 2, 10*time.Second) // the spares outlive the stack

	delete(vars, envnames.Pools)
	runStack(t, vars)
	awaitProcesses(t, state, 0, 30*time.Second)
}
