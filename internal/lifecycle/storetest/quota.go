package storetest

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// testRunningSlots checks the running-slot counter (lifecycle quota.go):
// creates and transitions move it with the session, a write past
// RunningLimit is refused with quota_exceeded and writes nothing, every path
// out of running releases, and concurrent writers never pass the limit.
func testRunningSlots(t *testing.T, newStore NewStore) {
	t.Run("Sequential", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		ctx := t.Context()
		slots := func(want int) {
			t.Helper()
			got, err := counter(t, f.store).RunningSlots(ctx, "acct-q")
			if err != nil || got != want {
				t.Fatalf("RunningSlots = %d, %v; want %d", got, err, want)
			}
		}
		slots(0)
		a := RunningSession(SessionID(9001), "acct-q", t0)
		a.RunningLimit = 2
		f.MustCreate(t, a)
		b := RunningSession(SessionID(9002), "acct-q", t0)
		b.RunningLimit = 2
		f.MustCreate(t, b)
		slots(2)
		other := RunningSession(SessionID(9003), "acct-other", t0)
		other.RunningLimit = 1
		f.MustCreate(t, other) // another account's counter
		c := RunningSession(SessionID(9004), "acct-q", t0)
		c.RunningLimit = 2
		if err := f.store.CreateSession(ctx, c); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
			t.Fatalf("third create with limit 2: err = %v, want quota_exceeded", err)
		}
		if _, err := f.store.GetSession(ctx, c.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Fatalf("refused create was stored: %v", err)
		}
		slots(2)
		if got := f.MustGet(t, a.ID).RunningLimit; got != 0 {
			t.Fatalf("RunningLimit stored as %d; it is never stored", got)
		}

		// running → pausing keeps the slot; pausing → paused releases it.
		a = f.MustGet(t, a.ID)
		a.State = lifecycle.StatePausing
		f.mustUpdate(t, a, lifecycle.StateRunning)
		slots(2)
		a.State = lifecycle.StatePaused
		f.mustUpdate(t, a, lifecycle.StatePausing)
		slots(1)

		// paused → resuming takes it back, refused when at the limit.
		f.MustCreate(t, c)
		slots(2)
		a.State, a.RunningLimit = lifecycle.StateResuming, 2
		if err := f.store.UpdateSession(ctx, a, lifecycle.StatePaused, lifecycle.Guard{}); !lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded) {
			t.Fatalf("resume past the limit: err = %v, want quota_exceeded", err)
		}
		if got := f.MustGet(t, a.ID); got.State != lifecycle.StatePaused || got.Version != a.Version {
			t.Fatalf("refused resume wrote the session: %s v%d", got.State, got.Version)
		}
		// Without a limit (a webhook recording what the provider did) it
		// is taken whatever the count.
		a.State, a.RunningLimit = lifecycle.StateRunning, 0
		f.mustUpdate(t, a, lifecycle.StatePaused)
		slots(3)

		// Kill, expire: released; a lost race moves nothing.
		stale := f.MustGet(t, b.ID)
		b = f.MustGet(t, b.ID)
		b.State = lifecycle.StateKilled
		f.mustUpdate(t, b, lifecycle.StateRunning)
		slots(2)
		stale.State = lifecycle.StateExpired
		if err := f.store.UpdateSession(ctx, stale, lifecycle.StateRunning, lifecycle.Guard{}); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Fatalf("stale expire: err = %v, want conflict", err)
		}
		slots(2)
		c = f.MustGet(t, c.ID)
		c.State = lifecycle.StateExpired
		f.mustUpdate(t, c, lifecycle.StateRunning)
		a.State = lifecycle.StateKilled
		f.mustUpdate(t, a, lifecycle.StateRunning)
		slots(0)
		// A provisioning create that fails releases too.
		p := RunningSession(SessionID(9005), "acct-q", t0)
		p.State = lifecycle.StateProvisioning
		f.MustCreate(t, p)
		slots(1)
		p.State = lifecycle.StateFailed
		f.mustUpdate(t, p, lifecycle.StateProvisioning)
		slots(0)
	})

	t.Run("Concurrent", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		const writers, limit = 20, 5
		var ok, refused atomic.Int32
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := RunningSession(SessionID(9100+i), "acct-c", t0)
				s.State, s.RunningLimit = lifecycle.StateProvisioning, limit
				switch err := f.store.CreateSession(t.Context(), s); {
				case err == nil:
					ok.Add(1)
				case lifecycle.IsCode(err, lifecycle.CodeQuotaExceeded):
					refused.Add(1)
				default:
					t.Errorf("create %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != limit || refused.Load() != writers-limit {
			t.Fatalf("%d created, %d refused; want %d and %d", ok.Load(), refused.Load(), limit, writers-limit)
		}
		if got, err := counter(t, f.store).RunningSlots(t.Context(), "acct-c"); err != nil || got != limit {
			t.Fatalf("RunningSlots = %d, %v; want %d", got, err, limit)
		}
	})
}

// mustUpdate writes s from state from without a guard.
func (f fixture) mustUpdate(tb testing.TB, s *lifecycle.Session, from lifecycle.State) {
	tb.Helper()
	if err := f.store.UpdateSession(tb.Context(), s, from, lifecycle.Guard{}); err != nil {
		tb.Fatalf("update session %s %s → %s: %v", s.ID, from, s.State, err)
	}
}

// counter returns store as a lifecycle.SlotCounter: every store of the
// contract keeps the running-slot counter.
func counter(tb testing.TB, store lifecycle.Store) lifecycle.SlotCounter {
	tb.Helper()
	c, ok := store.(lifecycle.SlotCounter)
	if !ok {
		tb.Fatalf("%T is not a lifecycle.SlotCounter", store)
	}
	return c
}
