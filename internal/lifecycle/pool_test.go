package lifecycle_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
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

func TestFillPoolsMakesReadyPausedSparesThatAreNotSessions(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) { c.MaxRunning = 1 })
	sum := e.svc.FillPools(t.Context())
	if sum.Made != 2 || sum.Failed != 0 {
		t.Fatalf("fill = %+v, want 2 made", sum)
	}
	spares := e.spares(t, pool.ID)
	if len(spares) != 2 {
		t.Fatalf("spares = %d, want 2", len(spares))
	}
	for _, sp := range spares {
		if sp.Status != lifecycle.SpareReady || sp.ReadyAt.IsZero() {
			t.Errorf("spare %s is %s, want ready", sp.SandboxID, sp.Status)
		}
		if got := e.sandboxState(sp.SandboxID); got != lifecycle.SandboxPaused {
			t.Errorf("spare sandbox %s is %s, want paused (tier paused)", sp.SandboxID, got)
		}
		sb, _ := e.fake.Sandbox(sp.SandboxID)
		if sb.Metadata[lifecycle.MetadataPool] != pool.ID || sb.Metadata[lifecycle.MetadataSessionID] != "" {
			t.Errorf("spare sandbox metadata = %v, want the pool and no session", sb.Metadata)
		}
	}
	if n := e.fake.StartCalls(); n != 2 {
		t.Errorf("app starts = %d, want one per spare", n)
	}
	if page, err := e.store.ListSessions(t.Context(), acct, "", 100); err != nil || len(page.Sessions) != 0 {
		t.Errorf("sessions = %v (%v), want none: a spare is not a session", page.Sessions, err)
	}
	for _, ix := range []lifecycle.DueIndex{lifecycle.IndexIdle, lifecycle.IndexLease, lifecycle.IndexPaused} {
		page, err := e.store.FindDue(t.Context(), lifecycle.DueQuery{Index: ix, Before: e.clock.Now().Add(48 * time.Hour), Limit: 100})
		if err != nil || len(page.Sessions) != 0 {
			t.Errorf("%s index holds %d (%v), want no spare", ix, len(page.Sessions), err)
		}
	}
	if again := e.svc.FillPools(t.Context()); again.Made != 0 {
		t.Errorf("a full pool made %d more", again.Made)
	}
	// A spare holds no running slot: the account's one slot is free.
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !sess.FromPool {
		t.Errorf("create did not take a spare")
	}
}

func TestCreateTakesAReadySpareAndResumesIt(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	spare := e.spares(t, pool.ID)[0]
	e.fake.ResetCalls()
	starts := e.fake.StartCalls()

	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60), Metadata: map[string]string{"user": "u1"}})
	if !sess.FromPool || sess.PoolID != pool.ID || sess.SandboxID != spare.SandboxID {
		t.Fatalf("session from_pool=%v pool=%s sandbox=%s, want the spare %s", sess.FromPool, sess.PoolID, sess.SandboxID, spare.SandboxID)
	}
	if sess.State != lifecycle.StateRunning || sess.Readiness != lifecycle.ReadinessStarting {
		t.Errorf("session %s/%s, want running and starting", sess.State, sess.Readiness)
	}
	if got := e.sandboxState(sess.SandboxID); got != lifecycle.SandboxRunning {
		t.Errorf("sandbox %s, want running", got)
	}
	if n := e.fake.Calls(fake.OpCreate); n != 0 {
		t.Errorf("provider creates = %d, want none", n)
	}
	if got := e.mustGet(t, sess.ID); got.Metadata["user"] != "u1" || !got.FromPool {
		t.Errorf("stored session = %+v, want its metadata and from_pool", got)
	}
	if len(e.spares(t, pool.ID)) != 0 {
		t.Errorf("the claimed spare is still listed")
	}
	if m, err := e.store.GetSpare(t.Context(), pool.ID, spare.SandboxID); err != nil || m.Status != lifecycle.SpareClaimed || m.SessionID != sess.ID {
		t.Errorf("claimed marker = %+v (%v), want claimed by %s", m, err, sess.ID)
	}
	var types []string
	for _, ev := range e.events.events {
		if ev.SessionID == sess.ID {
			types = append(types, ev.DetailType())
		}
	}
	if got, want := strings.Join(types, ","), "Session Provisioning,Session Running"; got != want {
		t.Errorf("events = %s, want %s (as a cold create)", got, want)
	}
	// Readiness: the app kept running through the pause, so the job finds it.
	if out, err := e.svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpReady {
		t.Errorf("bring up = %s, %v; want ready", out, err)
	}
	if n := e.fake.StartCalls() - starts; n != 0 {
		t.Errorf("app starts after the claim = %d, want none: the spare's app kept running", n)
	}

	cold := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if cold.FromPool {
		t.Errorf("a create on an empty pool says from_pool")
	}
	other := e.mustCreate(t, lifecycle.CreateInput{App: appInput("other", 60)})
	if other.FromPool {
		t.Errorf("a create of another app took a spare")
	}
	st := e.poolStatus(t, pool.ID)
	if st.Hits != 1 || st.Misses != 1 || st.Claims != 1 {
		t.Errorf("status = %+v, want 1 claim, 1 hit, 1 miss (the other app matches no pool)", st)
	}
}

func TestConcurrentCreatesNeverShareASpare(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	fromPool, cold := storetest.ConcurrentCreates(t, 10, func() (*lifecycle.Session, error) {
		sess, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60)})
		return sess, err
	})
	if fromPool != 2 || cold != 8 {
		t.Errorf("from pool %d, cold %d; want 2 and 8", fromPool, cold)
	}
	if st := e.poolStatus(t, pool.ID); st.Hits != 2 || st.Misses != 8 {
		t.Errorf("status = %+v, want 2 hits and 8 misses", st)
	}
}

func TestClaimThatDiesBeforeTheResumeIsCompletedByReconcile(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	spare := e.spares(t, pool.ID)[0]
	// The create dies between the claim's write and the resume: every
	// resume fails, as a process killed there never calls it.
	e.fake.SetFault(fake.OpResume, fake.Fault{Rate: 1})
	_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60)})
	if !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Fatalf("create = %v, want unavailable", err)
	}
	e.fake.ClearFaults()
	page, err := e.store.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexLease, Before: e.clock.Now().Add(time.Hour), Limit: 10})
	if err != nil || len(page.Sessions) != 1 {
		t.Fatalf("sessions under a lease = %d (%v), want the claim's", len(page.Sessions), err)
	}
	sess := page.Sessions[0]
	if sess.State != lifecycle.StateProvisioning || !sess.FromPool || sess.SandboxID != spare.SandboxID {
		t.Fatalf("after the crash: %s from_pool=%v sandbox=%s; want provisioning with the spare", sess.State, sess.FromPool, sess.SandboxID)
	}
	if len(e.spares(t, pool.ID)) != 0 {
		t.Fatalf("the spare is still listed next to its session")
	}
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
	changed, err := e.svc.Reconcile(t.Context(), sess)
	if err != nil || !changed {
		t.Fatalf("reconcile = %v, %v; want changed", changed, err)
	}
	got := e.mustGet(t, sess.ID)
	if got.State != lifecycle.StateRunning || got.SandboxID != spare.SandboxID {
		t.Errorf("after reconcile: %s on %s, want running on the spare's sandbox", got.State, got.SandboxID)
	}
	if st := e.sandboxState(spare.SandboxID); st != lifecycle.SandboxRunning {
		t.Errorf("sandbox %s, want running", st)
	}
}

func TestClaimAtTheQuotaLeavesTheSpare(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused, func(c *lifecycle.Config) { c.MaxRunning = 1 })
	e.svc.FillPools(t.Context())
	e.mustCreate(t, lifecycle.CreateInput{}) // another template: cold, takes the one slot
	_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60)})
	if !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
		t.Fatalf("create = %v, want quota_exceeded", err)
	}
	if sp := e.spares(t, pool.ID); len(sp) != 1 || sp[0].Status != lifecycle.SpareReady {
		t.Errorf("spares = %v, want the spare still ready", sp)
	}
	if n, _ := e.store.RunningSlots(t.Context(), acct); n != 1 {
		t.Errorf("running slots = %d, want 1", n)
	}
}

func TestPoolStopsAfterThreeFailuresAndBacksOff(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) {
		app, _ := lifecycle.ResolveApp(nil, appInput("exit 3", 60))
		c.Pools[0].App, c.Pools[0].ID = app, lifecycle.PoolID("fake", "base", app)
	})
	pool = e.svc.Pools()[0]
	for range 4 {
		e.svc.FillPools(t.Context())
	}
	st := e.poolStatus(t, pool.ID)
	if st.ConsecutiveFailures != lifecycle.PoolFailureLimit || st.Failed != 3 {
		t.Fatalf("status = %+v, want 3 failures in a row and no more tries", st)
	}
	if !strings.Contains(st.LastError, "exited with code 3") {
		t.Errorf("last error = %q, want the command's exit", st.LastError)
	}
	if got, want := st.BackoffUntil, st.LastErrorAt.Add(lifecycle.DefaultPoolBackoff); !got.Equal(want) {
		t.Errorf("backoff until %s, want %s", got, want)
	}
	if n := e.fake.Calls(fake.OpCreate); n != 3 {
		t.Errorf("provider creates = %d, want 3", n)
	}
	if live := e.fake.Sandboxes(); len(live) != 0 {
		t.Errorf("%d failed spares left alive, want all killed", len(live))
	}
	if sum := e.svc.FillPools(t.Context()); sum.Stopped != 1 || sum.Made+sum.Failed != 0 {
		t.Errorf("fill while backing off = %+v, want the pool skipped", sum)
	}
	e.clock.Advance(lifecycle.DefaultPoolBackoff)
	if sum := e.svc.FillPools(t.Context()); sum.Failed != 1 {
		t.Errorf("fill after the backoff = %+v, want one try", sum)
	}
	if st := e.poolStatus(t, pool.ID); st.BackoffUntil.Sub(st.LastErrorAt) != 2*lifecycle.DefaultPoolBackoff {
		t.Errorf("second backoff %s, want doubled", st.BackoffUntil.Sub(st.LastErrorAt))
	}
}

func TestPoolBackoffDoublesUpToItsCap(t *testing.T) {
	for failures, want := range map[int]time.Duration{2: 0, 3: time.Minute, 4: 2 * time.Minute, 5: 4 * time.Minute, 12: time.Hour, 100: time.Hour} {
		if got := lifecycle.PoolBackoff(failures); got != want {
			t.Errorf("PoolBackoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

func TestFillReplacesSparesOlderThanMaxAge(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	old := e.spares(t, pool.ID)[0]
	e.clock.Advance(pool.MaxAge)
	sum := e.svc.FillPools(t.Context())
	if sum.Retired != 1 || sum.Made != 1 {
		t.Fatalf("fill = %+v, want 1 retired and 1 made", sum)
	}
	if got := e.sandboxState(old.SandboxID); got != "gone" {
		t.Errorf("old spare's sandbox is %s, want killed", got)
	}
	if sp := e.spares(t, pool.ID); len(sp) != 1 || sp[0].SandboxID == old.SandboxID {
		t.Errorf("spares = %v, want one new spare", sp)
	}
}

func TestRunningTierKeepsSparesRunning(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierRunning)
	e.svc.FillPools(t.Context())
	sp := e.spares(t, pool.ID)[0]
	if got := e.sandboxState(sp.SandboxID); got != lifecycle.SandboxRunning {
		t.Fatalf("running-tier spare is %s, want running", got)
	}
	e.clock.Advance(40 * time.Minute) // past half of the capped 1 h timeout
	e.svc.FillPools(t.Context())
	if got := e.spares(t, pool.ID)[0]; !got.ExpiresAt.After(sp.ExpiresAt) {
		t.Errorf("expires_at %s, want extended beyond %s", got.ExpiresAt, sp.ExpiresAt)
	}
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !sess.FromPool || sess.State != lifecycle.StateRunning {
		t.Errorf("create = %s from_pool=%v, want running from the pool", sess.State, sess.FromPool)
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

func TestAFillCutShortIsNotAPoolFailure(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused)
	// The fill's context ends while the spares' apps start (a sweep's
	// deadline).
	ctx, cancel := context.WithCancel(t.Context())
	e.fake.SetOnCall(func(op fake.Op, _ string) {
		if op == fake.OpStartCommand {
			cancel()
		}
	})
	e.svc.FillPools(ctx)
	e.fake.SetOnCall(nil)
	if st := e.poolStatus(t, pool.ID); st.ConsecutiveFailures != 0 || st.Failed != 0 {
		t.Errorf("status = %+v, want no failure counted", st)
	}
	if sp := e.spares(t, pool.ID); len(sp) != 0 {
		t.Errorf("spares = %v, want the cut ones dropped", sp)
	}
	if live := e.fake.Sandboxes(); len(live) != 0 {
		t.Errorf("%d sandboxes left, want the cut spares killed", len(live))
	}
	if sum := e.svc.FillPools(t.Context()); sum.Made != 2 {
		t.Errorf("next fill = %+v, want the pool filled", sum)
	}
}

// lostClaimAnswer is a store whose claims commit but answer an error, as a
// table that timed out after applying the write.
type lostClaimAnswer struct {
	lifecycle.Store
	lifecycle.PoolStore
}

func (s lostClaimAnswer) ClaimSpare(ctx context.Context, sp *lifecycle.Spare, sess *lifecycle.Session) error {
	if err := s.PoolStore.ClaimSpare(ctx, sp, sess); err != nil {
		return err
	}
	return &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: "the session store did not answer"}
}

func TestClaimWhoseAnswerWasLostStillCompletes(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	cfg := e.svc.Config()
	cfg.Store = lostClaimAnswer{Store: cfg.Store, PoolStore: cfg.Store.(lifecycle.PoolStore)}
	svc := lifecycle.NewService(cfg)
	sess, _, err := svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60)})
	if err != nil {
		t.Fatalf("create = %v, want the committed claim completed", err)
	}
	if !sess.FromPool || sess.State != lifecycle.StateRunning {
		t.Errorf("session %s from_pool=%v, want running from the pool", sess.State, sess.FromPool)
	}
	if page, _ := e.store.ListSessions(t.Context(), acct, "", 10); len(page.Sessions) != 1 {
		t.Errorf("sessions = %d, want exactly the claimed one (no cold create besides)", len(page.Sessions))
	}
	if sp := e.spares(t, pool.ID); len(sp) != 0 {
		t.Errorf("spares = %v, want none", sp)
	}
}

func TestClaimedSpareGoneAtTheProviderGetsACreateColdForTheSameSession(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused, func(c *lifecycle.Config) { c.MaxRunning = 2 })
	e.svc.FillPools(t.Context())
	spare := e.spares(t, pool.ID)[0]
	e.fake.Forget(spare.SandboxID) // the provider expired it
	e.fake.ResetCalls()

	in := lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60), IdempotencyKey: "k1"}
	sess, replay, err := e.svc.Create(t.Context(), acct, in)
	if err != nil || replay {
		t.Fatalf("create = %v (replay %v), want a session", err, replay)
	}
	if sess.State != lifecycle.StateRunning || sess.FromPool || sess.PoolID != "" || sess.SandboxID == "" || sess.SandboxID == spare.SandboxID {
		t.Fatalf("session %s from_pool=%v pool=%q on %q; want running on a cold sandbox, not from the pool",
			sess.State, sess.FromPool, sess.PoolID, sess.SandboxID)
	}
	if got := e.sandboxState(sess.SandboxID); got != lifecycle.SandboxRunning {
		t.Errorf("the cold sandbox is %s, want running", got)
	}
	sb, _ := e.fake.Sandbox(sess.SandboxID)
	if sb.Metadata[lifecycle.MetadataSessionID] != sess.ID {
		t.Errorf("the cold sandbox's metadata = %v, want it tagged with the session", sb.Metadata)
	}
	if n := e.fake.Calls(fake.OpCreate); n != 1 {
		t.Errorf("provider creates = %d, want 1", n)
	}
	if got := e.mustGet(t, sess.ID); got.State != lifecycle.StateRunning || got.FromPool || got.SandboxID != sess.SandboxID {
		t.Errorf("stored session = %s from_pool=%v on %s, want what the create answered", got.State, got.FromPool, got.SandboxID)
	}
	if page, _ := e.store.ListSessions(t.Context(), acct, "", 10); len(page.Sessions) != 1 {
		t.Errorf("sessions = %d, want the one the claim wrote", len(page.Sessions))
	}
	if n, _ := e.store.RunningSlots(t.Context(), acct); n != 1 {
		t.Errorf("running slots = %d, want 1: the claim's slot, not a second", n)
	}
	if got, want := strings.Join(statesOf(e.events.to(sess.ID)), ","), "provisioning,running"; got != want {
		t.Errorf("events = %s, want %s (one provisioning, from the claim)", got, want)
	}
	again, replay, err := e.svc.Create(t.Context(), acct, in)
	if err != nil || !replay || again.ID != sess.ID {
		t.Errorf("replay of the key = %v, %v, %v; want the same session", again, replay, err)
	}
	st := e.poolStatus(t, pool.ID)
	if st.Lost != 1 || st.Hits != 0 || st.Misses != 1 || st.Claims != 1 {
		t.Errorf("status = %+v, want 1 claim, 1 lost, no hit, 1 miss", st)
	}
	if !strings.Contains(st.LastError, spare.SandboxID) || !strings.Contains(st.LastError, "gone") || st.ConsecutiveFailures != 0 {
		t.Errorf("health = %+v, want the lost spare as last error and no fill failure", st.PoolHealth)
	}
}

func TestClaimedSpareGoneAndTheColdCreateFailingFailsTheSessionAndFreesItsKey(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused, func(c *lifecycle.Config) { c.MaxRunning = 2 })
	e.svc.FillPools(t.Context())
	e.fake.Forget(e.spares(t, pool.ID)[0].SandboxID)
	e.fake.FailNext(fake.OpCreate, lifecycle.ErrSandboxConflict)

	in := lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60), IdempotencyKey: "k1"}
	if _, _, err := e.svc.Create(t.Context(), acct, in); err == nil {
		t.Fatal("create succeeded, want the provider's refusal")
	}
	page, _ := e.store.ListSessions(t.Context(), acct, "", 10)
	if len(page.Sessions) != 1 || page.Sessions[0].State != lifecycle.StateFailed {
		t.Fatalf("sessions = %v, want the claim's, failed", page.Sessions)
	}
	if n, _ := e.store.RunningSlots(t.Context(), acct); n != 0 {
		t.Errorf("running slots = %d, want the failed session's given back", n)
	}
	sess, replay, err := e.svc.Create(t.Context(), acct, in)
	if err != nil || replay || sess.ID == page.Sessions[0].ID {
		t.Errorf("retry with the key = %v, replay %v, %v; want a new attempt", sess, replay, err)
	}
}

func statesOf(states []lifecycle.State) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// refillLog is a lifecycle.PoolRefills that keeps the requests, as a queue
// would until its consumer runs them.
type refillLog struct {
	mu    sync.Mutex
	pools []string
}

func (l *refillLog) RequestRefill(_ context.Context, poolID, _ string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pools = append(l.pools, poolID)
	return nil
}

func TestClaimsAskForARefillThatBringsThePoolBackWithoutASweep(t *testing.T) {
	refills := &refillLog{}
	e, pool := poolEnv(t, 3, lifecycle.TierPaused, func(c *lifecycle.Config) { c.PoolRefills = refills })
	e.svc.FillPools(t.Context())
	e.fake.ResetCalls()
	fromPool, cold := storetest.ConcurrentCreates(t, 3, func() (*lifecycle.Session, error) {
		sess, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60)})
		return sess, err
	})
	if fromPool != 3 || cold != 0 {
		t.Fatalf("from pool %d, cold %d; want 3 and 0", fromPool, cold)
	}
	if len(e.spares(t, pool.ID)) != 0 {
		t.Fatalf("the pool is not empty after 3 claims")
	}
	if got := len(refills.pools); got != 3 {
		t.Fatalf("refill requests = %d, want one per claim", got)
	}
	// The queue's consumer runs the requests of one pool one after another
	// (its message group); no sweep runs.
	made := 0
	for _, id := range refills.pools {
		sum, err := e.svc.FillPool(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		made += sum.Made
	}
	ready := 0
	for _, sp := range e.spares(t, pool.ID) {
		if sp.Status == lifecycle.SpareReady {
			ready++
		}
	}
	if ready != pool.Size {
		t.Errorf("ready spares after the refills = %d, want %d", ready, pool.Size)
	}
	if n := e.fake.Calls(fake.OpCreate); made != 3 || n != 3 {
		t.Errorf("spares made %d, provider creates %d; want 3 each: the later requests find the pool full", made, n)
	}
}

func TestConcurrentRefillsOfAPoolMakeOnlyWhatIsMissing(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := e.svc.FillPool(t.Context(), pool.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.fake.Calls(fake.OpCreate); n != 2 {
		t.Errorf("provider creates = %d, want 2: eight refills of an empty pool of 2 make 2", n)
	}
	if _, err := e.svc.FillPool(t.Context(), "pool_0000000000000000"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("refill of an unknown pool = %v, want not_found", err)
	}
}

func TestLocalRefillAfterClaimBringsThePoolBack(t *testing.T) {
	e, pool := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) {
		c.RefillAfterClaim, c.Background = true, t.Context()
	})
	e.svc.FillPools(t.Context())
	e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	// The refills run in the background: wait for them (real time).
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := 0
		for _, sp := range e.spares(t, pool.ID) {
			if sp.Status == lifecycle.SpareReady {
				ready++
			}
		}
		if ready == pool.Size {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ready spares = %d after 10 s, want %d", ready, pool.Size)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// FillPool waits for a fill under way; it finds nothing to make.
	if sum, err := e.svc.FillPool(t.Context(), pool.ID); err != nil || sum.Made != 0 {
		t.Errorf("fill after the refills = %+v, %v; want nothing made", sum, err)
	}
	if n := e.fake.Calls(fake.OpCreate); n != 4 {
		t.Errorf("provider creates = %d, want 4 (2 at boot, 2 refills)", n)
	}
}

// crashInTheColdFallback leaves a dead claim: a create with key "k1" claimed
// a pool's spare, found its sandbox gone, and the process died as it asked
// the provider for the cold sandbox; the clock is past the session's lease.
// It returns the input to retry with.
func crashInTheColdFallback(t *testing.T) (*env, lifecycle.Pool, lifecycle.CreateInput) {
	t.Helper()
	e, pool := poolEnv(t, 1, lifecycle.TierPaused)
	e.svc.FillPools(t.Context())
	e.fake.Forget(e.spares(t, pool.ID)[0].SandboxID)
	crasher := &reliability.Crasher{At: func(s reliability.Step) bool { return s.Op == "create" }}
	dying := e.svc.Config()
	dying.Store, dying.Provider = crasher.Store(dying.Store), crasher.Provider(dying.Provider)
	in := lifecycle.CreateInput{Template: "base", App: appInput(poolLine, 60), IdempotencyKey: "k1"}
	if _, _, err := lifecycle.NewService(dying).Create(t.Context(), acct, in); err == nil {
		t.Fatal("the dying create succeeded")
	}
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
	return e, pool, in
}

func TestReplayAfterACrashInTheColdFallbackCompletesTheSession(t *testing.T) {
	e, pool, in := crashInTheColdFallback(t)
	// The client retries with its key: the claim is completed, cold.
	sess, replay, err := e.svc.Create(t.Context(), acct, in)
	if err != nil || !replay {
		t.Fatalf("retry = %v, replay %v; want the first create's session", err, replay)
	}
	if sess.State != lifecycle.StateRunning || sess.FromPool || e.sandboxState(sess.SandboxID) != lifecycle.SandboxRunning {
		t.Errorf("session %s from_pool=%v on %s; want running on a cold sandbox", sess.State, sess.FromPool, sess.SandboxID)
	}
	if page, _ := e.store.ListSessions(t.Context(), acct, "", 10); len(page.Sessions) != 1 {
		t.Errorf("sessions = %d, want 1", len(page.Sessions))
	}
	if st := e.poolStatus(t, pool.ID); st.Lost != 1 {
		t.Errorf("lost = %d, want 1: counted once, by the create that wrote the outcome", st.Lost)
	}
}

// refusedRefills is a lifecycle.PoolRefills whose queue is down.
type refusedRefills struct{}

func (refusedRefills) RequestRefill(context.Context, string, string) error {
	return lifecycle.Errorf(lifecycle.CodeUnavailable, "the pool refill queue did not take the request")
}

func TestARefillRequestThatCannotBeSentLeavesTheClaimAndTheSweepRefills(t *testing.T) {
	e, pool := poolEnv(t, 1, lifecycle.TierPaused, func(c *lifecycle.Config) { c.PoolRefills = refusedRefills{} })
	e.svc.FillPools(t.Context())
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !sess.FromPool || sess.State != lifecycle.StateRunning {
		t.Errorf("create = %s from_pool=%v, want running from the pool", sess.State, sess.FromPool)
	}
	if sum := e.svc.FillPools(t.Context()); sum.Made != 1 {
		t.Errorf("the sweep's fill = %+v, want the spare the lost request would have made", sum)
	}
	if len(e.spares(t, pool.ID)) != 1 {
		t.Errorf("the pool is not back to its size after the sweep's fill")
	}
}

// TestTwoCompletionsOfOneLostClaimCountItOnce: two completions of the same
// dead claim overlap (a client's retry and the sweep's reconcile, both
// after the lease): both find the spare gone and go cold, one writes the
// session running, the other loses its conditional write and kills its
// sandbox. The spare is counted lost once, by the one that wrote.
func TestTwoCompletionsOfOneLostClaimCountItOnce(t *testing.T) {
	e, pool, in := crashInTheColdFallback(t)

	// The first completion stops at its provider create until the second
	// has written the session running.
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpCreate {
			return
		}
		first := false
		once.Do(func() { first = true })
		if first {
			close(reached)
			<-release
		}
	})
	firstErr := make(chan error, 1)
	go func() {
		_, _, err := e.svc.Create(t.Context(), acct, in)
		firstErr <- err
	}()
	<-reached
	sess, _, err := e.svc.Create(t.Context(), acct, in)
	if err != nil || sess.State != lifecycle.StateRunning {
		t.Fatalf("second completion = %v, %v; want the session running", sess, err)
	}
	close(release)
	if err := <-firstErr; err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("first completion = %v, want the session or a conflict: the second wrote the outcome", err)
	}
	e.fake.SetOnCall(nil)

	if got := e.mustGet(t, sess.ID); got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
		t.Errorf("stored session %s on %s, want running on %s", got.State, got.SandboxID, sess.SandboxID)
	}
	if live := e.fake.Sandboxes(); len(live) != 1 {
		t.Errorf("%d sandboxes live, want 1: the losing completion kills its own", len(live))
	}
	if st := e.poolStatus(t, pool.ID); st.Lost != 1 || st.Hits != 0 || st.Misses != 1 {
		t.Errorf("status = %+v, want the spare lost once: 1 lost, 0 hits, 1 miss", st)
	}
}

// tokenPreviews is the fake provider with Daytona's private previews: each
// port's preview URL carries its token as a query.
type tokenPreviews struct{ *fake.Provider }

const previewToken = "DAYTONA_SANDBOX_AUTH_KEY=tok123"

func (p tokenPreviews) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	u, err := p.Provider.PortURL(ctx, sandboxID, port)
	return u + "?" + previewToken, err
}

// probeLog is a RoundTripper that keeps the URL of every request before the
// fake's preview serves it.
type probeLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []*url.URL
}

func (l *probeLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.urls = append(l.urls, req.URL)
	l.mu.Unlock()
	return l.next.RoundTrip(req)
}

// TestPoolFillProbesTheReadyPathAndKeepsThePreviewQuery: a spare's probe
// joins the app's ready path to the preview URL's path and keeps the
// preview's query (Daytona's token) whole, as a session's readiness probe
// does; appending the path to the whole URL would spoil the token and probe
// the root.
func TestPoolFillProbesTheReadyPathAndKeepsThePreviewQuery(t *testing.T) {
	probes := &probeLog{}
	var pool lifecycle.Pool
	e := newEnv(t, func(c *lifecycle.Config) {
		p := fake.New(fake.Config{Clock: c.Clock})
		probes.next = p.Preview()
		c.Provider = tokenPreviews{p}
		c.ReadyHTTP = &http.Client{Transport: probes}
		in := appInput(poolLine, 60)
		health := "/health"
		in.ReadyPath = &health
		app, err := lifecycle.ResolveApp(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		pool = lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
			Size: 1, Tier: lifecycle.TierPaused, MaxAge: time.Hour}
		c.Pools = []lifecycle.Pool{pool}
	})
	if sum := e.svc.FillPools(t.Context()); sum.Made != 1 || sum.Failed != 0 {
		t.Fatalf("fill = %+v, want 1 made", sum)
	}
	probes.mu.Lock()
	urls := probes.urls
	probes.mu.Unlock()
	if len(urls) == 0 {
		t.Fatal("the fill probed nothing")
	}
	for _, u := range urls {
		if got, want := u.Path, "/health"; got != want {
			t.Errorf("probe %s: path %q, want %q", u, got, want)
		}
		if got, want := u.RawQuery, previewToken; got != want {
			t.Errorf("probe %s: query %q, want %q (the preview's token, whole)", u, got, want)
		}
	}
	spares := e.spares(t, pool.ID)
	if len(spares) != 1 {
		t.Fatalf("spares = %d, want 1", len(spares))
	}
	if got := spares[0].PreviewURL; !strings.HasSuffix(got, "?"+previewToken) {
		t.Errorf("spare preview URL = %q, want the port's URL with its token", got)
	}
}

// TestPoolRemovedFromTheConfigurationDrainsItsSparesAtBoot: a process that
// boots without a pool (taken out of SANDMAN_POOLS) kills that pool's
// ready spares and deletes their items at once, without waiting a lease;
// the spares of a pool still configured and the sandbox a session claimed
// from the removed pool are left alone.
func TestPoolRemovedFromTheConfigurationDrainsItsSparesAtBoot(t *testing.T) {
	var kept lifecycle.Pool
	e, removed := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) {
		app, err := lifecycle.ResolveApp(nil, appInput("npm start", 60))
		if err != nil {
			t.Fatal(err)
		}
		kept = lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
			Size: 1, Tier: lifecycle.TierPaused, MaxAge: time.Hour}
		c.Pools = append(c.Pools, kept)
	})
	if sum := e.svc.FillPools(t.Context()); sum.Made != 3 {
		t.Fatalf("fill = %+v, want 3 made", sum)
	}
	claimed := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !claimed.FromPool {
		t.Fatal("create did not take a spare")
	}
	drained := e.spares(t, removed.ID)
	keptSpares := e.spares(t, kept.ID)
	if len(drained) != 1 || len(keptSpares) != 1 {
		t.Fatalf("spares before the drain: %d of the removed pool, %d of the kept one; want 1 and 1", len(drained), len(keptSpares))
	}

	cfg := e.svc.Config()
	cfg.Pools = []lifecycle.Pool{kept} // the next boot's configuration
	killed, err := lifecycle.NewService(cfg).DrainRemovedPools(t.Context())
	if err != nil || killed != 1 {
		t.Fatalf("drain = %d, %v; want 1 killed", killed, err)
	}
	if got := e.sandboxState(drained[0].SandboxID); got != "gone" {
		t.Errorf("the removed pool's spare sandbox is %s, want gone", got)
	}
	if left := e.spares(t, removed.ID); len(left) != 0 {
		t.Errorf("the removed pool keeps %d spare items, want none", len(left))
	}
	if got := e.sandboxState(keptSpares[0].SandboxID); got != lifecycle.SandboxPaused {
		t.Errorf("the kept pool's spare is %s, want paused (left alone)", got)
	}
	if got := e.sandboxState(claimed.SandboxID); got != lifecycle.SandboxRunning {
		t.Errorf("the claimed sandbox is %s, want running (its session's)", got)
	}
}
