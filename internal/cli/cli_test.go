package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/openapi/contract"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/routes"
)

// api is the real HTTP API (every apigw function behind the local API
// Gateway) over a fresh in-memory store (memstore) and the fake provider; every
// answer the CLI gets is checked against the OpenAPI document too.
type api struct {
	url   string
	prov  *fake.Provider
	clock *lifecycle.ManualClock
	other string // a key of another account
	// svc and jobs: the service's checkpoint jobs wait in jobs until a test
	// runs them (the provider keeps files and snapshots).
	svc  *lifecycle.Service
	jobs *reliability.Jobs
}

// MustAPI starts the API on an httptest server.
func MustAPI(tb testing.TB) *api {
	tb.Helper()
	store := memstore.New()
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	jobs := &reliability.Jobs{}
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: reliability.NewSnapshotProvider(prov, clock), Clock: clock,
		Policy: lifecycle.DefaultPolicy(), CheckpointJobs: jobs,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	ctx := tb.Context()
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID}); err != nil {
		tb.Fatal(err)
	}
	other, err := apigw.IssueAPIKey(ctx, store, "acct_other", clock.Now())
	if err != nil {
		tb.Fatal(err)
	}
	validator, err := contract.NewValidator(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tokens, err := clienttoken.New(clienttoken.KeySet{Signing: clienttoken.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))}}, clock)
	if err != nil {
		tb.Fatal(err)
	}
	gw := &localstack.Gateway{Functions: map[string]localstack.HTTPHandler{}}
	for _, fn := range []string{routes.Sessions, routes.Status, routes.Resume, routes.Pause, routes.Reconnect} {
		h, err := apigw.New(apigw.Config{Function: fn, Service: svc, Keys: store, Tokens: tokens, WSURL: "ws://127.0.0.1:1/v1/ws"})
		if err != nil {
			tb.Fatal(err)
		}
		gw.Functions[fn] = func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := h.Handle(ctx, ev)
			if verr := validator.Validate(ctx, contract.FromAPIGateway(ev, resp)); verr != nil {
				tb.Errorf("contract: %v", verr)
			}
			return resp, err
		}
	}
	srv := httptest.NewServer(gw)
	tb.Cleanup(srv.Close)
	return &api{url: srv.URL, prov: prov, clock: clock, other: other, svc: svc, jobs: jobs}
}

// run runs `sandman sessions args...` against url with key and returns the
// exit status, stdout and stderr.
func run(tb testing.TB, url, key string, args ...string) (int, string, string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		return map[string]string{"SANDMAN_URL": url, "SANDMAN_API_KEY": key}[k]
	}, After: func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}}
	code := cli.Main(tb.Context(), args, env)
	return code, out.String(), errOut.String()
}

// mustJSON runs a command with -o json, wants exit 0, and decodes stdout.
func mustJSON[T any](tb testing.TB, url, key string, args ...string) T {
	tb.Helper()
	code, out, errOut := run(tb, url, key, append(args, "-o", "json")...)
	if code != 0 {
		tb.Fatalf("sandman sessions %v: exit %d, stderr %s", args, code, errOut)
	}
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		tb.Fatalf("sandman sessions %v: output %q: %v", args, out, err)
	}
	return v
}

// TestLifecycle drives one session through the CLI against the real API:
// create, list, get, status, snapshot, reconnect, resume, watch, delete.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	key := apigw.DevAPIKey

	s := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base", "--idle-timeout", "2m",
		"--metadata", "user=ada", "--idempotency-key", "k1")
	if s.State != "running" || s.IdleTimeoutSeconds != 120 || s.Metadata["user"] != "ada" {
		t.Fatalf("created %+v", s)
	}
	again := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base", "--idempotency-key", "k1")
	if again.ID != s.ID {
		t.Errorf("replayed create = %s, want %s", again.ID, s.ID)
	}

	list := mustJSON[cli.SessionList](t, a.url, key, "list", "--all")
	if len(list.Sessions) != 1 || list.Sessions[0].ID != s.ID {
		t.Errorf("list = %+v", list)
	}
	code, out, _ := run(t, a.url, key, "list")
	if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, s.ID) || !strings.Contains(out, "running") {
		t.Errorf("list table: exit %d\n%s", code, out)
	}
	if got := mustJSON[cli.Session](t, a.url, key, "get", s.ID); got.ID != s.ID {
		t.Errorf("get = %+v", got)
	}

	snap := mustJSON[cli.PauseResult](t, a.url, key, "snapshot", s.ID)
	if !snap.Paused || snap.Session.State != "paused" {
		t.Errorf("snapshot = %+v", snap)
	}
	st := mustJSON[cli.Status](t, a.url, key, "status", s.ID)
	if !st.SandboxPaused || !st.HasSnapshot || st.State != "paused" {
		t.Errorf("status = %+v", st)
	}
	if rc := mustJSON[cli.ReconnectResult](t, a.url, key, "reconnect", s.ID); rc.Status != "paused" {
		t.Errorf("reconnect = %+v", rc)
	}
	res := mustJSON[cli.ResumeResult](t, a.url, key, "resume", s.ID)
	if res.Session.State != "running" || res.PreviewURL == nil {
		t.Errorf("resume = %+v", res)
	}

	// Table output, flags after the id.
	code, out, _ = run(t, a.url, key, "status", s.ID)
	if code != 0 || !strings.Contains(out, "state") || !strings.Contains(out, "running") {
		t.Errorf("status table: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, a.url, key, "watch", s.ID, "--until", "running", "-o", "json")
	if code != 0 || !strings.Contains(out, `"state":"running"`) {
		t.Errorf("watch --until running: exit %d\n%s", code, out)
	}

	killed := mustJSON[cli.Session](t, a.url, key, "delete", s.ID)
	if killed.State != "killed" {
		t.Errorf("delete = %+v", killed)
	}
	code, out, _ = run(t, a.url, key, "watch", s.ID)
	if code != 0 || !strings.Contains(out, "killed") {
		t.Errorf("watch of a killed session: exit %d\n%s", code, out)
	}
}

// TestExitCodes: each error_type exits with its status, and the API's
// sentence reaches stderr.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	a := MustAPI(t)
	key := apigw.DevAPIKey
	s := mustJSON[cli.Session](t, a.url, key, "create", "--template", "base")
	for _, tc := range []struct {
		name string
		key  string
		args []string
		want int
	}{
		{"Usage", key, []string{"get"}, cli.ExitUsage},
		{"UsageUnknown", key, []string{"frobnicate"}, cli.ExitUsage},
		{"UsageNoKey", "", []string{"list"}, cli.ExitUsage},
		{"Invalid", key, []string{"list", "--limit", "500"}, cli.ExitInvalid},
		{"InvalidNoTemplate", key, []string{"create"}, cli.ExitInvalid},
		{"Unauthorized", "sk_wrong", []string{"list"}, cli.ExitUnauthorized},
		{"Forbidden", a.other, []string{"get", s.ID}, cli.ExitForbidden},
		{"NotFound", key, []string{"get", "ses_nope"}, cli.ExitNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := run(t, a.url, tc.key, tc.args...)
			if code != tc.want {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.want, errOut)
			}
			if errOut == "" {
				t.Error("nothing on stderr")
			}
		})
	}
	t.Run("Expired", func(t *testing.T) {
		run(t, a.url, key, "snapshot", s.ID)
		a.prov.Forget(*s.SandboxID)
		code, _, errOut := run(t, a.url, key, "resume", s.ID)
		if code != cli.ExitExpired {
			t.Errorf("exit %d, want %d; stderr %s", code, cli.ExitExpired, errOut)
		}
	})
	t.Run("NoAPI", func(t *testing.T) {
		code, _, _ := run(t, "http://127.0.0.1:1", key, "list")
		if code != cli.ExitFailure {
			t.Errorf("exit %d, want %d", code, cli.ExitFailure)
		}
	})
}

// TestWatchRetries: a 503 while watching is reported and polled again; the
// follow ends at a final state.
func TestWatchRetries(t *testing.T) {
	t.Parallel()
	states := []string{"running", "", "running", "pausing", "paused", "killed"} // "" answers 503
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got, want := r.Header.Get("Authorization"), "Bearer k"; got != want {
			t.Errorf("Authorization = %q, want %q", got, want)
		}
		state := states[min(n, len(states)-1)]
		n++
		w.Header().Set("Content-Type", "application/json")
		if state == "" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			io.WriteString(w, `{"status":"error","error":"the table is slow","error_type":"unavailable"}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"session_id": "ses_x", "state": state,
			"sandbox_paused": state == "paused", "has_snapshot": false, "preview_url": nil,
			"lifecycle": map[string]any{"server_time": "2026-11-21T12:00:00Z", "state": state}})
	}))
	defer srv.Close()
	code, out, errOut := run(t, srv.URL, "k", "watch", "ses_x")
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		got = append(got, strings.Fields(line)[1])
	}
	if want := []string{"running", "pausing", "paused", "killed"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("states = %v, want %v (a repeat is not a change)\n%s", got, want, out)
	}
	if !strings.Contains(errOut, "the table is slow") {
		t.Errorf("the 503 was not reported: %q", errOut)
	}
}

// TestNotTheAPI: an answer without the error envelope (a proxy's page) is
// ExitFailure for a 2xx that does not decode and by status class for an
// error.
func TestNotTheAPI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/status") {
			io.WriteString(w, "<html>hello</html>")
			return
		}
		w.WriteHeader(502)
		io.WriteString(w, "<html>bad gateway</html>")
	}))
	defer srv.Close()
	if code, _, _ := run(t, srv.URL, "k", "status", "ses_x"); code != cli.ExitFailure {
		t.Errorf("status: exit %d, want %d", code, cli.ExitFailure)
	}
	if code, _, _ := run(t, srv.URL, "k", "get", "ses_x"); code != cli.ExitUnavailable {
		t.Errorf("get: exit %d, want %d", code, cli.ExitUnavailable)
	}
}
