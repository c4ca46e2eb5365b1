package dynamo_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// poolService is a service on DynamoDB Local with one paused-tier pool of
// size 2 for the "base" template and an app the fake provider serves.
func poolService(t *testing.T) (*lifecycle.Service, *dynamo.Store, *fake.Provider, *lifecycle.ManualClock, lifecycle.Pool) {
	t.Helper()
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t)})
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	port, line, timeout := 3000, "npm run dev", int64(60)
	app, err := lifecycle.ResolveApp(nil, &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	pool := lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
		Size: 2, Tier: lifecycle.TierPaused, MaxAge: time.Hour}
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Log: slog.New(slog.DiscardHandler),
		Pools: []lifecycle.Pool{pool}, MaxRunning: 100, ReadyHTTP: &http.Client{Transport: prov.Preview()},
		Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }})
	return svc, store, prov, clock, pool
}

// TestPoolConcurrentCreatesOnDynamoDB: on DynamoDB Local, 10 concurrent
// creates against a pool of 2 take the 2 spares (each once, by the claim's
// transaction) and create 8 cold; all 10 run; the spares never showed as
// sessions or running slots.
func TestPoolConcurrentCreatesOnDynamoDB(t *testing.T) {
	svc, store, _, _, pool := poolService(t)
	const account = "acct-pool"
	if sum := svc.FillPools(t.Context()); sum.Made != 2 {
		t.Fatalf("fill = %+v, want 2 made", sum)
	}
	if n, _ := store.RunningSlots(t.Context(), account); n != 0 {
		t.Errorf("running slots before any create = %d, want 0", n)
	}
	fromPool, cold := storetest.ConcurrentCreates(t, 10, func() (*lifecycle.Session, error) {
		port, line, timeout := 3000, "npm run dev", int64(60)
		sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base",
			App: &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeout}})
		return sess, err
	})
	if fromPool != 2 || cold != 8 {
		t.Fatalf("from pool %d, cold %d; want 2 and 8", fromPool, cold)
	}
	page, err := store.ListSessions(t.Context(), account, "", 100)
	if err != nil || len(page.Sessions) != 10 {
		t.Errorf("listed sessions = %d (%v), want the 10 creates and no spare", len(page.Sessions), err)
	}
	if n, _ := store.RunningSlots(t.Context(), account); n != 10 {
		t.Errorf("running slots = %d, want 10", n)
	}
	if st, _ := store.PoolStatus(t.Context(), pool.ID); st.Hits != 2 || st.Misses != 8 {
		t.Errorf("pool status = %+v, want 2 hits and 8 misses", st)
	}
}

// TestSweepFillsPoolsAndKnowsTheirSandboxes: the sweep's run fills the
// pool, its provider-list phase leaves the spares alone and kills a pool
// sandbox no spare item names.
func TestSweepFillsPoolsAndKnowsTheirSandboxes(t *testing.T) {
	svc, store, prov, clock, pool := poolService(t)
	sw := sweep.New(svc, sweep.Config{Rate: 1000}, slog.New(slog.DiscardHandler))
	sum, err := sw.Run(t.Context())
	if err != nil || sum.SparesMade != 2 {
		t.Fatalf("first run = %+v, %v; want 2 spares made", sum, err)
	}
	orphan, err := prov.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: 24 * time.Hour,
		Metadata: map[string]string{lifecycle.MetadataPool: pool.ID, lifecycle.MetadataDeployment: svc.Deployment()}})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(svc.Policy().LeaseDuration + time.Minute)
	sum, err = sw.Run(t.Context())
	if err != nil || sum.OrphansKilled != 1 || sum.SparesMade != 0 {
		t.Fatalf("second run = %+v, %v; want the orphan killed and nothing made", sum, err)
	}
	if _, ok := prov.Sandbox(orphan.ID); ok {
		t.Errorf("the unrecorded pool sandbox is alive")
	}
	spares, err := store.ListSpares(t.Context(), pool.ID)
	if err != nil || len(spares) != 2 {
		t.Fatalf("spares = %d (%v), want 2", len(spares), err)
	}
	for _, sp := range spares {
		if _, ok := prov.Sandbox(sp.SandboxID); !ok {
			t.Errorf("spare %s was reaped", sp.SandboxID)
		}
	}
}
