package localstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// Env of this test binary run as an app command: serve HTTP on $PORT
// after a boot delay in milliseconds, as a dev server after its install.
const (
	envServeApp = "POOLTEST_SERVE"
	envBootMS   = "POOLTEST_BOOT_MS"
)

// TestMain lets this test binary be a local sandbox child (the local
// provider runs "<executable> sandbox …") and an app command.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == "sandbox":
		if err := local.RunSandbox(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(envServeApp) == "1":
		ms, _ := strconv.Atoi(os.Getenv(envBootMS))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "app ok")
		}))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// stackClient calls a running local stack with the dev key.
type stackClient struct {
	t    *testing.T
	base string
	key  string
}

func (c stackClient) do(method, path string, body any, out any) int {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	req.Header.Set("x-api-key", c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	if resp.StatusCode >= 300 && method != http.MethodDelete {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode
}

func (c stackClient) pool() api.Pool {
	var l api.PoolList
	c.do(http.MethodGet, "/v1/pools", nil, &l)
	if len(l.Pools) != 1 {
		c.t.Fatalf("pools = %+v, want one", l.Pools)
	}
	return l.Pools[0]
}

// awaitPool waits up to within until the pool has at least ready spares.
func (c stackClient) awaitPool(ready int, within time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		p := c.pool()
		if p.Ready >= ready {
			return time.Since(start)
		}
		if time.Since(start) > within {
			c.t.Fatalf("pool has %d ready (%d making, last error %v) after %s, want %d", p.Ready, p.Making, p.LastError, within, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createReady creates a session of app and returns it once its app is
// ready, with the time from the create's request to ready.
func (c stackClient) createReady(app api.App) (api.Session, time.Duration) {
	c.t.Helper()
	start := time.Now()
	var s api.Session
	c.do(http.MethodPost, "/v1/sessions", map[string]any{"template": "base", "app": app}, &s)
	for s.Readiness == nil || *s.Readiness == "starting" {
		if time.Since(start) > time.Minute {
			c.t.Fatalf("session %s not ready after a minute: %+v", s.ID, s)
		}
		time.Sleep(10 * time.Millisecond)
		c.do(http.MethodGet, "/v1/sessions/"+s.ID, nil, &s)
	}
	if *s.Readiness != "ready" {
		c.t.Fatalf("session %s readiness %s: %v", s.ID, *s.Readiness, s.ReadinessDetail)
	}
	return s, time.Since(start)
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// TestLocalStackPoolScenario is the `make run` scenario of docs/POOLS.md on
// the real local stack (DynamoDB Local, the local process provider, the
// in-process readiness worker): a pool of size 2, tier paused, for a
// template with an app whose server takes a second to boot. Two spares are
// ready within 60 s of boot; 10 creates from the pool (each answering
// from_pool) reach ready faster, at the median, than 10 cold creates of the
// same app in the same run; after each claim the pool is back to 2 within
// 60 s.
func TestLocalStackPoolScenario(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	if testing.Short() {
		t.Skip("the local stack scenario takes about a minute")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const boot = "1000" // ms: the app's "install and dev server start"
	appEnv := map[string]string{envServeApp: "1", envBootMS: boot}
	pooled := api.App{Port: 3000, StartCommand: "exec '" + exe + "'", Env: appEnv, ReadyPath: "/", ReadyTimeoutSeconds: 60}
	cold := pooled
	cold.Env = map[string]string{envServeApp: "1", envBootMS: boot, "POOLTEST_COLD": "1"} // same app, no pool
	poolsJSON, _ := json.Marshal([]map[string]any{{"template": "base", "size": 2, "tier": "paused", "app": pooled}})

	stateDir := t.TempDir()
	vars := map[string]string{
		envnames.DynamoEndpoint: endpoint,
		envnames.Table:          "pools-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		envnames.Addr:           "127.0.0.1:0",
		envnames.StateDir:       stateDir,
		envnames.Provider:       local.ProviderName,
		envnames.Pools:          string(poolsJSON),
		envnames.DevAPIKey:      "sk_poolscenariopoolscenario234567",
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- localstack.Run(ctx, localstack.Config{Getenv: func(k string) string { return vars[k] }, Out: io.Discard,
			Log: slog.New(slog.DiscardHandler), Ready: func(u string) { ready <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("local stack: %v", err)
		}
		killSandboxes(t, filepath.Join(stateDir, "sandboxes"))
	})
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("local stack did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("local stack did not start within 2 min")
	}
	c := stackClient{t: t, base: base, key: vars[envnames.DevAPIKey]}

	filled := c.awaitPool(2, time.Minute)
	t.Logf("2 spares ready %s after boot", filled.Round(time.Millisecond))

	var fromPool, coldTimes []time.Duration
	for i := range 10 {
		c.awaitPool(1, time.Minute)
		s, d := c.createReady(pooled)
		if !s.FromPool {
			t.Fatalf("pool create %d: from_pool false", i)
		}
		fromPool = append(fromPool, d)
		s2, d2 := c.createReady(cold)
		if s2.FromPool {
			t.Fatalf("cold create %d: from_pool true", i)
		}
		coldTimes = append(coldTimes, d2)
		for _, id := range []string{s.ID, s2.ID} {
			c.do(http.MethodDelete, "/v1/sessions/"+id, nil, nil)
		}
	}
	back := c.awaitPool(2, time.Minute)
	t.Logf("create → ready p50: from the pool %s, cold %s (10 each); pool back to 2 in %s",
		p50(fromPool).Round(time.Millisecond), p50(coldTimes).Round(time.Millisecond), back.Round(time.Millisecond))
	if p50(fromPool) >= p50(coldTimes) {
		t.Errorf("p50 create → ready from the pool %s, cold %s: want the pool faster", p50(fromPool), p50(coldTimes))
	}
	if p := c.pool(); p.Hits != 10 || p.Misses != 0 || p.Failed != 0 {
		t.Errorf("pool = %+v, want 10 hits, no miss, no failure", p)
	}
	var list api.SessionList
	c.do(http.MethodGet, "/v1/sessions?limit=100", nil, &list)
	for _, s := range list.Sessions {
		if s.State != string(lifecycle.StateKilled) {
			t.Errorf("session %s is %s: a spare listed as a session, or a delete lost", s.ID, s.State)
		}
	}
}

// killSandboxes kills every sandbox the local provider left in dir (the
// spares; a stopped stack keeps its sandboxes).
func killSandboxes(t *testing.T, dir string) {
	exe, _ := os.Executable()
	p, err := local.New(local.Config{Dir: dir, Command: []string{exe, "sandbox"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Errorf("local provider for cleanup: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := p.List(ctx, lifecycle.ListRequest{})
	if err != nil {
		t.Errorf("list sandboxes for cleanup: %v", err)
		return
	}
	for _, sb := range page.Sandboxes {
		// A kill can race the app's exit files (a directory not empty yet):
		// the next try finds the processes gone.
		for try := 0; ; try++ {
			err := p.Kill(ctx, sb.ID)
			if err == nil || strings.Contains(err.Error(), "gone") {
				break
			}
			if try == 10 {
				t.Errorf("kill %s: %v", sb.ID, err)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
