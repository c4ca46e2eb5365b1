package sweep_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// t0 is when every test's service clock starts.
var t0 = time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)

const (
	account = "acct_sweep"
	// idleTimeout is the default policy's: sessions created at t0 are due at
	// t0+10m, and their provider-side timeout fires at t0+12m.
	idleTimeout = 10 * time.Minute
)

// env is one test's world: a fresh table, a fake provider and a service on
// a manual clock.
type env struct {
	clock *lifecycle.ManualClock
	prov  *fake.Provider
	store *hookStore
	svc   *lifecycle.Service
}

// hookStore wraps the session store so a test can act between a sweep's
// index query and its writes, or make the query fail.
type hookStore struct {
	lifecycle.Store

	mu           sync.Mutex
	afterFindDue func(q lifecycle.DueQuery, page lifecycle.SessionPage)
	findDueErr   error
}

// FindDue calls the wrapped store, then the hook.
func (s *hookStore) FindDue(ctx context.Context, q lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	s.mu.Lock()
	hook, ferr := s.afterFindDue, s.findDueErr
	s.mu.Unlock()
	if ferr != nil {
		return lifecycle.SessionPage{}, ferr
	}
	page, err := s.Store.FindDue(ctx, q)
	if err == nil && hook != nil {
		hook(q, page)
	}
	return page, err
}

func (s *hookStore) setAfterFindDue(f func(q lifecycle.DueQuery, page lifecycle.SessionPage)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterFindDue = f
}

// MustEnv returns a fresh env on its own in-memory store (memstore, which
// keeps the DynamoDB store's due indexes and conditional writes).
func MustEnv(tb testing.TB, opts ...func(*fake.Config)) *env {
	tb.Helper()
	return mustEnvOn(tb, memstore.New(), opts...)
}

// MustDynamoEnv returns a fresh env on its own DynamoDB Local table; without
// DynamoDB Local it skips or fails (dynamotest).
func MustDynamoEnv(tb testing.TB, opts ...func(*fake.Config)) *env {
	tb.Helper()
	return mustEnvOn(tb, dynamo.New(dynamo.Config{Client: dynamotest.MustClient(tb), Table: dynamotest.MustTable(tb), Log: quiet()}), opts...)
}

// envMaker builds an env: MustEnv or MustDynamoEnv.
type envMaker func(tb testing.TB, opts ...func(*fake.Config)) *env

func mustEnvOn(tb testing.TB, sessions lifecycle.Store, opts ...func(*fake.Config)) *env {
	tb.Helper()
	clock := lifecycle.NewManualClock(t0)
	provCfg := fake.Config{Clock: clock}
	for _, o := range opts {
		o(&provCfg)
	}
	prov := fake.New(provCfg)
	store := &hookStore{Store: sessions}
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: quiet()})
	return &env{clock: clock, prov: prov, store: store, svc: svc}
}

// quiet is a logger that drops everything: the service logs every
// transition, which is noise at 1,000 sessions.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// MustSessions creates n running sessions through the service at the
// clock's current time, 16 at a time.
func MustSessions(tb testing.TB, e *env, n int) []*lifecycle.Session {
	tb.Helper()
	out := make([]*lifecycle.Session, n)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range out {
		g.Go(func() error {
			sess, _, err := e.svc.Create(tb.Context(), account, lifecycle.CreateInput{Template: "base"})
			out[i] = sess
			return err
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatalf("create sessions: %v", err)
	}
	return out
}

// MustSweeper returns a sweeper on e's service with no rate limit (the
// tests are about outcomes, not pacing) unless cfg sets one.
func MustSweeper(tb testing.TB, e *env, cfg sweep.Config) *sweep.Sweeper {
	tb.Helper()
	if cfg.Rate == 0 {
		cfg.Rate = rate.Inf
	}
	return sweep.New(e.svc, cfg, quiet())
}

// MustRun runs sw once and fails the test on an error.
func MustRun(tb testing.TB, ctx context.Context, sw *sweep.Sweeper) sweep.Summary {
	tb.Helper()
	sum, err := sw.Run(ctx)
	if err != nil {
		tb.Fatalf("run: %v", err)
	}
	return sum
}

// MustState fails the test unless the stored session id has state want.
func MustState(tb testing.TB, e *env, id string, want lifecycle.State) *lifecycle.Session {
	tb.Helper()
	sess, err := e.store.GetSession(tb.Context(), id)
	if err != nil {
		tb.Fatalf("get session %s: %v", id, err)
	}
	if got := sess.State; got != want {
		tb.Fatalf("session %s state = %s, want %s", id, got, want)
	}
	return sess
}

// MustUpdate moves sess to state to through the store (no provider call),
// as a crashed control plane would leave it.
func MustUpdate(tb testing.TB, e *env, sess *lifecycle.Session, to lifecycle.State) {
	tb.Helper()
	from := sess.State
	if err := sess.Transition(to, lifecycle.ReasonRequest, e.clock.Now(), e.svc.Policy()); err != nil {
		tb.Fatalf("transition %s: %v", sess.ID, err)
	}
	if err := e.store.UpdateSession(tb.Context(), sess, from, lifecycle.Guard{}); err != nil {
		tb.Fatalf("update %s: %v", sess.ID, err)
	}
}

// TestRunIdle runs on memstore and on DynamoDB Local: its races (a
// heartbeat mid-sweep, overlapping runs) rest on the due-by guard of the
// store's conditional write.
func TestRunIdle(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testRunIdle(t, MustEnv) })
	t.Run("dynamodb", func(t *testing.T) { testRunIdle(t, MustDynamoEnv) })
}

func testRunIdle(t *testing.T, mustEnv envMaker) {
	t.Run("PausesExactlyTheIdle", func(t *testing.T) {
		e := mustEnv(t)
		setup := time.Now()
		// Due at the idle timeout plus the 30 s coalescing window.
		idle := MustSessions(t, e, 300) // due at t0+10m30s
		e.clock.Advance(5 * time.Minute)
		busy := MustSessions(t, e, 700) // due at t0+15m30s
		t.Logf("created 1000 sessions in %v", time.Since(setup))
		e.clock.Set(t0.Add(11*time.Minute + 30*time.Second))
		e.prov.ResetCalls()

		start := time.Now()
		sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))
		t.Logf("swept 1000 sessions in %v: %+v", time.Since(start), sum)

		if got, want := sum.Candidates, 300; got != want {
			t.Errorf("candidates = %d, want %d", got, want)
		}
		if got, want := sum.Paused, 300; got != want {
			t.Errorf("paused = %d, want %d", got, want)
		}
		if got, want := sum.Failed+sum.Skipped+sum.Expired, 0; got != want {
			t.Errorf("failed+skipped+expired = %d, want %d", got, want)
		}
		if got, want := e.prov.Calls(fake.OpPause), 300; got != want {
			t.Errorf("provider pause calls = %d, want %d", got, want)
		}
		if sum.Incomplete {
			t.Error("incomplete = true, want false")
		}
		// Everything was paused at t0+11m30s, one minute after its deadline.
		if got, want := sum.LagMaxMS, int64(time.Minute/time.Millisecond); got != want {
			t.Errorf("lag max = %d ms, want %d", got, want)
		}
		if got, want := sum.LagP50MS, int64(time.Minute/time.Millisecond); got != want {
			t.Errorf("lag p50 = %d ms, want %d", got, want)
		}
		for _, s := range idle {
			if got, want := e.prov.CallsFor(fake.OpPause, s.SandboxID), 1; got != want {
				t.Fatalf("pause calls for idle %s = %d, want %d", s.ID, got, want)
			}
			if sb, _ := e.prov.Sandbox(s.SandboxID); sb.State != lifecycle.SandboxPaused {
				t.Fatalf("idle sandbox %s is %s, want paused", s.SandboxID, sb.State)
			}
			got := MustState(t, e, s.ID, lifecycle.StatePaused)
			if got.Reason != lifecycle.ReasonIdle {
				t.Fatalf("idle %s reason = %q, want %q", s.ID, got.Reason, lifecycle.ReasonIdle)
			}
		}
		for _, s := range busy {
			if got, want := e.prov.CallsFor(fake.OpPause, s.SandboxID), 0; got != want {
				t.Fatalf("pause calls for busy %s = %d, want %d", s.ID, got, want)
			}
			if got := MustState(t, e, s.ID, lifecycle.StateRunning); got.Version != s.Version {
				t.Fatalf("busy %s version = %d, want %d (untouched)", s.ID, got.Version, s.Version)
			}
		}

		again := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))
		if got, want := again.Candidates, 0; got != want {
			t.Errorf("second run candidates = %d, want %d", got, want)
		}
	})

	t.Run("HeartbeatMidSweepWins", func(t *testing.T) {
		e := mustEnv(t)
		sessions := MustSessions(t, e, 10)
		e.clock.Set(t0.Add(11 * time.Minute))
		beating := sessions[3]
		var once sync.Once
		e.store.setAfterFindDue(func(q lifecycle.DueQuery, page lifecycle.SessionPage) {
			if q.Index != lifecycle.IndexIdle {
				return
			}
			once.Do(func() {
				// The query saw it due; the heartbeat lands before the pause.
				if _, err := e.svc.Heartbeat(context.Background(), account, beating.ID); err != nil {
					t.Errorf("heartbeat: %v", err)
				}
			})
		})

		sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))

		if got, want := sum.Candidates, 10; got != want {
			t.Errorf("candidates = %d, want %d", got, want)
		}
		if got, want := sum.Paused, 9; got != want {
			t.Errorf("paused = %d, want %d", got, want)
		}
		if got, want := sum.Skipped, 1; got != want {
			t.Errorf("skipped = %d, want %d", got, want)
		}
		MustState(t, e, beating.ID, lifecycle.StateRunning)
		if got, want := e.prov.CallsFor(fake.OpPause, beating.SandboxID), 0; got != want {
			t.Errorf("pause calls for the heartbeat's session = %d, want %d", got, want)
		}
		if sb, _ := e.prov.Sandbox(beating.SandboxID); sb.State != lifecycle.SandboxRunning {
			t.Errorf("heartbeat's sandbox is %s, want running", sb.State)
		}
	})

	t.Run("OverlappingRunsPauseOnce", func(t *testing.T) {
		e := mustEnv(t)
		sessions := MustSessions(t, e, 200)
		e.clock.Set(t0.Add(11 * time.Minute))
		e.prov.ResetCalls()
		// Both runs have read their first page before either pauses.
		var ready sync.WaitGroup
		ready.Add(2)
		e.store.setAfterFindDue(func(q lifecycle.DueQuery, _ lifecycle.SessionPage) {
			if q.Index == lifecycle.IndexIdle && q.Cursor == "" {
				ready.Done()
				ready.Wait()
			}
		})

		sums := make([]sweep.Summary, 2)
		var g errgroup.Group
		for i := range sums {
			g.Go(func() error {
				var err error
				sums[i], err = MustSweeper(t, e, sweep.Config{Concurrency: 4, PageSize: 50}).Run(t.Context())
				return err
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("run: %v", err)
		}

		if got, want := sums[0].Paused+sums[1].Paused, 200; got != want {
			t.Errorf("paused by both runs = %d (%d + %d), want %d", got, sums[0].Paused, sums[1].Paused, want)
		}
		if got, want := sums[0].Failed+sums[1].Failed, 0; got != want {
			t.Errorf("failed = %d, want %d", got, want)
		}
		if got := sums[0].Skipped + sums[1].Skipped; got == 0 {
			t.Error("skipped = 0, want the runs to have collided at least once")
		}
		if got, want := e.prov.Calls(fake.OpPause), 200; got != want {
			t.Errorf("provider pause calls = %d, want %d", got, want)
		}
		for _, s := range sessions {
			if got, want := e.prov.CallsFor(fake.OpPause, s.SandboxID), 1; got != want {
				t.Fatalf("pause calls for %s = %d, want %d", s.ID, got, want)
			}
			MustState(t, e, s.ID, lifecycle.StatePaused)
		}
	})

	t.Run("ProviderFailuresRetriedNextRun", func(t *testing.T) {
		e := mustEnv(t, func(c *fake.Config) { c.Seed = 7 })
		sessions := MustSessions(t, e, 100)
		e.clock.Set(t0.Add(11 * time.Minute))
		e.prov.SetFault(fake.OpPause, fake.Fault{Rate: 0.3})

		first := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))

		if first.Failed == 0 || first.Paused == 0 {
			t.Fatalf("first run paused %d and failed %d, want some of each", first.Paused, first.Failed)
		}
		if got, want := first.Paused+first.Failed, 100; got != want {
			t.Errorf("paused+failed = %d, want %d", got, want)
		}
		running := 0
		for _, s := range sessions {
			sess, err := e.store.GetSession(t.Context(), s.ID)
			if err != nil {
				t.Fatalf("get %s: %v", s.ID, err)
			}
			sb, _ := e.prov.Sandbox(s.SandboxID)
			switch sess.State {
			case lifecycle.StateRunning:
				running++
				if sb.State != lifecycle.SandboxRunning {
					t.Errorf("failed %s: sandbox %s, want running", s.ID, sb.State)
				}
			case lifecycle.StatePaused:
			default:
				t.Errorf("%s state = %s, want running or paused", s.ID, sess.State)
			}
		}
		if got, want := running, first.Failed; got != want {
			t.Errorf("sessions left running = %d, want %d (the failed ones)", got, want)
		}

		e.prov.ClearFaults()
		e.clock.Advance(30 * time.Second) // before the provider's own timeout at t0+12m
		second := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))

		if got, want := second.Paused, first.Failed; got != want {
			t.Errorf("second run paused = %d, want %d", got, want)
		}
		for _, s := range sessions {
			MustState(t, e, s.ID, lifecycle.StatePaused)
		}
	})

	t.Run("ShortDeadlineStopsEarly", func(t *testing.T) {
		// Every provider pause takes one second of wall time, told by a
		// manual wall clock instead of slept; the deadline leaves 20 s of
		// work before the margin.
		wall := lifecycle.NewManualClock(time.Now())
		e := mustEnv(t, func(c *fake.Config) {
			c.Sleep = func(ctx context.Context, d time.Duration) error {
				wall.Advance(d)
				return ctx.Err()
			}
		})
		sessions := MustSessions(t, e, 100)
		e.clock.Set(t0.Add(11 * time.Minute))
		e.prov.SetFault(fake.OpPause, fake.Fault{Delay: time.Second})
		e.prov.ResetCalls()
		cfg := sweep.Config{Concurrency: 4, PageSize: 25, DeadlineMargin: time.Hour, Wall: wall}

		ctx, cancel := context.WithDeadline(t.Context(), wall.Now().Add(time.Hour+20*time.Second))
		defer cancel()
		first := MustRun(t, ctx, MustSweeper(t, e, cfg))

		if !first.Incomplete {
			t.Fatalf("incomplete = false, want true: %+v", first)
		}
		if first.Paused < 20 || first.Paused >= 100 {
			t.Errorf("first run paused = %d, want about 20 (20 s of 1 s pauses)", first.Paused)
		}
		if got, want := first.Failed+first.Skipped, 0; got != want {
			t.Errorf("failed+skipped = %d, want %d: work under way must finish", got, want)
		}
		if got, want := e.prov.Calls(fake.OpPause), first.Paused; got != want {
			t.Errorf("provider pause calls = %d, want %d", got, want)
		}
		if got, want := first.Listed, 0; got != want {
			t.Errorf("listed = %d, want %d: later phases must not start", got, want)
		}

		second := MustRun(t, t.Context(), MustSweeper(t, e, cfg))
		if second.Incomplete {
			t.Errorf("second run incomplete = true, want false")
		}
		if got, want := first.Paused+second.Paused, 100; got != want {
			t.Errorf("paused over both runs = %d, want %d", got, want)
		}
		for _, s := range sessions {
			if got, want := e.prov.CallsFor(fake.OpPause, s.SandboxID), 1; got != want {
				t.Fatalf("pause calls for %s = %d, want %d", s.ID, got, want)
			}
			MustState(t, e, s.ID, lifecycle.StatePaused)
		}
	})

	t.Run("SandboxGoneExpires", func(t *testing.T) {
		e := mustEnv(t)
		sessions := MustSessions(t, e, 3)
		e.clock.Set(t0.Add(11 * time.Minute))
		e.prov.Forget(sessions[0].SandboxID)

		sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))

		if got, want := sum.Expired, 1; got != want {
			t.Errorf("expired = %d, want %d", got, want)
		}
		if got, want := sum.Paused, 2; got != want {
			t.Errorf("paused = %d, want %d", got, want)
		}
		MustState(t, e, sessions[0].ID, lifecycle.StateExpired)
	})
}

func TestRunLeases(t *testing.T) {
	e := MustEnv(t)
	s := MustSessions(t, e, 3)
	pausedAtProvider, resumedAtProvider, gone := s[0], s[1], s[2]

	// Each left in a transitional state by a control plane that died after
	// the provider acted.
	MustUpdate(t, e, pausedAtProvider, lifecycle.StatePausing)
	e.prov.SetState(pausedAtProvider.SandboxID, lifecycle.SandboxPaused)

	MustUpdate(t, e, resumedAtProvider, lifecycle.StatePaused)
	e.prov.SetState(resumedAtProvider.SandboxID, lifecycle.SandboxPaused)
	MustUpdate(t, e, resumedAtProvider, lifecycle.StateResuming)
	e.prov.SetState(resumedAtProvider.SandboxID, lifecycle.SandboxRunning)

	MustUpdate(t, e, gone, lifecycle.StatePausing)
	e.prov.Forget(gone.SandboxID)

	provisioning := &lifecycle.Session{
		ID: lifecycle.NewSessionID(), AccountID: account, Provider: e.prov.Name(), Template: "base",
		State: lifecycle.StateProvisioning, Reason: lifecycle.ReasonRequest, IdleTimeout: idleTimeout,
		CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now(), LeaseExpiresAt: e.clock.Now().Add(e.svc.Policy().LeaseDuration),
	}
	if err := e.store.CreateSession(t.Context(), provisioning); err != nil {
		t.Fatalf("create provisioning session: %v", err)
	}

	sw := MustSweeper(t, e, sweep.Config{ReconcileSample: -1})
	t.Run("NotBeforeTheLeaseRunsOut", func(t *testing.T) {
		sum := MustRun(t, t.Context(), sw)
		if got, want := sum.Leases, 0; got != want {
			t.Errorf("leases = %d, want %d", got, want)
		}
		MustState(t, e, pausedAtProvider.ID, lifecycle.StatePausing)
	})

	t.Run("Reconciled", func(t *testing.T) {
		e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
		sum := MustRun(t, t.Context(), sw)
		if got, want := sum.Leases, 4; got != want {
			t.Errorf("leases = %d, want %d", got, want)
		}
		if got, want := sum.Reconciled, 4; got != want {
			t.Errorf("reconciled = %d, want %d", got, want)
		}
		MustState(t, e, pausedAtProvider.ID, lifecycle.StatePaused)
		MustState(t, e, resumedAtProvider.ID, lifecycle.StateRunning)
		MustState(t, e, gone.ID, lifecycle.StateExpired)
		MustState(t, e, provisioning.ID, lifecycle.StateFailed)
		if got, want := e.prov.Calls(fake.OpResume)+e.prov.Calls(fake.OpPause), 0; got != want {
			t.Errorf("provider pause+resume calls = %d, want %d: reconcile only reads", got, want)
		}
	})
}

func TestRunProviderList(t *testing.T) {
	e := MustEnv(t)
	s := MustSessions(t, e, 5)
	// The provider paused one on its own and the webhook was lost.
	autoPaused := s[0]
	e.prov.SetState(autoPaused.SandboxID, lifecycle.SandboxPaused)
	// Another was paused, then traffic woke it, and that webhook was lost too.
	woken := s[1]
	if _, err := e.svc.PauseNow(t.Context(), account, woken.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	e.prov.SetState(woken.SandboxID, lifecycle.SandboxRunning)
	// A sandbox no session holds.
	stray, err := e.prov.Create(t.Context(), lifecycle.CreateRequest{Template: "base", AutoPause: true})
	if err != nil {
		t.Fatalf("create stray sandbox: %v", err)
	}
	e.clock.Advance(time.Minute) // nothing is due yet
	e.prov.ResetCalls()

	sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{PageSize: 2}))

	if got, want := sum.Listed, 6; got != want {
		t.Errorf("listed = %d, want %d", got, want)
	}
	if got, want := sum.Unknown, 1; got != want {
		t.Errorf("unknown = %d, want %d", got, want)
	}
	if got, want := sum.Reconciled, 2; got != want {
		t.Errorf("reconciled = %d, want %d", got, want)
	}
	if got, want := sum.Candidates, 0; got != want {
		t.Errorf("candidates = %d, want %d", got, want)
	}
	if got, want := MustState(t, e, autoPaused.ID, lifecycle.StatePaused).Reason, lifecycle.ReasonReconcile; got != want {
		t.Errorf("auto-paused reason = %q, want %q", got, want)
	}
	if got := MustState(t, e, woken.ID, lifecycle.StateRunning); !got.LastActivityAt.Equal(e.clock.Now()) {
		t.Errorf("woken last activity = %v, want %v (waking is activity)", got.LastActivityAt, e.clock.Now())
	}
	for _, agree := range s[2:] {
		MustState(t, e, agree.ID, lifecycle.StateRunning)
	}
	if _, ok := e.prov.Sandbox(stray.ID); !ok {
		t.Error("stray sandbox is gone; unknown sandboxes must only be logged")
	}
	if got, want := e.prov.Calls(fake.OpKill), 0; got != want {
		t.Errorf("kill calls = %d, want %d", got, want)
	}

	t.Run("Off", func(t *testing.T) {
		e.prov.SetState(s[2].SandboxID, lifecycle.SandboxPaused)
		sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{ReconcileSample: -1}))
		if got, want := sum.Listed, 0; got != want {
			t.Errorf("listed = %d, want %d", got, want)
		}
		MustState(t, e, s[2].ID, lifecycle.StateRunning)
	})
}

func TestRunDormancy(t *testing.T) {
	const age = 7 * 24 * time.Hour
	for _, tc := range []struct {
		name    string
		age     time.Duration
		retired bool
	}{
		{name: "On", age: age, retired: true},
		{name: "Off", age: 0, retired: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := MustEnv(t)
			s := MustSessions(t, e, 3)
			old, recent, running := s[0], s[1], s[2]
			if _, err := e.svc.PauseNow(t.Context(), account, old.ID); err != nil {
				t.Fatalf("snapshot old: %v", err)
			}
			e.clock.Advance(2 * 24 * time.Hour)
			if _, err := e.svc.PauseNow(t.Context(), account, recent.ID); err != nil {
				t.Fatalf("snapshot recent: %v", err)
			}
			e.clock.Set(t0.Add(age + time.Hour)) // old: 7d1h paused; recent: 5d1h

			sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{DormancyAge: tc.age, ReconcileSample: -1}))

			if tc.retired {
				if got, want := sum.DormantKilled, 1; got != want {
					t.Errorf("dormant killed = %d, want %d", got, want)
				}
				MustState(t, e, old.ID, lifecycle.StateExpired)
				if _, ok := e.prov.Sandbox(old.SandboxID); ok {
					t.Errorf("old sandbox %s still exists, want killed", old.SandboxID)
				}
			} else {
				if got, want := sum.DormantKilled+sum.Dormant, 0; got != want {
					t.Errorf("dormant found+killed = %d, want %d", got, want)
				}
				MustState(t, e, old.ID, lifecycle.StatePaused)
				if _, ok := e.prov.Sandbox(old.SandboxID); !ok {
					t.Errorf("old sandbox %s is gone, want kept", old.SandboxID)
				}
			}
			MustState(t, e, recent.ID, lifecycle.StatePaused)
			if _, ok := e.prov.Sandbox(recent.SandboxID); !ok {
				t.Errorf("recent sandbox %s is gone, want kept", recent.SandboxID)
			}
			// The running one was idle: phase 1 paused it now, far from dormant.
			MustState(t, e, running.ID, lifecycle.StatePaused)
			if got, want := e.prov.Calls(fake.OpKill), map[bool]int{true: 1, false: 0}[tc.retired]; got != want {
				t.Errorf("kill calls = %d, want %d", got, want)
			}
		})
	}
}

func TestRunReapsOrphans(t *testing.T) {
	e := MustEnv(t)
	s := MustSessions(t, e, 2)
	create := func(meta map[string]string) lifecycle.Sandbox {
		t.Helper()
		sb, err := e.prov.Create(t.Context(), lifecycle.CreateRequest{Template: "base", AutoPause: true, Metadata: meta})
		if err != nil {
			t.Fatalf("create sandbox: %v", err)
		}
		return sb
	}
	// A create whose answer was lost: the provider made a sandbox tagged with
	// a session that never recorded it (here: one that does not exist).
	lost := create(map[string]string{lifecycle.MetadataSessionID: "ses_lostlostlostlostlostlostlo"})
	// A session killed while its sandbox lived on (a resume raced the delete).
	killed := s[0]
	if err := killed.Transition(lifecycle.StateKilled, lifecycle.ReasonRequest, e.clock.Now(), e.svc.Policy()); err != nil {
		t.Fatalf("mark killed: %v", err)
	}
	if err := e.store.UpdateSession(t.Context(), killed, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
		t.Fatalf("write killed: %v", err)
	}
	// Not Sandman's: no tag.
	untagged := create(nil)
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
	// Too young to judge: made just now.
	young := create(map[string]string{lifecycle.MetadataSessionID: "ses_youngyoungyoungyoungyoungyo"})

	sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{}))

	if got, want := sum.OrphansKilled, 2; got != want {
		t.Errorf("orphans killed = %d, want %d", got, want)
	}
	for _, id := range []string{lost.ID, killed.SandboxID} {
		if _, ok := e.prov.Sandbox(id); ok {
			t.Errorf("orphan %s still exists", id)
		}
	}
	for _, id := range []string{untagged.ID, young.ID, s[1].SandboxID} {
		if _, ok := e.prov.Sandbox(id); !ok {
			t.Errorf("sandbox %s was killed; it is not an orphan", id)
		}
	}
	MustState(t, e, s[1].ID, lifecycle.StateRunning)
}
