package e2b_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// The readiness job through the E2B adapter against the fake: envd starts
// the app, the proxy answers 502 "port is not open" until it listens, and a
// full pause keeps it, so a resume comes back ready without a second start.
func TestBringUpThroughEnvd(t *testing.T) {
	srv := e2btest.NewServer(t)
	srv.SetBootDelay(3 * time.Second)
	p, _ := MustProvider(t, srv)
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: p, Clock: srv.Clock,
		Log: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, d time.Duration) error {
			srv.Clock.Advance(d)
			return ctx.Err()
		}})
	port, line, timeout := 3000, "npm run dev", int64(60)
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base",
		App: &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeout}})
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.PortURL(sess.SandboxID, "", 3000); sess.PreviewURL != want {
		t.Errorf("preview_url %q, want the app port's %q", sess.PreviewURL, want)
	}
	if out, err := svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("BringUp after create = %q, %v; want ready", out, err)
	}
	procs := srv.Processes(sess.SandboxID)
	if len(procs) != 1 || procs[0].Tag != lifecycle.AppCommandName || procs[0].Cmd != "/bin/bash" ||
		procs[0].Envs["PORT"] != "3000" {
		t.Fatalf("processes %+v, want one bash -l -c tagged %s with PORT=3000", procs, lifecycle.AppCommandName)
	}
	if _, err := svc.PauseNow(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resume(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	if out, err := svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("BringUp after resume = %q, %v; want ready", out, err)
	}
	if n := srv.Starts(); n != 1 {
		t.Errorf("processes started = %d, want 1 (E2B keeps them across a full pause)", n)
	}
}

// A readiness job that dies after envd started the app and before ready was
// recorded is delivered again: it finds the tagged process, starts none, and
// records ready. One server runs.
func TestBringUpRedeliveredStartsOneServerThroughEnvd(t *testing.T) {
	srv := e2btest.NewServer(t)
	srv.SetBootDelay(3 * time.Second)
	p, _ := MustProvider(t, srv)
	cfg := lifecycle.Config{Store: memstore.New(), Provider: p, Clock: srv.Clock, Log: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, d time.Duration) error {
			srv.Clock.Advance(d)
			return ctx.Err()
		}}
	svc := lifecycle.NewService(cfg)
	port, line := 3000, "npm run dev"
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base",
		App: &lifecycle.AppInput{Port: &port, StartCommand: &line}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	dying := cfg
	dying.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	if out, err := lifecycle.NewService(dying).BringUp(ctx, sess.ID); err == nil {
		t.Fatalf("the dying job returned %q without an error", out)
	}
	if srv.Starts() != 1 {
		t.Fatalf("processes started by the dying job = %d, want 1", srv.Starts())
	}
	if out, err := svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("redelivered BringUp = %q, %v; want ready", out, err)
	}
	if n := srv.Starts(); n != 1 {
		t.Errorf("processes started = %d, want 1", n)
	}
}
