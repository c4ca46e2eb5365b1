package daytona_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
)

// env is a Provider aimed at a fake Daytona whose clock moves only when
// the provider sleeps: every wait advances it by the wait, so transitions
// settle and timers fire without any test sleeping.
type env struct {
	srv   *daytonatest.Server
	clock *lifecycle.ManualClock
	p     *daytona.Provider
	url   string
	logs  *bytes.Buffer

	mu     sync.Mutex
	sleeps []time.Duration
	hook   func(n int)
}

func (e *env) sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	e.sleeps = append(e.sleeps, d)
	n, hook := len(e.sleeps)-1, e.hook
	e.mu.Unlock()
	e.clock.Advance(d)
	if hook != nil {
		hook(n)
	}
	return ctx.Err()
}

func (e *env) waits() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.sleeps...)
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// MustEnv starts a fake Daytona with opts (its Clock is set here) and a
// Provider for it; edits adjust the provider's config.
func MustEnv(tb testing.TB, opts daytonatest.Config, edits ...func(*daytona.Config)) *env {
	tb.Helper()
	e := &env{clock: lifecycle.NewManualClock(t0), logs: &bytes.Buffer{}}
	opts.Clock = e.clock
	srv, hs := daytonatest.Start(tb, opts)
	e.srv, e.url = srv, hs.URL
	cfg := daytona.Config{
		BaseURL: hs.URL + "/api", APIKey: srv.APIKey(), Clock: e.clock, Sleep: e.sleep,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: e.logs}, nil)),
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	p, err := daytona.New(cfg)
	if err != nil {
		tb.Fatalf("new provider: %v", err)
	}
	e.p = p
	return e
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// MustPut seeds a sandbox of id in state with a 15-minute auto-stop.
func MustPut(tb testing.TB, e *env, id, state string, edits ...func(*daytonatest.Sandbox)) {
	tb.Helper()
	sb := daytonatest.Sandbox{ID: id, Name: id, State: state, Snapshot: "base", AutoStop: 15,
		AutoArchive: 10080, AutoDelete: -1, Labels: map[string]string{"sandman_session_id": "s-" + id}}
	for _, edit := range edits {
		edit(&sb)
	}
	e.srv.Put(sb)
}

// MustCreate creates a sandbox through the provider.
func MustCreate(tb testing.TB, e *env, md map[string]string) lifecycle.Sandbox {
	tb.Helper()
	sb, err := e.p.Create(context.Background(), lifecycle.CreateRequest{
		Template: "base", Timeout: 12*time.Minute + 30*time.Second, AutoPause: true, Metadata: md})
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
	return sb
}

func mustState(tb testing.TB, e *env, id, want string) daytonatest.Sandbox {
	tb.Helper()
	sb, ok := e.srv.Sandbox(id)
	if !ok {
		tb.Fatalf("sandbox %s is gone, want %s", id, want)
	}
	if sb.State != want {
		tb.Fatalf("sandbox %s is %s, want %s", id, sb.State, want)
	}
	return sb
}

func isKind(err, kind error) bool {
	var pe *lifecycle.ProviderError
	return errors.As(err, &pe) && errors.Is(err, kind)
}

func TestNew(t *testing.T) {
	for name, cfg := range map[string]daytona.Config{
		"ErrNoKey":     {},
		"ErrBadURL":    {APIKey: "k", BaseURL: "app.daytona.io/api"},
		"ErrPauseMode": {APIKey: "k", PauseMode: "archive"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := daytona.New(cfg); err == nil {
				t.Fatal("New accepted a bad config")
			}
		})
	}
	p, err := daytona.New(daytona.Config{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Name(), "daytona"; got != want {
		t.Errorf("Name = %q, want %q", got, want)
	}
}

func TestCreate(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{CreateTime: 45 * time.Second}, func(c *daytona.Config) {
		c.AutoArchive, c.AutoDelete, c.TTL = 2*time.Hour, 24*time.Hour, 90*time.Minute+1
		c.PreviewPorts = map[string]int{"base": 5173}
	})
	md := map[string]string{"sandman_session_id": "sess-1", "sandman_deployment": "dep-a"}
	sb := MustCreate(t, e, md)
	if got, want := sb.State, lifecycle.SandboxRunning; got != want {
		t.Fatalf("state = %s, want %s", got, want)
	}
	stored := mustState(t, e, sb.ID, daytonatest.StateStarted)
	if got, want := stored.AutoStop, 13; got != want {
		t.Errorf("autoStopInterval = %d, want %d (12m30s rounded up)", got, want)
	}
	if stored.AutoArchive != 120 || stored.AutoDelete != 1440 {
		t.Errorf("autoArchive/autoDelete = %d/%d, want 120/1440", stored.AutoArchive, stored.AutoDelete)
	}
	if got, want := stored.AutoDestroyAt, t0.Add(91*time.Minute); !got.Equal(want) {
		t.Errorf("autoDestroyAt = %s, want %s", got, want)
	}
	for k, v := range md {
		if stored.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, stored.Labels[k], v)
		}
	}
	if got := e.srv.UnknownFields(); len(got) != 0 {
		t.Errorf("create sent fields the facts sheet does not list: %v", got)
	}
	// Daytona answered creating; the provider waited on the clock for started.
	var waited time.Duration
	for _, d := range e.waits() {
		waited += d
	}
	if waited < 45*time.Second {
		t.Errorf("waited %s for the create to settle, want >= 45s", waited)
	}
	want := "https://5173-" + sb.ID + "." + daytonatest.DefaultProxyDomain + "?DAYTONA_SANDBOX_AUTH_KEY=" + stored.Token
	if sb.PreviewURL != want {
		t.Errorf("preview url = %q, want %q", sb.PreviewURL, want)
	}
	// Started at t0+45s (a state change is activity) + 13 min of guard.
	if got, want := sb.ExpiresAt, t0.Add(45*time.Second+13*time.Minute); !got.Equal(want) {
		t.Errorf("ExpiresAt = %s, want %s", got, want)
	}
	if got, want := sb.Metadata["sandman_session_id"], "sess-1"; got != want {
		t.Errorf("metadata = %v", sb.Metadata)
	}
}

func TestCreatePublicNoToken(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.Public = true })
	sb := MustCreate(t, e, nil)
	if strings.Contains(sb.PreviewURL, "DAYTONA_SANDBOX_AUTH_KEY") || !strings.HasPrefix(sb.PreviewURL, "https://3000-") {
		t.Errorf("public preview url = %q", sb.PreviewURL)
	}
}

func TestCreatePauseMode(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{Class: "linux-vm"}, func(c *daytona.Config) { c.PauseMode = daytona.PausePause })
	sb := MustCreate(t, e, nil)
	stored := mustState(t, e, sb.ID, daytonatest.StateStarted)
	if stored.AutoPause != 13 || stored.AutoStop != 0 {
		t.Errorf("autoPause/autoStop = %d/%d, want 13/0", stored.AutoPause, stored.AutoStop)
	}
}

func TestCreateImageBuild(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{BuildTime: 2 * time.Minute})
	sb, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "image:python:3.12", Timeout: time.Minute, AutoPause: true})
	if err != nil {
		t.Fatal(err)
	}
	mustState(t, e, sb.ID, daytonatest.StateStarted)
	if got, want := sb.Template, "image:python:3.12"; got != want {
		t.Errorf("template = %q, want %q", got, want)
	}
}

func TestCreateNoAutoPauseIsEphemeral(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustState(t, e, sb.ID, daytonatest.StateStarted).AutoDelete; got != 0 {
		t.Fatalf("autoDeleteInterval = %d, want 0", got)
	}
	e.clock.Advance(2 * time.Minute)
	if _, ok := e.srv.Sandbox(sb.ID); ok {
		t.Fatal("an ephemeral sandbox outlived its auto-stop")
	}
}

func TestCreateErrors(t *testing.T) {
	t.Run("ErrUnknownSnapshot", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{Snapshots: []string{"base"}})
		_, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "nope", Timeout: time.Minute, AutoPause: true})
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "Snapshot nope not found") {
			t.Fatalf("err = %v, want a plain error with Daytona's message", err)
		}
	})
	t.Run("ErrFailedToStartIsDeleted", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{CreateTime: time.Hour})
		e.hook = func(n int) {
			if n == 0 {
				e.srv.Edit(onlyID(t, e), func(sb *daytonatest.Sandbox) {
					sb.State, sb.ErrorReason, sb.Stuck = daytonatest.StateError, "runner lost", true
				})
			}
		}
		_, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "runner lost") {
			t.Fatalf("err = %v, want a plain error naming the reason", err)
		}
		if got := e.srv.Requests(daytonatest.OpDelete); got != 1 {
			t.Errorf("deletes = %d, want 1 (a failed sandbox must not keep its resources)", got)
		}
	})
	t.Run("ErrStuckCreatingIsTransient", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{CreateTime: time.Hour}, func(c *daytona.Config) { c.CreateTimeout = 30 * time.Second })
		_, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if !isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "still creating") {
			t.Fatalf("err = %v, want transient naming creating", err)
		}
	})
	t.Run("ErrCreateNotRetried", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		e.srv.Fail(daytonatest.OpCreate, daytonatest.Fault{Status: 503})
		_, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
		if got := e.srv.Requests(daytonatest.OpCreate); got != 1 {
			t.Errorf("create requests = %d, want 1", got)
		}
	})
}

// onlyID returns the id of the fake's first sandbox made by create.
func onlyID(tb testing.TB, e *env) string {
	tb.Helper()
	if _, ok := e.srv.Sandbox(idOf(1)); !ok {
		tb.Fatal("no sandbox made")
	}
	return idOf(1)
}

// idOf is the fake's id of its i-th sandbox.
func idOf(i int) string {
	return strings.Replace("0000000N-0000-4000-8000-00000000000N", "N", string(rune('0'+i)), 2)
}

func TestGetMapsEveryState(t *testing.T) {
	type want struct {
		state lifecycle.SandboxState
		kind  error
	}
	running, paused := want{state: lifecycle.SandboxRunning}, want{state: lifecycle.SandboxPaused}
	gone, transient := want{kind: lifecycle.ErrSandboxGone}, want{kind: lifecycle.ErrProviderTransient}
	cases := map[string]want{
		"started": running, "stopped": paused, "paused": paused, "archived": paused,
		"destroyed": gone, "build_failed": gone, "error": gone, "error-recoverable": paused,
		"creating": transient, "restoring": transient, "destroying": gone, "starting": transient,
		"stopping": transient, "pending_build": transient, "building_snapshot": transient,
		"unknown": transient, "pulling_snapshot": transient, "archiving": transient, "resizing": transient,
		"snapshotting": transient, "forking": transient, "pausing": transient, "resuming": transient,
		"11184809": transient, "hibernating": transient,
	}
	e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.MaxRetries = -1 })
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			state, recoverable := strings.CutSuffix(name, "-recoverable")
			id := "sb-" + strings.ReplaceAll(name, "_", "-")
			MustPut(t, e, id, state, func(sb *daytonatest.Sandbox) { sb.Recoverable = recoverable })
			sb, err := e.p.Get(context.Background(), id)
			probe, perr := e.p.Probe(context.Background(), id)
			if w.kind != nil {
				if !isKind(err, w.kind) || !isKind(perr, w.kind) {
					t.Fatalf("Get err = %v, Probe err = %v, want %v", err, perr, w.kind)
				}
				return
			}
			if err != nil || perr != nil {
				t.Fatalf("Get err = %v, Probe err = %v", err, perr)
			}
			if sb.State != w.state || probe.State != w.state {
				t.Fatalf("Get state = %s, Probe state = %s, want %s", sb.State, probe.State, w.state)
			}
			if got, want := sb.Metadata["sandman_session_id"], "s-"+id; got != want {
				t.Errorf("metadata = %v", sb.Metadata)
			}
		})
	}
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := e.p.Get(context.Background(), "nope"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
	})
	t.Run("ErrInvalidID", func(t *testing.T) {
		if _, err := e.p.Get(context.Background(), "../x"); err == nil || isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want a plain error", err)
		}
	})
	t.Run("TransitionalRetryAfter", func(t *testing.T) {
		MustPut(t, e, "sb-tr", "starting")
		_, err := e.p.Get(context.Background(), "sb-tr")
		if got := lifecycle.RetryAfter(err); got != daytona.DefaultPollInterval {
			t.Errorf("retry after = %s, want %s", got, daytona.DefaultPollInterval)
		}
	})
}

func TestProbe(t *testing.T) {
	t.Run("RunningExpiresAt", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.LastActivityAt = t0.Add(-time.Minute) })
		pr, err := e.p.Probe(context.Background(), "sb-1")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := pr.ExpiresAt, t0.Add(14*time.Minute); pr.State != lifecycle.SandboxRunning || !got.Equal(want) {
			t.Fatalf("probe = %+v, want running until %s", pr, want)
		}
	})
	t.Run("StoppedNeverStarted", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		for _, st := range []string{"stopped", "archived", "paused"} {
			MustPut(t, e, "sb-"+st, st)
			pr, err := e.p.Probe(context.Background(), "sb-"+st)
			if err != nil || pr.State != lifecycle.SandboxPaused {
				t.Fatalf("probe %s = %+v, %v; want paused", st, pr, err)
			}
			if got := e.srv.Wakes("sb-" + st); got != 0 {
				t.Errorf("probe of %s woke it %d times", st, got)
			}
			mustState(t, e, "sb-"+st, st)
		}
		if got, want := e.srv.Requests(daytonatest.OpAny), e.srv.Requests(daytonatest.OpGet); got != want {
			t.Errorf("probe made %d requests, only %d of them GET /sandbox/{id}", got, want)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		if _, err := e.p.Probe(context.Background(), "nope"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
	})
}

func TestPause(t *testing.T) {
	t.Run("StopsAndWaits", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{StopTime: 20 * time.Second})
		MustPut(t, e, "sb-1", "started")
		if err := e.p.Pause(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "stopped")
		if got := e.srv.Requests(daytonatest.OpStop); got != 1 {
			t.Errorf("stops = %d, want 1", got)
		}
	})
	t.Run("AlreadyPausedSucceeds", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		for _, st := range []string{"stopped", "paused", "archived"} {
			MustPut(t, e, "sb-"+st, st)
			if err := e.p.Pause(context.Background(), "sb-"+st); err != nil {
				t.Fatalf("pause %s: %v", st, err)
			}
		}
		if got := e.srv.Requests(daytonatest.OpStop); got != 0 {
			t.Errorf("stops = %d, want 0", got)
		}
	})
	t.Run("WaitsForStartingFirst", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{StartTime: 10 * time.Second})
		MustPut(t, e, "sb-1", "stopped")
		if _, err := http.DefaultClient.Do(mustReq(t, e, http.MethodPost, "/sandbox/sb-1/start")); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Pause(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "stopped")
	})
	t.Run("ConflictRetried", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpStop, daytonatest.Fault{Status: 409, Message: "Sandbox state change in progress"})
		if err := e.p.Pause(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "stopped")
		if got := e.srv.Requests(daytonatest.OpStop); got != 2 {
			t.Errorf("stops = %d, want 2", got)
		}
	})
	t.Run("PauseMode", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.PauseMode = daytona.PausePause })
		MustPut(t, e, "vm", "started", func(sb *daytonatest.Sandbox) { sb.Class, sb.AutoStop, sb.AutoPause = "linux-vm", 0, 15 })
		MustPut(t, e, "ctr", "started")
		for id, want := range map[string]string{"vm": "paused", "ctr": "stopped"} {
			if err := e.p.Pause(context.Background(), id); err != nil {
				t.Fatalf("pause %s: %v", id, err)
			}
			mustState(t, e, id, want)
		}
	})
	t.Run("ErrEphemeralDeletedIsGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.AutoDelete = 0 })
		if err := e.p.Pause(context.Background(), "sb-1"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
	})
	t.Run("ErrStuckStopping", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{StopTime: time.Hour})
		MustPut(t, e, "sb-1", "started")
		err := e.p.Pause(context.Background(), "sb-1")
		if !isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "still stopping") {
			t.Fatalf("err = %v, want transient naming stopping", err)
		}
	})
	t.Run("ErrBeingDeletedIsGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "destroying")
		if err := e.p.Pause(context.Background(), "sb-1"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
		if _, err := e.p.Resume(context.Background(), "sb-1", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("resume err = %v, want gone", err)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		if err := e.p.Pause(context.Background(), "nope"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
	})
}

func mustReq(tb testing.TB, e *env, method, path string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.APIKey())
	return req
}

func TestResume(t *testing.T) {
	t.Run("FromStoppedNewToken", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{StartTime: 5 * time.Second, StopTime: 5 * time.Second})
		sb := MustCreate(t, e, nil)
		if err := e.p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		got, err := e.p.Resume(context.Background(), sb.ID, 20*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		stored := mustState(t, e, sb.ID, "started")
		if got.State != lifecycle.SandboxRunning || got.PreviewURL == sb.PreviewURL ||
			!strings.HasSuffix(got.PreviewURL, "DAYTONA_SANDBOX_AUTH_KEY="+stored.Token) {
			t.Fatalf("resumed = %+v; want running with the new token %s (old url %s)", got, stored.Token, sb.PreviewURL)
		}
		if stored.AutoStop != 20 {
			t.Errorf("autoStopInterval = %d, want 20", stored.AutoStop)
		}
		if want := stored.LastActivityAt.Add(20 * time.Minute); !got.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt = %s, want %s", got.ExpiresAt, want)
		}
		if got := e.srv.Wakes(sb.ID); got != 1 {
			t.Errorf("wakes = %d, want 1", got)
		}
	})
	t.Run("ArchivedRestoresWithLongerTimeout", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{RestoreTime: 4 * time.Minute})
		MustPut(t, e, "sb-1", "archived")
		got, err := e.p.Resume(context.Background(), "sb-1", 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != lifecycle.SandboxRunning {
			t.Fatalf("state = %s", got.State)
		}
		if logs := e.logs.String(); !strings.Contains(logs, "restored from archive") || !strings.Contains(logs, "took=4m") {
			t.Errorf("restore not reported: %s", logs)
		}
	})
	t.Run("ErrArchivedRestoreTooSlow", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{RestoreTime: time.Hour}, func(c *daytona.Config) { c.RestoreTimeout = 2 * time.Minute })
		MustPut(t, e, "sb-1", "archived")
		_, err := e.p.Resume(context.Background(), "sb-1", 10*time.Minute)
		if !isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "still restoring") {
			t.Fatalf("err = %v, want transient naming restoring", err)
		}
	})
	t.Run("AlreadyStartedRefreshesOnly", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.LastActivityAt = t0.Add(-10 * time.Minute) })
		got, err := e.p.Resume(context.Background(), "sb-1", 15*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if n := e.srv.Requests(daytonatest.OpStart); n != 0 {
			t.Errorf("starts = %d, want 0", n)
		}
		if n := e.srv.Requests(daytonatest.OpTimer); n != 0 {
			t.Errorf("timer changes = %d, want 0 (already 15)", n)
		}
		if stored := mustState(t, e, "sb-1", "started"); !stored.LastActivityAt.Equal(t0) {
			t.Errorf("lastActivityAt = %s, want %s", stored.LastActivityAt, t0)
		}
		if want := t0.Add(15 * time.Minute); !got.ExpiresAt.Equal(want) || got.PreviewURL == "" {
			t.Errorf("resumed = %+v, want ExpiresAt %s and a preview url", got, want)
		}
	})
	t.Run("RunningNeverShortened", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.AutoStop = 30 })
		got, err := e.p.Resume(context.Background(), "sb-1", 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if stored := mustState(t, e, "sb-1", "started"); stored.AutoStop != 30 || !got.ExpiresAt.Equal(t0.Add(30*time.Minute)) {
			t.Fatalf("autoStop = %d, ExpiresAt = %s; want 30 and %s", stored.AutoStop, got.ExpiresAt, t0.Add(30*time.Minute))
		}
		if n := e.srv.Requests(daytonatest.OpTimer) + e.srv.Requests(daytonatest.OpActivity); n != 0 {
			t.Errorf("guard writes = %d, want 0", n)
		}
	})
	t.Run("RecoverableError", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "error", func(sb *daytonatest.Sandbox) { sb.Recoverable = true })
		if _, err := e.p.Resume(context.Background(), "sb-1", time.Minute); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "started")
		if got := e.srv.Requests(daytonatest.OpRecover); got != 1 {
			t.Errorf("recovers = %d, want 1", got)
		}
	})
	t.Run("PausedResumes", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{ResumeTime: 3 * time.Second})
		MustPut(t, e, "sb-1", "paused", func(sb *daytonatest.Sandbox) { sb.Class = "linux-vm" })
		if _, err := e.p.Resume(context.Background(), "sb-1", time.Minute); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "started")
	})
	t.Run("StartConflictRetried", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "stopped")
		e.srv.Fail(daytonatest.OpStart, daytonatest.Fault{Status: 409})
		if _, err := e.p.Resume(context.Background(), "sb-1", time.Minute); err != nil {
			t.Fatal(err)
		}
		if got := e.srv.Requests(daytonatest.OpStart); got != 2 {
			t.Errorf("starts = %d, want 2", got)
		}
	})
	t.Run("ErrQuota", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "stopped")
		e.srv.Fail(daytonatest.OpStart, daytonatest.Fault{Status: 400, Message: "Total CPU limit exceeded"},
			daytonatest.Fault{Status: 400, Message: "Total CPU limit exceeded"})
		_, err := e.p.Resume(context.Background(), "sb-1", time.Minute)
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "Total CPU limit exceeded") {
			t.Fatalf("err = %v, want a plain error with the quota message", err)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "build_failed")
		if _, err := e.p.Resume(context.Background(), "sb-1", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
		if _, err := e.p.Resume(context.Background(), "nope", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
	})
}

func TestSetTimeout(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.LastActivityAt = t0.Add(-5 * time.Minute) })
	if err := e.p.SetTimeout(context.Background(), "sb-1", 25*time.Minute+time.Second); err != nil {
		t.Fatal(err)
	}
	stored := mustState(t, e, "sb-1", "started")
	if stored.AutoStop != 26 || !stored.LastActivityAt.Equal(t0) {
		t.Fatalf("autoStop = %d, lastActivityAt = %s; want 26 and %s", stored.AutoStop, stored.LastActivityAt, t0)
	}
	// The same timeout again: only the activity refresh, no timer change.
	e.clock.Advance(10 * time.Minute)
	if err := e.p.SetTimeout(context.Background(), "sb-1", 26*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := e.srv.Requests(daytonatest.OpTimer), 1; got != want {
		t.Errorf("timer changes = %d, want %d", got, want)
	}
	if got, want := e.srv.Requests(daytonatest.OpActivity), 2; got != want {
		t.Errorf("activity refreshes = %d, want %d", got, want)
	}
	// The guard holds: 25 min later it is still started, 27 min later stopped.
	e.clock.Advance(25 * time.Minute)
	mustState(t, e, "sb-1", "started")
	e.clock.Advance(2 * time.Minute)
	mustState(t, e, "sb-1", "stopped")
	// Stopped by the guard: not running any more, which the lifecycle
	// service hears as gone (as E2B's 404) and reconciles through Get.
	writes := e.srv.Requests(daytonatest.OpTimer) + e.srv.Requests(daytonatest.OpActivity)
	if err := e.p.SetTimeout(context.Background(), "sb-1", time.Hour); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Fatalf("err = %v, want gone for a stopped sandbox", err)
	}
	if got := e.srv.Requests(daytonatest.OpTimer) + e.srv.Requests(daytonatest.OpActivity); got != writes {
		t.Errorf("a stopped sandbox got %d guard writes", got-writes)
	}
	MustPut(t, e, "sb-2", "starting")
	if err := e.p.SetTimeout(context.Background(), "sb-2", time.Hour); !isKind(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("err = %v, want transient for a starting sandbox", err)
	}
	if err := e.p.SetTimeout(context.Background(), "nope", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Fatalf("err = %v, want gone", err)
	}
	if err := e.p.SetTimeout(context.Background(), "sb-1", 0); err == nil {
		t.Fatal("a zero timeout was accepted")
	}
}

func TestKill(t *testing.T) {
	t.Run("DeletesThenGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{DeleteTime: 5 * time.Second})
		MustPut(t, e, "sb-1", "started")
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		mustState(t, e, "sb-1", "destroying")
		// A second kill while destroying: a delete is under way, success.
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(5 * time.Second)
		if _, err := e.p.Get(context.Background(), "sb-1"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("get after delete: %v, want gone", err)
		}
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatalf("kill of a gone sandbox: %v", err)
		}
	})
	t.Run("ConflictRetried", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpDelete, daytonatest.Fault{Status: 409}, daytonatest.Fault{Status: 409})
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		if got := e.srv.Requests(daytonatest.OpDelete); got != 3 {
			t.Errorf("deletes = %d, want 3", got)
		}
	})
	t.Run("WhileStoppingRetriedUntilSettled", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{StopTime: 2 * time.Second})
		MustPut(t, e, "sb-1", "started")
		if _, err := http.DefaultClient.Do(mustReq(t, e, http.MethodPost, "/sandbox/sb-1/stop")); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.srv.Sandbox("sb-1"); ok {
			t.Fatal("sandbox still there after kill")
		}
	})
	t.Run("ErrStillConflictingIsTransient", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.ConflictRetries = 2 })
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpDelete, daytonatest.Fault{Status: 409}, daytonatest.Fault{Status: 409}, daytonatest.Fault{Status: 409})
		if err := e.p.Kill(context.Background(), "sb-1"); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
	})
	t.Run("ErrLiveForks", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpDelete, daytonatest.Fault{Status: 400, Message: "Sandbox has live forks"})
		err := e.p.Kill(context.Background(), "sb-1")
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "live forks") {
			t.Fatalf("err = %v, want a plain error", err)
		}
	})
	t.Run("ErroredSandboxDeleted", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "error")
		if err := e.p.Kill(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.srv.Sandbox("sb-1"); ok {
			t.Fatal("errored sandbox not deleted")
		}
	})
}

func TestList(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{ListLag: 2 * time.Second})
	for i, st := range []string{"started", "stopped", "archived", "started", "starting", "started"} {
		dep := "dep-a"
		if i == 5 {
			dep = "dep-b"
		}
		MustPut(t, e, idOf(i+1), st, func(sb *daytonatest.Sandbox) {
			sb.Labels = map[string]string{"sandman_deployment": dep, "sandman_session_id": "s" + idOf(i+1)}
		})
	}
	all := func(req lifecycle.ListRequest) []lifecycle.Sandbox {
		t.Helper()
		var out []lifecycle.Sandbox
		for pages := 0; ; pages++ {
			page, err := e.p.List(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if pages > 10 {
				t.Fatal("list does not end")
			}
			out = append(out, page.Sandboxes...)
			if page.NextToken == "" {
				return out
			}
			req.PageToken = page.NextToken
		}
	}
	dep := map[string]string{"sandman_deployment": "dep-a"}
	if got := all(lifecycle.ListRequest{Metadata: dep, Limit: 2}); len(got) != 4 {
		t.Fatalf("dep-a pages of 2: %d sandboxes, want 4 (the starting one is not settled): %+v", len(got), got)
	}
	if got := all(lifecycle.ListRequest{Metadata: dep, States: []lifecycle.SandboxState{lifecycle.SandboxPaused}}); len(got) != 2 ||
		got[0].State != lifecycle.SandboxPaused {
		t.Fatalf("paused: %+v, want stopped and archived", got)
	}
	one := map[string]string{"sandman_deployment": "dep-a", "sandman_session_id": "s" + idOf(4)}
	if got := all(lifecycle.ListRequest{Metadata: one}); len(got) != 1 || got[0].ID != idOf(4) {
		t.Fatalf("by session: %+v", got)
	}
	// Eventually consistent: a deleted sandbox shows for ListLag, then not.
	if err := e.p.Kill(context.Background(), idOf(4)); err != nil {
		t.Fatal(err)
	}
	if got := all(lifecycle.ListRequest{Metadata: one}); len(got) != 1 {
		t.Fatalf("within the lag: %+v, want the stale item", got)
	}
	e.clock.Advance(3 * time.Second)
	if got := all(lifecycle.ListRequest{Metadata: one}); len(got) != 0 {
		t.Fatalf("after the lag: %+v, want none", got)
	}
	t.Run("ErrBadCursor", func(t *testing.T) {
		_, err := e.p.List(context.Background(), lifecycle.ListRequest{PageToken: "forged"})
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want a plain error", err)
		}
	})
	t.Run("ErrUnknownState", func(t *testing.T) {
		if _, err := e.p.List(context.Background(), lifecycle.ListRequest{States: []lifecycle.SandboxState{"gone"}}); err == nil {
			t.Fatal("an unknown state was accepted")
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Run("BucketRetryAfterHonoured", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpGet, daytonatest.Fault{Status: 429, RetryAfter: 3})
		if _, err := e.p.Get(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		if w := e.waits(); len(w) != 1 || w[0] < 3*time.Second {
			t.Fatalf("waits = %v, want one of at least 3s", w)
		}
	})
	t.Run("ErrRetryAfterBeyondMaxWait", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "stopped")
		e.srv.Fail(daytonatest.OpStart, daytonatest.Fault{Status: 429, RetryAfter: 40})
		_, err := e.p.Resume(context.Background(), "sb-1", time.Minute)
		if !isKind(err, lifecycle.ErrProviderTransient) || lifecycle.RetryAfter(err) != 40*time.Second {
			t.Fatalf("err = %v (retry after %s), want transient with 40s", err, lifecycle.RetryAfter(err))
		}
	})
	t.Run("FailUntilStopped", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		stop := e.srv.FailUntil(daytonatest.OpAny, daytonatest.Fault{Status: 429, RetryAfter: 90})
		for _, call := range []func() error{
			func() error { return e.p.Pause(context.Background(), "sb-1") },
			func() error { return e.p.Kill(context.Background(), "sb-1") },
		} {
			if err := call(); !isKind(err, lifecycle.ErrProviderTransient) || lifecycle.RetryAfter(err) != 90*time.Second {
				t.Fatalf("err = %v, want transient with 90s", err)
			}
		}
		stop()
		if err := e.p.Pause(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("PlainRetryAfter", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.MaxRetries = -1 })
		e.srv.Fail(daytonatest.OpList, daytonatest.Fault{Status: 429, RetryAfter: 7, PlainRetryAfter: true})
		_, err := e.p.List(context.Background(), lifecycle.ListRequest{})
		if lifecycle.RetryAfter(err) != 7*time.Second {
			t.Fatalf("err = %v, want retry after 7s", err)
		}
	})
	t.Run("RealLimitOfCreateBucket", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{RateLimits: map[string]int{daytonatest.BucketCreate: 2}})
		MustCreate(t, e, nil)
		MustCreate(t, e, nil)
		_, err := e.p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if !isKind(err, lifecycle.ErrProviderTransient) || lifecycle.RetryAfter(err) <= 0 {
			t.Fatalf("err = %v, want transient with a retry after", err)
		}
	})
	t.Run("RetryAfterOf", func(t *testing.T) {
		h := http.Header{}
		h.Set("Retry-After-Sandbox-Lifecycle", "4")
		h.Set("Retry-After-Authenticated", "9")
		h.Set("X-RateLimit-Reset-Authenticated", "50")
		if got := daytona.RetryAfterOf(h, t0); got != 9*time.Second {
			t.Errorf("RetryAfterOf = %s, want 9s", got)
		}
		h = http.Header{"Retry-After": {t0.Add(90 * time.Second).Format(http.TimeFormat)}}
		if got := daytona.RetryAfterOf(h, t0); got != 90*time.Second {
			t.Errorf("RetryAfterOf(date) = %s, want 90s", got)
		}
		if got := daytona.RetryAfterOf(http.Header{"Retry-After-X": {"-3", "soon"}}, t0); got != 0 {
			t.Errorf("RetryAfterOf(bad) = %s, want 0", got)
		}
	})
}

func TestTransportErrors(t *testing.T) {
	t.Run("DropRetried", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", "started")
		e.srv.Fail(daytonatest.OpGet, daytonatest.Fault{Drop: true}, daytonatest.Fault{Status: 502})
		if _, err := e.p.Get(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
		if got := e.srv.Requests(daytonatest.OpGet); got != 3 {
			t.Errorf("gets = %d, want 3", got)
		}
	})
	t.Run("ErrBadKey", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.APIKey = "wrong" })
		_, err := e.p.Get(context.Background(), "sb-1")
		if err == nil || isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "API key") {
			t.Fatalf("err = %v, want a plain key error", err)
		}
	})
	t.Run("ServesWithoutAPIPrefix", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) {})
		p, err := daytona.New(daytona.Config{BaseURL: e.url, APIKey: e.srv.APIKey(), Clock: e.clock, Sleep: e.sleep})
		if err != nil {
			t.Fatal(err)
		}
		MustPut(t, e, "sb-1", "started")
		if _, err := p.Get(context.Background(), "sb-1"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFakeTimers(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{StopTime: 10 * time.Second, ArchiveTime: time.Minute, DeleteTime: time.Second})
	MustPut(t, e, "sb-1", "started", func(sb *daytonatest.Sandbox) { sb.AutoArchive, sb.AutoDelete = 60, 24*60 })
	e.clock.Advance(15*time.Minute + 10*time.Second)
	mustState(t, e, "sb-1", "stopped")
	if pr, err := e.p.Probe(context.Background(), "sb-1"); err != nil || pr.State != lifecycle.SandboxPaused {
		t.Fatalf("probe after auto-stop = %+v, %v", pr, err)
	}
	e.clock.Advance(time.Hour + time.Minute)
	mustState(t, e, "sb-1", "archived")
	MustPut(t, e, "sb-2", "stopped", func(sb *daytonatest.Sandbox) { sb.AutoDelete = 30 })
	e.clock.Advance(31 * time.Minute)
	if _, err := e.p.Get(context.Background(), "sb-2"); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Fatalf("after auto-delete: %v, want gone", err)
	}
	MustPut(t, e, "sb-3", "started", func(sb *daytonatest.Sandbox) { sb.AutoDestroyAt = e.clock.Now().Add(time.Minute) })
	e.clock.Advance(2 * time.Minute)
	if _, ok := e.srv.Sandbox("sb-3"); ok {
		t.Fatal("ttl did not destroy the sandbox")
	}
}

func TestPreviewURLFromAnswer(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{ProxyDomain: "proxy.eu.daytona.works"})
	sb := MustCreate(t, e, nil)
	u, err := url.Parse(sb.PreviewURL)
	if err != nil || u.Host != "3000-"+sb.ID+".proxy.eu.daytona.works" {
		t.Fatalf("preview url = %q, want the region's domain from the answer", sb.PreviewURL)
	}
}

// TestConcurrent drives many sandboxes at once through one Provider (run
// with -race): each ends in the state its own calls asked for.
func TestConcurrent(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	const n = 16
	for i := range n {
		MustPut(t, e, "sb-"+strings.Repeat("x", i+1), "started")
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "sb-" + strings.Repeat("x", i+1)
			ctx := context.Background()
			if err := e.p.SetTimeout(ctx, id, time.Duration(i+1)*time.Minute); err != nil {
				errs <- err
				return
			}
			if i%2 == 0 {
				errs <- e.p.Pause(ctx, id)
				return
			}
			_, err := e.p.Resume(ctx, id, 5*time.Minute)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		want := "started"
		if i%2 == 0 {
			want = "stopped"
		}
		mustState(t, e, "sb-"+strings.Repeat("x", i+1), want)
	}
}
