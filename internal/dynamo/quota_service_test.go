package dynamo_test

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestQuotaConcurrentCreates is the quota proof on DynamoDB Local:
// 50 concurrent creates on an account with max_running 10 leave exactly 10
// sessions running and answer 40 quota_exceeded (naming the limit) without
// asking the provider; after one is paused one more create succeeds, and a
// resume past the limit is refused the same way.
func TestQuotaConcurrentCreates(t *testing.T) {
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t)})
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, MaxRunning: 10,
		Log: slog.New(slog.DiscardHandler)})
	const account, creates = "acct-quota", 50

	var mu sync.Mutex
	var running []*lifecycle.Session
	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range creates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
			switch {
			case err == nil:
				mu.Lock()
				running = append(running, sess)
				mu.Unlock()
			case lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded):
				refused.Add(1)
				var le *lifecycle.Error
				if !asError(err, &le) || le.ErrorType() != "quota_exceeded" || !contains(le.Message, "10 running sandboxes") {
					t.Errorf("create %d: refusal %v does not name the limit", i, err)
				}
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(running) != 10 || refused.Load() != 40 {
		t.Fatalf("%d created, %d refused; want 10 and 40", len(running), refused.Load())
	}
	for _, s := range running {
		if s.State != lifecycle.StateRunning {
			t.Fatalf("session %s is %s, want running", s.ID, s.State)
		}
	}
	if n := prov.Calls(fake.OpCreate); n != 10 {
		t.Fatalf("provider asked for %d sandboxes, want 10 (a refused create never reaches it)", n)
	}
	slots := func(want int) {
		t.Helper()
		if got, err := svc.RunningSlots(t.Context(), account); err != nil || got != want {
			t.Fatalf("running slots = %d, %v; want %d", got, err, want)
		}
	}
	slots(10)

	paused, err := svc.PauseNow(t.Context(), account, running[0].ID)
	if err != nil || paused.State != lifecycle.StatePaused {
		t.Fatalf("snapshot: %v (%v)", err, paused)
	}
	slots(9)
	extra, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
	if err != nil || extra.State != lifecycle.StateRunning {
		t.Fatalf("create after a pause: %v", err)
	}
	slots(10)
	if _, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
		t.Fatalf("create at the limit again: err = %v, want quota_exceeded", err)
	}
	if _, err := svc.Resume(t.Context(), account, paused.ID); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
		t.Fatalf("resume at the limit: err = %v, want quota_exceeded", err)
	}
	if got, err := store.GetSession(t.Context(), paused.ID); err != nil || got.State != lifecycle.StatePaused {
		t.Fatalf("refused resume left the session %v (%v), want paused", got, err)
	}
	if _, err := svc.Delete(t.Context(), account, extra.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	slots(9)
	if s, err := svc.Resume(t.Context(), account, paused.ID); err != nil || s.State != lifecycle.StateRunning {
		t.Fatalf("resume after a delete: %v", err)
	}
	slots(10)
}

func asError(err error, target **lifecycle.Error) bool { return errors.As(err, target) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestWithoutRunningSlots: a store built without the running-slot counter
// (no quota configured) keeps no counter item, so creating and pausing
// sessions never touches one per-account item; and it refuses a write that
// asks it to enforce a limit it cannot count.
func TestWithoutRunningSlots(t *testing.T) {
	client, table := dynamotest.MustClient(t), dynamotest.MustTable(t)
	store := dynamo.New(dynamo.Config{Client: client, Table: table, WithoutRunningSlots: true})
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Log: slog.New(slog.DiscardHandler)})
	const account = "acct-noslots"
	for range 3 {
		if _, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	// The same table read through a counting store: no counter was kept.
	if n, err := dynamo.New(dynamo.Config{Client: client, Table: table}).RunningSlots(t.Context(), account); err != nil || n != 0 {
		t.Errorf("running slots = %d, %v; want 0 (no counter item)", n, err)
	}

	limited := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, MaxRunning: 5,
		Log: slog.New(slog.DiscardHandler)})
	if _, _, err := limited.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); err == nil {
		t.Error("create with a running limit on a store without the counter: no error")
	}
}
