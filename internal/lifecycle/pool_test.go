package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

const poolLine = "npm run dev"

// poolEnv is readyEnv with one pool of the "base" template serving
// appInput(poolLine, 60) on the fake provider.
func poolEnv(t *testing.T, size int, tier lifecycle.PoolTier, edit ...func(*lifecycle.Config)) (*env, lifecycle.Pool) {
	t.Helper()
	var pool lifecycle.Pool
	e, _ := readyEnv(t, fake.Config{}, append([]func(*lifecycle.Config){func(c *lifecycle.Config) {
		app, err := lifecycle.ResolveApp(nil, appInput(poolLine, 60))
		if err != nil {
			t.Fatal(err)
		}
		pool = lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
			Size: size, Tier: tier, MaxAge: time.Hour}
		c.Pools = []lifecycle.Pool{pool}
	}}, edit...)...)
	return e, pool
}

func (e *env) spares(t *testing.T, poolID string) []*lifecycle.Spare {
	t.Helper()
	sp, err := e.store.ListSpares(t.Context(), poolID)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func (e *env) poolStatus(t *testing.T, poolID string) lifecycle.PoolStatus {
	t.Helper()
	st, err := e.store.PoolStatus(t.Context(), poolID)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestParsePools(t *testing.T) {
	opts := lifecycle.PoolOptions{DefaultProvider: "local", Providers: []string{"local", "e2b"},
		TemplateApps: map[string]*lifecycle.AppSpec{"node": {Port: 3000, StartCommand: "npm run dev", ReadyPath: "/", ReadyTimeout: time.Minute}}}
	t.Run("OK", func(t *testing.T) {
		pools, err := lifecycle.ParsePools(`[{"template":"web","app":{"port":8080,"start_command":"serve"},"size":2},
			{"provider":"e2b","template":"node","size":1,"tier":"running","max_age_seconds":3600}]`, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(pools), 2; got != want {
			t.Fatalf("pools = %d, want %d", got, want)
		}
		p := pools[0]
		if p.Provider != "local" || p.Tier != lifecycle.TierPaused || p.MaxAge != lifecycle.DefaultPoolMaxAge || p.App.ReadyPath != "/" {
			t.Errorf("defaults not applied: %+v", p)
		}
		if got, want := p.ID, lifecycle.PoolID("local", "web", p.App); got != want {
			t.Errorf("id = %s, want %s", got, want)
		}
		if q := pools[1]; q.App == nil || q.App.Port != 3000 || q.Tier != lifecycle.TierRunning || q.MaxAge != time.Hour {
			t.Errorf("template app or tier not applied: %+v", q)
		}
	})
	for name, c := range map[string]struct{ raw, want string }{
		"NotJSON":         {`{`, "JSON array"},
		"UnknownField":    {`[{"template":"web","size":1,"colour":"red"}]`, "colour"},
		"NoTemplate":      {`[{"size":1}]`, "template is required"},
		"NoSize":          {`[{"template":"web"}]`, "size is required"},
		"NegativeSize":    {`[{"template":"web","size":-1}]`, "size is required"},
		"BadTier":         {`[{"template":"web","size":1,"tier":"warm"}]`, `tier "warm"`},
		"ProviderOff":     {`[{"provider":"daytona","template":"web","size":1}]`, `provider "daytona" is not enabled`},
		"BadApp":          {`[{"template":"web","size":1,"app":{"port":0,"start_command":"x"}}]`, "app.port"},
		"BadMaxAge":       {`[{"template":"web","size":1,"max_age_seconds":5}]`, "max_age_seconds"},
		"SamePoolTwice":   {`[{"template":"node","size":1},{"template":"node","size":3,"app":{}}]`, "same provider, template and app as pool 0"},
		"IndexInTheError": {`[{"template":"web","size":1},{"template":"web","size":1,"tier":"x"}]`, "pool 1"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := lifecycle.ParsePools(c.raw, opts); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ParsePools = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestPoolIDFollowsProviderTemplateAndApp(t *testing.T) {
	app := &lifecycle.AppSpec{Port: 3000, StartCommand: "x", ReadyPath: "/", ReadyTimeout: time.Minute, Env: map[string]string{"A": "1", "B": "2"}}
	same := app.Clone()
	same.Env = map[string]string{"B": "2", "A": "1"}
	if a, b := lifecycle.PoolID("local", "web", app), lifecycle.PoolID("local", "web", same); a != b {
		t.Errorf("equal specs give %s and %s", a, b)
	}
	other := app.Clone()
	other.Port = 3001
	for name, id := range map[string]string{
		"provider": lifecycle.PoolID("e2b", "web", app),
		"template": lifecycle.PoolID("local", "node", app),
		"app":      lifecycle.PoolID("local", "web", other),
		"no app":   lifecycle.PoolID("local", "web", nil),
	} {
		if id == lifecycle.PoolID("local", "web", app) {
			t.Errorf("another %s gives the same id %s", name, id)
		}
	}
}

func TestReapOrphanKnowsPoolSandboxes(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	spare := e.spares(t, pool.ID)[0]
	// An orphan: a pool sandbox whose fill died before recording it.
	orphan, err := e.fake.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour,
		Metadata: map[string]string{lifecycle.MetadataPool: pool.ID}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
	sbs := map[string]lifecycle.Sandbox{}
	for _, sb := range e.fake.Sandboxes() {
		sbs[sb.ID] = sb
	}
	if killed, err := e.svc.ReapOrphan(t.Context(), sbs[spare.SandboxID]); err != nil || killed {
		t.Errorf("reap of a ready spare = %v, %v; want left alone", killed, err)
	}
	if killed, err := e.svc.ReapOrphan(t.Context(), sbs[orphan.ID]); err != nil || !killed {
		t.Errorf("reap of an unrecorded pool sandbox = %v, %v; want killed", killed, err)
	}
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	sb, _ := e.fake.Sandbox(sess.SandboxID)
	if killed, err := e.svc.ReapOrphan(t.Context(), sb); err != nil || killed {
		t.Errorf("reap of a claimed spare's sandbox = %v, %v; want left alone", killed, err)
	}
	if _, err := e.svc.Delete(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
}

func TestPoolViewsCountSparesAndTheirTime(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) {
		c.Prices = map[string]lifecycle.Price{"fake": {RunningPerHour: 3600, PausedPerHour: 36}}
	})
	e.svc.FillPools(t.Context())
	sp := e.spares(t, pool.ID)[0]
	upTo := sp.ReadyAt.Sub(sp.CreatedAt) // both spares ran this long, then paused
	e.clock.Advance(time.Hour)
	e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)}) // one spare claimed, one left
	views, err := e.svc.PoolViews(t.Context())
	if err != nil || len(views) != 1 {
		t.Fatalf("views = %v, %v", views, err)
	}
	v := views[0]
	if v.Ready != 1 || v.Making != 0 || v.Status.Hits != 1 || v.HitRate() != 1 {
		t.Errorf("view = %+v, want 1 ready and one hit", v)
	}
	if got, want := v.Usage.PausedSeconds, 2*time.Hour.Seconds(); got < want-1 || got > want {
		t.Errorf("paused seconds = %v, want about %v (two spares, an hour each)", got, want)
	}
	if got, want := v.Usage.RunningSeconds, 2*upTo.Seconds(); got != want {
		t.Errorf("running seconds = %v, want %v (until each was ready)", got, want)
	}
	if v.Usage.EstimatedCostUSD <= 0 {
		t.Errorf("cost = %v, want the configured prices applied", v.Usage.EstimatedCostUSD)
	}
}
