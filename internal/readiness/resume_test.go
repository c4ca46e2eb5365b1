package readiness_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// TestWakeResumeDoesNotWaitBehindSlowApps: with every slot of the app
// worker held by apps that never answer (four bring-ups for two slots),
// an open of another tenant's paused session is finished by the resume
// worker at once: the session is running within seconds while the slow
// apps are all still starting. With the resumes on the app worker, the
// same open would wait for a slot for the apps' whole ready timeout.
func TestWakeResumeDoesNotWaitBehindSlowApps(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	apps := readiness.New(readiness.Config{Concurrency: 2, Log: log})
	resumes := readiness.New(readiness.Config{Concurrency: 2, Log: log})
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: prov, Clock: clock, Log: log,
		ReadinessJobs: apps, ResumeJobs: resumes, ReadyHTTP: &http.Client{Transport: prov.Preview()}})
	ctx, cancel := context.WithCancel(t.Context())
	apps.Start(ctx, svc.BringUp)
	resumes.Start(ctx, svc.FinishResume)
	t.Cleanup(func() { cancel(); apps.Close(); resumes.Close() })
	const acct = "acct_wake"

	back, _, err := svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PauseNow(ctx, acct, back.ID); err != nil {
		t.Fatal(err)
	}
	port, line, timeout := 3000, "npm run dev --no-listen", int64(1800)
	var slow []string
	for range 4 {
		s, _, err := svc.Create(ctx, "acct_slow", lifecycle.CreateInput{Template: "base",
			App: &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeout}})
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, s.ID)
	}
	for deadline := time.Now().Add(5 * time.Second); prov.StartCalls() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slow apps started, want both app slots busy", prov.StartCalls())
		}
	}

	start := time.Now()
	if _, err := svc.Open(ctx, acct, back.ID); err != nil {
		t.Fatalf("open: %v", err)
	}
	for {
		got, err := svc.Get(ctx, acct, back.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == lifecycle.StateRunning {
			t.Logf("the woken session is running %v after its open", time.Since(start))
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the woken session is still %s after %v: its resume waits behind the slow apps", got.State, time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, id := range slow {
		got, err := svc.Get(ctx, "acct_slow", id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Readiness != lifecycle.ReadinessStarting {
			t.Errorf("slow app %s is %q, want still starting (holding its slot)", id, got.Readiness)
		}
	}
	if n := prov.StartCalls(); n != 2 {
		t.Errorf("%d slow apps started, want 2: the app slots stay full throughout", n)
	}
}
