package lifecycle_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
)

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
