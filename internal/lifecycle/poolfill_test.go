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
)

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
