package readiness_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// This test binary is also the local provider's sandbox child and the app
// a start command runs (HTTP on $PORT).
const (
	envChild = "SANDMAN_READINESS_TEST_CHILD"
	envServe = "SANDMAN_READINESS_TEST_SERVE"
	// envStarts names a file the app appends a line to as it starts;
	// envBoot is how long it waits before it listens (a Go duration).
	envStarts = "SANDMAN_READINESS_TEST_STARTS"
	envBoot   = "SANDMAN_READINESS_TEST_BOOT"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envServe) == "1":
		if f := os.Getenv(envStarts); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintln(fh, os.Getpid())
				fh.Close()
			}
		}
		if d, err := time.ParseDuration(os.Getenv(envBoot)); err == nil {
			time.Sleep(d)
		}
		err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "app ok")
		}))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case os.Getenv(envChild) == "1":
		if err := local.RunSandbox(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// stack is the readiness path as the local stack wires it: the service on
// DynamoDB Local, the local provider, the in-process worker, and the
// table's stream read by the outbox poller.
type stack struct {
	svc     *lifecycle.Service
	prov    *local.Provider
	worker  *readiness.Worker
	poller  *outbox.Poller
	events  *eventLog
	mu      sync.Mutex
	outcome map[string][]lifecycle.BringUpOutcome
}

type eventLog struct {
	mu     sync.Mutex
	events []lifecycle.Event
}

func (l *eventLog) Publish(_ context.Context, evs ...lifecycle.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, evs...)
	return nil
}

func newStack(t *testing.T, drop bool) *stack {
	t.Helper()
	table := dynamotest.MustTable(t)
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: table})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	prov, err := local.New(local.Config{Dir: t.TempDir(), Command: []string{exe, "sandbox"}, Env: []string{envChild + "=1"},
		DropProcesses: drop, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{prov: prov, events: &eventLog{}, outcome: map[string][]lifecycle.BringUpOutcome{}}
	s.worker = readiness.New(readiness.Config{Log: log, Backoff: 50 * time.Millisecond})
	s.svc = lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Log: log, ReadinessJobs: s.worker,
		ReadyBackoff: 20 * time.Millisecond, ReadyBackoffMax: 100 * time.Millisecond, ReadyPollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	s.worker.OnOutcome(func(id string, out lifecycle.BringUpOutcome, _ error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.outcome[id] = append(s.outcome[id], out)
	})
	s.worker.Start(ctx, s.svc.BringUp)
	t.Cleanup(func() {
		cancel()
		s.worker.Close()
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if page, err := prov.List(cctx, lifecycle.ListRequest{}); err == nil {
			for _, sb := range page.Sandboxes {
				_ = prov.Kill(cctx, sb.ID)
			}
		}
		_ = prov.Close(cctx)
	})
	streams, arn := dynamotest.MustStream(t, table)
	s.poller = outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: s.events})
	return s
}

// awaitReadiness reads the session until its readiness is not starting (or
// 20 s pass) and returns it.
func (s *stack) awaitReadiness(t *testing.T, id string) *lifecycle.Session {
	t.Helper()
	sess, err := s.svc.WaitReady(t.Context(), "acct_1", id, lifecycle.MaxWaitReady)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func get(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func appSpec(t *testing.T, line string, timeoutS int64) *lifecycle.AppInput {
	port := 3000
	env := map[string]string{envServe: "1"}
	return &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: env, ReadyTimeoutSeconds: &timeoutS}
}

func serveLine(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return "exec '" + exe + "'"
}

func TestLocalColdResumeComesBackReady(t *testing.T) {
	s := newStack(t, true) // SANDMAN_LOCAL_KEEP_PROCESSES=false
	sess, _, err := s.svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: local.TemplateBase, App: appSpec(t, serveLine(t), 30)})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("readiness after create = %q, want starting", sess.Readiness)
	}
	got := s.awaitReadiness(t, sess.ID)
	if got.Readiness != lifecycle.ReadinessReady {
		t.Fatalf("readiness = %q (%s), want ready", got.Readiness, got.ReadinessDetail)
	}
	if code, body := get(got.PreviewURL); code != 200 || body != "app ok" {
		t.Fatalf("preview %s answered %d %q, want 200 app ok", got.PreviewURL, code, body)
	}

	if _, err := s.svc.PauseNow(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(got.PreviewURL); code != http.StatusBadGateway { // the local preview front's, at once
		t.Fatalf("the preview answers %d after a snapshot that drops processes, want the front's 502", code)
	}
	resumed, err := s.svc.Resume(t.Context(), "acct_1", sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("readiness after resume = %q, want starting", resumed.Readiness)
	}
	again := s.awaitReadiness(t, sess.ID) // no other call: the worker brings it up
	if again.Readiness != lifecycle.ReadinessReady || again.PreviewURL != got.PreviewURL {
		t.Fatalf("after resume: readiness %q (%s), preview %s; want ready at %s", again.Readiness, again.ReadinessDetail, again.PreviewURL, got.PreviewURL)
	}
	if code, body := get(again.PreviewURL); code != 200 || body != "app ok" {
		t.Fatalf("preview after resume answered %d %q, want 200 app ok", code, body)
	}

	if _, err := s.poller.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ready []string
	for _, ev := range s.events.events {
		if ev.SessionID == sess.ID && ev.DetailType() == "Session Ready" {
			ready = append(ready, ev.EventID)
		}
	}
	if len(ready) != 2 {
		t.Errorf("Session Ready events from the stream = %v, want two", ready)
	}
}

func TestLocalCommandThatNeverListensFails(t *testing.T) {
	s := newStack(t, true)
	sess, _, err := s.svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: local.TemplateBase,
		App: appSpec(t, "echo starting up; sleep 60", 1)})
	if err != nil {
		t.Fatal(err)
	}
	got := s.awaitReadiness(t, sess.ID)
	if got.Readiness != lifecycle.ReadinessFailed || !strings.Contains(got.ReadinessDetail, "within 1 s") ||
		!strings.Contains(got.ReadinessDetail, "starting up") {
		t.Fatalf("readiness %q detail %q, want failed after the timeout with the command's output", got.Readiness, got.ReadinessDetail)
	}
	if _, err := s.poller.Poll(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range s.events.events {
		if ev.SessionID == sess.ID && ev.DetailType() == "Session Not Ready" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("Session Not Ready events = %d, want 1", n)
	}
}

// TestLocalBringUpRedeliveredAfterACrashStartsOneServer: the readiness job
// dies between starting the app (a real process of the local provider) and
// recording ready; the redelivered job finds the app running, starts
// nothing, and records ready. One server was started.
func TestLocalBringUpRedeliveredAfterACrashStartsOneServer(t *testing.T) {
	s := newStack(t, true)
	cfg := s.svc.Config()
	cfg.ReadinessJobs = nil // this test delivers the jobs itself
	svc := lifecycle.NewService(cfg)
	starts := t.TempDir() + "/starts"
	app := appSpec(t, serveLine(t), 30)
	app.Env[envStarts], app.Env[envBoot] = starts, "300ms"
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: local.TemplateBase, App: app})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	dyingCfg := cfg
	dyingCfg.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	if out, err := lifecycle.NewService(dyingCfg).BringUp(ctx, sess.ID); err == nil {
		t.Fatalf("the dying job returned %q without an error", out)
	}
	got, err := svc.Get(t.Context(), "acct_1", sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("after the crash readiness = %q, want starting", got.Readiness)
	}
	if st, err := s.prov.CommandStatus(t.Context(), got.SandboxID, lifecycle.AppCommandName); err != nil || !st.Running {
		t.Fatalf("after the crash the app is %+v, %v; want it running (the job died after starting it)", st, err)
	}

	out, err := svc.BringUp(t.Context(), sess.ID) // the redelivery
	if err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("redelivered job = %q, %v; want ready", out, err)
	}
	if code, body := get(got.PreviewURL); code != 200 || body != "app ok" {
		t.Errorf("preview answered %d %q, want 200 app ok", code, body)
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("the app was started %d times, want once", n)
	}
}
