package bench

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/routes"
)

// MustRuntimeAPI starts a RuntimeAPI serving payloads and closes it when the
// test ends.
func MustRuntimeAPI(tb testing.TB, function string, payloads ...[]byte) *RuntimeAPI {
	tb.Helper()
	api, err := NewRuntimeAPI(function, 10*time.Second, payloads...)
	if err != nil {
		tb.Fatalf("runtime api: %v", err)
	}
	tb.Cleanup(func() { _ = api.Close() })
	return api
}

// TestColdRun drives the real aws-lambda-go runtime client (the test binary
// acting as a function) through RuntimeAPI and coldRun.
func TestColdRun(t *testing.T) {
	bin := MustTestBinary(t)
	logDir := t.TempDir()

	t.Run("OK", func(t *testing.T) {
		cr := coldRun(t.Context(), bin, "ok", 0, lambdaEnv(), logDir, [][]byte{
			MustJSON(t, testPayload{Echo: "one"}), MustJSON(t, testPayload{Echo: "two"}),
		})
		if cr.Failed != "" {
			t.Fatalf("run failed: %s", cr.Failed)
		}
		if cr.InitMS <= 0 || cr.FirstInvokeMS <= 0 || cr.SecondInvokeMS <= 0 {
			t.Errorf("timings init %v first %v second %v ms, want all positive", cr.InitMS, cr.FirstInvokeMS, cr.SecondInvokeMS)
		}
		if got, want := len(cr.Outcomes), 2; got != want {
			t.Fatalf("outcomes %v, want %d", cr.Outcomes, want)
		}
		if got, want := cr.Errors, 0; got != want {
			t.Errorf("errors = %d, want %d", got, want)
		}
		if _, err := os.Stat(filepath.Join(logDir, "ok-1.log")); err != nil {
			t.Errorf("process log: %v", err)
		}
	})

	t.Run("ErrorAnswer", func(t *testing.T) {
		cr := coldRun(t.Context(), bin, "fails", 0, lambdaEnv(), logDir, [][]byte{
			MustJSON(t, testPayload{Fail: true}), MustJSON(t, testPayload{Echo: "after"}),
		})
		if cr.Failed != "" {
			t.Fatalf("run failed: %s", cr.Failed)
		}
		if got, want := cr.Errors, 1; got != want {
			t.Errorf("errors = %d, want %d", got, want)
		}
		if got := cr.Outcomes[0]; !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "asked to fail") {
			t.Errorf("first outcome %q, want the function's error", got)
		}
	})

	t.Run("ExitsAtInit", func(t *testing.T) {
		cr := coldRun(t.Context(), bin, "dies", 0, []string{envLambda + "=exit"}, logDir, [][]byte{[]byte(`{}`)})
		if cr.Failed == "" {
			t.Fatal("a process that exits before asking for work is reported as a finished run")
		}
		if got, want := cr.InitMS, 0.0; got != want {
			t.Errorf("init = %v ms, want %v (never asked for an invocation)", got, want)
		}
		if !strings.Contains(cr.Failed, "exited before answering") {
			t.Errorf("failure %q, want the early exit named", cr.Failed)
		}
	})
}

// TestRuntimeAPI checks the routes and headers against the real runtime
// client: it reads the request id, deadline and ARN we send.
func TestRuntimeAPI(t *testing.T) {
	t.Run("Headers", func(t *testing.T) {
		api := MustRuntimeAPI(t, "headers", MustJSON(t, testPayload{Echo: "hi"}))
		cr := coldRunWith(t, api)
		if cr.Failed != "" {
			t.Fatalf("run failed: %s", cr.Failed)
		}
		inv := api.Invocations()
		if got, want := len(inv), 1; got != want {
			t.Fatalf("%d invocations, want %d", got, want)
		}
		var a testAnswer
		if err := json.Unmarshal(inv[0].Body, &a); err != nil {
			t.Fatalf("answer %s: %v", inv[0].Body, err)
		}
		if got, want := a.Echo, "hi"; got != want {
			t.Errorf("echo = %q, want %q", got, want)
		}
		if got, want := a.RequestID, inv[0].RequestID; got != want || got == "" {
			t.Errorf("request id seen by the function = %q, want %q", got, want)
		}
		if got, want := a.FunctionARN, "arn:aws:lambda:us-east-1:000000000000:function:headers"; got != want {
			t.Errorf("function arn = %q, want %q", got, want)
		}
		if !a.HasDeadline {
			t.Error("the function's context has no deadline")
		}
	})

	t.Run("InitError", func(t *testing.T) {
		api := MustRuntimeAPI(t, "initerr", []byte(`{}`))
		resp, err := http.Post("http://"+api.Addr()+pathInitError, "application/json", strings.NewReader(`{"errorType":"Boom"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusAccepted; got != want {
			t.Errorf("init error answered %d, want %d", got, want)
		}
		select {
		case <-api.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after an init error")
		}
		if got := string(api.InitError()); !strings.Contains(got, "Boom") {
			t.Errorf("init error %q, want the posted body", got)
		}
	})

	t.Run("UnknownRequestID", func(t *testing.T) {
		api := MustRuntimeAPI(t, "unknown", []byte(`{}`))
		resp, err := http.Post("http://"+api.Addr()+"/2018-06-01/runtime/invocation/nope/response", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusBadRequest; got != want {
			t.Errorf("answer for an unknown request id: %d, want %d", got, want)
		}
	})
}

// coldRunWith runs the test binary as a function against api, a started
// RuntimeAPI, until it has answered everything, and stops it.
func coldRunWith(tb testing.TB, api *RuntimeAPI) ColdRun {
	tb.Helper()
	cmd := exec.Command(MustTestBinary(tb))
	cmd.Env = append(lambdaEnv(), "AWS_LAMBDA_RUNTIME_API="+api.Addr())
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start function: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill() // our own child, by its handle
		_ = cmd.Wait()
	}()
	select {
	case <-api.Done():
		return ColdRun{}
	case <-time.After(30 * time.Second):
		return ColdRun{Failed: "no answer within 30 s"}
	}
}

func TestZipBootstrap(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	content := strings.Repeat("sandman ", 1000)
	if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	size, err := ZipBootstrap(bin, filepath.Join(dir, "fn.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if size <= 0 || size >= int64(len(content)) {
		t.Errorf("zip size %d bytes, want between 0 and %d (deflate shrinks repeated text)", size, len(content))
	}
	zr, err := zip.OpenReader(filepath.Join(dir, "fn.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if got, want := len(zr.File), 1; got != want {
		t.Fatalf("%d entries, want %d", got, want)
	}
	f := zr.File[0]
	if got, want := f.Name, "bootstrap"; got != want {
		t.Errorf("entry %q, want %q", got, want)
	}
	if got, want := f.Method, zip.Deflate; got != want {
		t.Errorf("method %d, want deflate (%d)", got, want)
	}
	if got, want := f.Mode().Perm(), os.FileMode(0o755); got != want {
		t.Errorf("mode %v, want %v (Lambda runs bootstrap)", got, want)
	}
	r, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), content; got != want {
		t.Error("unzipped bootstrap differs from the original")
	}
}

func TestDescribeOutcome(t *testing.T) {
	apiResp := func(status int, body string) []byte {
		return MustJSON(t, map[string]any{"statusCode": status, "body": body})
	}
	for _, c := range []struct {
		name string
		inv  Invocation
		want string
	}{
		{"Webhook", Invocation{Body: apiResp(200, `{"status":"ok","outcome":"applied"}`)}, "200 applied"},
		{"Status", Invocation{Body: apiResp(200, `{"session_id":"ses_x","state":"running"}`)}, "200 running"},
		{"Reconnect", Invocation{Body: apiResp(200, `{"status":"expired","session":{"state":"expired"}}`)}, "200 expired"},
		{"Snapshot", Invocation{Body: apiResp(200, `{"paused":true,"session":{"state":"paused"}}`)}, "200 paused"},
		{"APIError", Invocation{Body: apiResp(503, `{"status":"error","error":"x","error_type":"sandbox_expired"}`)}, "503 sandbox_expired"},
		{"Summary", Invocation{Body: []byte(`{"candidates":0,"paused":0}`)}, "summary"},
		{"BatchAllDone", Invocation{Body: []byte(`{"batchItemFailures":[]}`)}, "0 batch item failures"},
		{"BatchNull", Invocation{Body: []byte(`{"batchItemFailures":null}`)}, "0 batch item failures"},
		{"BatchOneFailed", Invocation{Body: []byte(`{"batchItemFailures":[{"itemIdentifier":"1"}]}`)}, "1 batch item failures"},
		{"FunctionError", Invocation{Error: true, Body: []byte(`{"errorType":"errorString","errorMessage":"boom"}`)}, "error: errorString boom"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := describeOutcome(c.inv); got != c.want {
				t.Errorf("describeOutcome = %q, want %q", got, c.want)
			}
		})
	}
}

func TestSummarizeCold(t *testing.T) {
	fc := FunctionColdStart{Runs: []ColdRun{
		{InitMS: 9, FirstInvokeMS: 4, SecondInvokeMS: 2, Outcomes: []string{"200", "200"}},
		{InitMS: 5, FirstInvokeMS: 6, SecondInvokeMS: 1, Outcomes: []string{"200", "200"}},
		{Failed: "no answer"},
		{InitMS: 7, FirstInvokeMS: 5, SecondInvokeMS: 3, Errors: 1, Outcomes: []string{"error: x", "200"}},
	}}
	summarizeCold(&fc)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"init median", fc.InitMedianMS, 7}, {"init min", fc.InitMinMS, 5}, {"init max", fc.InitMaxMS, 9},
		{"first invoke median", fc.FirstInvokeMedianMS, 5}, {"warm invoke median", fc.SecondInvokeMedianMS, 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v ms, want %v (failed runs left out)", c.name, c.got, c.want)
		}
	}
	if got, want := fc.Failed, 1; got != want {
		t.Errorf("failed runs = %d, want %d", got, want)
	}
	if got, want := fc.Errors, 1; got != want {
		t.Errorf("error answers = %d, want %d", got, want)
	}
	if got, want := fc.Outcome, "error: x, 200"; got != want {
		t.Errorf("outcome = %q, want %q (the last finished run)", got, want)
	}
}

// TestColdEventsEveryFunction: the cold-start figure has an event for
// every function of routes.Functions (a function without one is reported
// as failed runs, as the publisher was before it had one).
func TestColdEventsEveryFunction(t *testing.T) {
	env := MustEnv(t)
	table, drop, err := env.NewTable(t.Context(), "bench-coldevents")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	store := dynamo.New(dynamo.Config{Client: env.Client, Table: table})
	for _, fn := range routes.Functions {
		t.Run(fn, func(t *testing.T) {
			ev := &coldEvents{env: env, store: store, function: fn}
			payloads, what, err := ev.payloads(t.Context(), 0)
			if err != nil {
				t.Fatalf("payloads: %v", err)
			}
			if got, want := len(payloads), 2; got != want {
				t.Errorf("payloads = %d, want %d (a cold and a warm invocation)", got, want)
			}
			if what == "" {
				t.Error("no description of the event")
			}
		})
	}
	ev := &coldEvents{env: env, store: store, function: "nosuchfunction"}
	if _, _, err := ev.payloads(t.Context(), 0); !errors.Is(err, errNoColdEvent) {
		t.Errorf("unknown function: err = %v, want errNoColdEvent", err)
	}
}
