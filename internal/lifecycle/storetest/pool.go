package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// poolStore returns the store as a PoolStore, failing the test otherwise.
func poolStore(tb testing.TB, s lifecycle.Store) lifecycle.PoolStore {
	tb.Helper()
	ps, ok := s.(lifecycle.PoolStore)
	if !ok {
		tb.Fatalf("%T is not a lifecycle.PoolStore", s)
	}
	return ps
}

// ReadySpare returns a ready spare of poolID made at now.
func ReadySpare(poolID, sandboxID string, now time.Time) *lifecycle.Spare {
	return &lifecycle.Spare{PoolID: poolID, SandboxID: sandboxID, Provider: "fake", Status: lifecycle.SpareReady,
		CreatedAt: now, UpdatedAt: now, ReadyAt: now, PreviewURL: "https://3000-" + sandboxID + ".example.test"}
}

// claimFor returns the provisioning session that claims sp.
func claimFor(id, account string, sp *lifecycle.Spare, now time.Time) *lifecycle.Session {
	s := RunningSession(id, account, now)
	s.State, s.RunningSince, s.LeaseExpiresAt = lifecycle.StateProvisioning, time.Time{}, now.Add(5*time.Minute)
	s.SandboxID, s.FromPool, s.PoolID = sp.SandboxID, true, sp.PoolID
	return s
}

func testPools(t *testing.T, newStore NewStore) {
	const pool = "pool_0123456789abcdef"
	t.Run("SpareLifecycle", func(t *testing.T) {
		store := newStore(t)
		ps := poolStore(t, store)
		ctx := t.Context()
		sp := ReadySpare(pool, "sbx-1", t0)
		sp.Status, sp.ReadyAt = lifecycle.SpareMaking, time.Time{}
		if err := ps.PutSpare(ctx, sp); err != nil || sp.Version != 1 {
			t.Fatalf("put = %v, version %d; want version 1", err, sp.Version)
		}
		if err := ps.PutSpare(ctx, sp.Clone()); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("second put = %v, want conflict", err)
		}
		stale := sp.Clone()
		sp.Status, sp.ReadyAt, sp.ExpiresAt = lifecycle.SpareReady, t0.Add(time.Second), t0.Add(time.Hour)
		if err := ps.UpdateSpare(ctx, sp, lifecycle.SpareMaking); err != nil || sp.Version != 2 {
			t.Fatalf("update = %v, version %d; want version 2", err, sp.Version)
		}
		if err := ps.UpdateSpare(ctx, stale, lifecycle.SpareMaking); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale update = %v, want conflict", err)
		}
		got, err := ps.GetSpare(ctx, pool, "sbx-1")
		if err != nil || *got != *sp {
			t.Errorf("get = %+v (%v), want %+v", got, err, sp)
		}
		if list, err := ps.ListSpares(ctx, pool); err != nil || len(list) != 1 || *list[0] != *sp {
			t.Errorf("list = %v (%v), want the spare", list, err)
		}
		if list, err := ps.ListSpares(ctx, "pool_other"); err != nil || len(list) != 0 {
			t.Errorf("another pool lists %v (%v), want none", list, err)
		}
		if err := ps.DeleteSpare(ctx, stale); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale delete = %v, want conflict", err)
		}
		if err := ps.DeleteSpare(ctx, sp); err != nil {
			t.Fatalf("delete = %v", err)
		}
		if _, err := ps.GetSpare(ctx, pool, "sbx-1"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("get after delete = %v, want not_found", err)
		}
		if err := ps.DeleteSpare(ctx, sp); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("second delete = %v, want not_found", err)
		}
	})

	t.Run("ClaimIsOneWrite", func(t *testing.T) {
		store := newStore(t)
		ps := poolStore(t, store)
		ctx := t.Context()
		sp := ReadySpare(pool, "sbx-claim", t0)
		if err := ps.PutSpare(ctx, sp); err != nil {
			t.Fatal(err)
		}
		sess := claimFor(SessionID(1), "acct_pool", sp, t0)
		if err := ps.ClaimSpare(ctx, sp, sess); err != nil || sess.Version != 1 {
			t.Fatalf("claim = %v, version %d", err, sess.Version)
		}
		got, err := store.GetSession(ctx, sess.ID)
		if err != nil || !got.FromPool || got.SandboxID != "sbx-claim" || got.State != lifecycle.StateProvisioning {
			t.Fatalf("claimed session = %+v (%v)", got, err)
		}
		if found, err := store.FindBySandbox(ctx, "fake", "sbx-claim"); err != nil || found.ID != sess.ID {
			t.Errorf("find by sandbox = %v (%v), want the session", found, err)
		}
		if list, _ := ps.ListSpares(ctx, pool); len(list) != 0 {
			t.Errorf("spares after the claim = %v, want none", list)
		}
		m, err := ps.GetSpare(ctx, pool, "sbx-claim")
		if err != nil || m.Status != lifecycle.SpareClaimed || m.SessionID != sess.ID {
			t.Errorf("marker = %+v (%v), want claimed by %s", m, err, sess.ID)
		}
		again := claimFor(SessionID(2), "acct_pool", sp, t0)
		if err := ps.ClaimSpare(ctx, sp, again); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("second claim = %v, want conflict", err)
		}
		if _, err := store.GetSession(ctx, again.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("the losing claim wrote its session (%v)", err)
		}
	})

	t.Run("ClaimRefusedByQuotaWritesNothing", func(t *testing.T) {
		store := newStore(t)
		ps := poolStore(t, store)
		ctx := t.Context()
		held := RunningSession(SessionID(3), "acct_q", t0)
		if err := store.CreateSession(ctx, held); err != nil {
			t.Fatal(err)
		}
		sp := ReadySpare(pool, "sbx-quota", t0)
		if err := ps.PutSpare(ctx, sp); err != nil {
			t.Fatal(err)
		}
		sess := claimFor(SessionID(4), "acct_q", sp, t0)
		sess.RunningLimit = 1
		if err := ps.ClaimSpare(ctx, sp, sess); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
			t.Fatalf("claim = %v, want quota_exceeded", err)
		}
		if _, err := store.GetSession(ctx, sess.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("session written by a refused claim (%v)", err)
		}
		if got, err := ps.GetSpare(ctx, pool, "sbx-quota"); err != nil || got.Status != lifecycle.SpareReady {
			t.Errorf("spare after a refused claim = %+v (%v), want still ready", got, err)
		}
		if n, _ := counter(t, store).RunningSlots(ctx, "acct_q"); n != 1 {
			t.Errorf("running slots = %d, want 1", n)
		}
	})

	t.Run("ConcurrentClaimsTakeEachSpareOnce", func(t *testing.T) {
		store := newStore(t)
		ps := poolStore(t, store)
		ctx := t.Context()
		var spares []*lifecycle.Spare
		for i := range 2 {
			sp := ReadySpare(pool, fmt.Sprintf("sbx-c%d", i), t0)
			if err := ps.PutSpare(ctx, sp); err != nil {
				t.Fatal(err)
			}
			spares = append(spares, sp)
		}
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won = map[string]int{}
		)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sp := spares[i%2].Clone()
				err := ps.ClaimSpare(ctx, sp, claimFor(SessionID(100+i), "acct_c", sp, t0))
				if err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Errorf("claim: %v", err)
				}
				if err == nil {
					mu.Lock()
					won[sp.SandboxID]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if won["sbx-c0"] != 1 || won["sbx-c1"] != 1 {
			t.Errorf("claims won per spare = %v, want exactly one each", won)
		}
		if n, _ := counter(t, store).RunningSlots(ctx, "acct_c"); n != 2 {
			t.Errorf("running slots = %d, want 2", n)
		}
	})

	t.Run("Status", func(t *testing.T) {
		ps := poolStore(t, newStore(t))
		ctx := t.Context()
		st, err := ps.PoolStatus(ctx, pool)
		if err != nil || st.PoolID != pool || st.Hits != 0 || st.Version != 0 {
			t.Fatalf("fresh status = %+v (%v)", st, err)
		}
		for range 2 {
			if err := ps.CountPool(ctx, pool, lifecycle.PoolCounts{Claims: 2, Hits: 1, Misses: 3, Failed: 1, RunningMS: 1500, PausedMS: 7}); err != nil {
				t.Fatal(err)
			}
		}
		// A lost spare takes its hit back: negative counts decrement.
		if err := ps.CountPool(ctx, pool, lifecycle.PoolCounts{Hits: -1, Misses: 1, Lost: 1}); err != nil {
			t.Fatal(err)
		}
		h := lifecycle.PoolHealth{ConsecutiveFailures: 3, LastError: "boom", LastErrorAt: t0, BackoffUntil: t0.Add(time.Minute)}
		v, err := ps.SavePoolHealth(ctx, pool, h, 0)
		if err != nil || v != 1 {
			t.Fatalf("save health = %d, %v", v, err)
		}
		if _, err := ps.SavePoolHealth(ctx, pool, h, 0); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale save = %v, want conflict", err)
		}
		st, err = ps.PoolStatus(ctx, pool)
		want := lifecycle.PoolStatus{PoolID: pool, Claims: 4, Hits: 1, Misses: 7, Lost: 1, Failed: 2, RunningMS: 3000, PausedMS: 14,
			PoolHealth: h, Version: 1}
		if err != nil || st != want {
			t.Errorf("status = %+v (%v), want %+v", st, err, want)
		}
		if _, err := ps.SavePoolHealth(ctx, pool, lifecycle.PoolHealth{}, 1); err != nil {
			t.Fatal(err)
		}
		if st, _ := ps.PoolStatus(ctx, pool); st.Hits != 1 || st.Lost != 1 || st.ConsecutiveFailures != 0 || !st.BackoffUntil.IsZero() {
			t.Errorf("after clearing health: %+v, want counters kept and health cleared", st)
		}
	})
}

// ConcurrentCreates runs n creates at once and sorts their sessions: it
// returns how many took a pool spare and how many were created cold. It
// fails the test on a create that errs, a session that is not running, and
// a spare's sandbox given to two sessions.
func ConcurrentCreates(t *testing.T, n int, create func() (*lifecycle.Session, error)) (fromPool, cold int) {
	t.Helper()
	var (
		mu     sync.Mutex
		owners = map[string]string{} // a spare's sandbox id → the session that took it
		wg     sync.WaitGroup
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := create()
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if sess.State != lifecycle.StateRunning {
				t.Errorf("session %s is %s, want running", sess.ID, sess.State)
			}
			if !sess.FromPool {
				cold++
				return
			}
			if other, dup := owners[sess.SandboxID]; dup {
				t.Errorf("spare %s given to %s and %s", sess.SandboxID, other, sess.ID)
			}
			owners[sess.SandboxID] = sess.ID
		}()
	}
	wg.Wait()
	return len(owners), cold
}
