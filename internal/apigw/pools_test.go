package apigw_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

const poolCreateBody = `{"template":"base","app":{"port":3000,"start_command":"npm run dev"}}`

// withPool rebuilds h's handlers on a service over the bare store (a
// lifecycle.PoolStore) with one paused-tier pool of size for poolCreateBody's
// template and app, whose spares the fake provider brings up.
func (h *harness) withPool(tb testing.TB, size int) lifecycle.Pool {
	tb.Helper()
	return h.withPoolApp(tb, size, nil)
}

// withPoolApp is withPool whose app also has env.
func (h *harness) withPoolApp(tb testing.TB, size int, env map[string]string) lifecycle.Pool {
	tb.Helper()
	port, line := 3000, "npm run dev"
	app, err := lifecycle.ResolveApp(nil, &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: env})
	if err != nil {
		tb.Fatal(err)
	}
	pool := lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
		Size: size, Tier: lifecycle.TierPaused, MaxAge: time.Hour}
	cfg := h.svc.Config()
	cfg.Store, cfg.Pools = h.store, []lifecycle.Pool{pool}
	cfg.ReadyHTTP = &http.Client{Transport: h.prov.Preview()}
	cfg.Sleep = func(ctx context.Context, d time.Duration) error { h.clock.Advance(d); return ctx.Err() }
	h.svc = lifecycle.NewService(cfg)
	for _, fn := range apiFunctions {
		hd, err := apigw.New(apigw.Config{Function: fn, Service: h.svc, Keys: h.store, Log: apigwLogger(h.logs)})
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
	return pool
}

// TestPoolsRoute: GET /v1/pools lists the configured pool with its ready
// spares and counters, a create matching it answers from_pool true, and a
// pool whose app fails shows why; every answer is validated against the
// OpenAPI document.
func TestPoolsRoute(t *testing.T) {
	h := MustHarness(t)
	r := h.invoke(t, MustEvent(t, "pools.json"))
	wantStatus(t, r, 200)
	if l := mustDecode[api.PoolList](t, r); len(l.Pools) != 0 {
		t.Errorf("pools without configuration = %v, want none", l.Pools)
	}

	pool := h.withPool(t, 2)
	if sum := h.svc.FillPools(t.Context()); sum.Made != 2 {
		t.Fatalf("fill = %+v", sum)
	}
	s := h.mustCreate(t, withBody(poolCreateBody))
	if !s.FromPool || s.State != "running" {
		t.Errorf("create = %s from_pool=%v, want running from the pool", s.State, s.FromPool)
	}
	if cold := h.mustCreate(t); cold.FromPool {
		t.Errorf("a create of another template says from_pool")
	}
	r = h.invoke(t, MustEvent(t, "pools.json"))
	wantStatus(t, r, 200)
	l := mustDecode[api.PoolList](t, r)
	if len(l.Pools) != 1 {
		t.Fatalf("pools = %+v, want one", l.Pools)
	}
	p := l.Pools[0]
	if p.ID != pool.ID || p.Size != 2 || p.Tier != "paused" || p.Ready != 1 || p.Hits != 1 || p.HitRate != 1 ||
		p.LastError != nil || p.BackoffUntil != nil || p.App == nil || p.App.Port != 3000 {
		t.Errorf("pool = %+v, want 1 ready spare and 1 hit", p)
	}

	r = h.invoke(t, MustEvent(t, "pools.json", withKey("")))
	wantStatus(t, r, 401)

	// Usage carries the pools as the deployment's own line.
	h.clock.Advance(time.Hour)
	r = h.invoke(t, MustEvent(t, "usage.json"))
	wantStatus(t, r, 200)
	var u struct {
		Pools *api.PoolUsage `json:"pools"`
	}
	if err := json.Unmarshal([]byte(r.body), &u); err != nil || u.Pools == nil || u.Pools.PausedSeconds < 3600 {
		t.Errorf("usage pools = %+v, want the spares' paused hour", u.Pools)
	}
}

// TestPoolsRouteShowsAStoppedPool: a pool whose app exits stops after three
// failures and GET /v1/pools says why and until when.
func TestPoolsRouteShowsAStoppedPool(t *testing.T) {
	h := MustHarness(t)
	h.withPool(t, 1)
	cfg := h.svc.Config()
	app, _ := lifecycle.ResolveApp(nil, &lifecycle.AppInput{Port: ptr(3000), StartCommand: ptr("exit 2")})
	cfg.Pools[0].App, cfg.Pools[0].ID = app, lifecycle.PoolID("fake", "base", app)
	h.svc = lifecycle.NewService(cfg)
	hd, err := apigw.New(apigw.Config{Function: "sessions", Service: h.svc, Keys: h.store, Log: apigwLogger(h.logs)})
	if err != nil {
		t.Fatal(err)
	}
	h.handlers["sessions"] = hd
	for range 4 {
		h.svc.FillPools(t.Context())
	}
	r := h.invoke(t, MustEvent(t, "pools.json"))
	wantStatus(t, r, 200)
	p := mustDecode[api.PoolList](t, r).Pools[0]
	if p.Failed != 3 || p.ConsecutiveFailures != 3 || p.LastError == nil || p.BackoffUntil == nil || p.Ready != 0 {
		t.Errorf("pool = %+v, want 3 failures, the last error and a backoff", p)
	}
}

// TestPoolsRouteShowsNoEnvValues: a pool's app env may hold the
// deployment's secrets and pools are read with any account's key, so GET
// /v1/pools names the variables (sorted) and shows no value, to the
// deployment's own key and to another account's alike.
func TestPoolsRouteShowsNoEnvValues(t *testing.T) {
	h := MustHarness(t)
	h.withPoolApp(t, 1, map[string]string{"DATABASE_URL": "postgres://app:hunter2@db/app", "STRIPE_KEY": "sk_live_s3cret", "A": "1"})
	for name, key := range map[string]string{"DevKey": apigw.DevAPIKey, "OtherAccount": h.otherKey} {
		t.Run(name, func(t *testing.T) {
			r := h.invoke(t, MustEvent(t, "pools.json", withKey(key)))
			wantStatus(t, r, 200)
			for _, secret := range []string{"hunter2", "sk_live_s3cret", `"env"`} {
				if strings.Contains(r.body, secret) {
					t.Errorf("GET /v1/pools shows %q: %s", secret, r.body)
				}
			}
			l := mustDecode[api.PoolList](t, r)
			if len(l.Pools) != 1 || l.Pools[0].App == nil {
				t.Fatalf("pools = %+v, want one with an app", l.Pools)
			}
			if got, want := strings.Join(l.Pools[0].App.EnvNames, ","), "A,DATABASE_URL,STRIPE_KEY"; got != want {
				t.Errorf("env_names = %q, want %q", got, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
