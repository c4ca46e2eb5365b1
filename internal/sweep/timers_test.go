package sweep_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// recordTimers is a lifecycle.Timers that records what was armed.
type recordTimers struct {
	mu    sync.Mutex
	armed map[string][]time.Time
}

func (r *recordTimers) Arm(_ context.Context, id string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.armed == nil {
		r.armed = map[string][]time.Time{}
	}
	r.armed[id] = append(r.armed[id], at)
	return nil
}

func (r *recordTimers) times(id string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.armed[id]...)
}

// TestSweepArmsTimersWithinTheWindow: a tick arms every running session due
// before the next tick plus the margin, pauses the ones already due, and
// leaves later ones to a later tick. In memory (internal/lifecycle/memstore).
func TestSweepArmsTimersWithinTheWindow(t *testing.T) {
	clock := lifecycle.NewManualClock(t0)
	timers := &recordTimers{}
	svc := lifecycle.NewService(lifecycle.Config{
		Store: memstore.New(), Provider: fake.New(fake.Config{Clock: clock}), Clock: clock,
		Log: slog.New(slog.DiscardHandler), Timers: timers,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	create := func(idle time.Duration) *lifecycle.Session {
		t.Helper()
		sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: int64(idle / time.Second)})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return sess
	}
	due := create(2 * time.Minute)    // armed at create, due at t0+2m
	soon := create(10 * time.Minute)  // due at t0+10m: inside the window at t0+5m
	later := create(30 * time.Minute) // due at t0+30m: outside it
	if got := len(timers.times(soon.ID)); got != 0 {
		t.Fatalf("a 10 min deadline armed at create %d times; want 0 (beyond the 6 min horizon)", got)
	}

	clock.Advance(5 * time.Minute)
	sum, err := sweep.New(svc, sweep.Config{Rate: 1000}, slog.New(slog.DiscardHandler)).Run(t.Context())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, want := sum.Paused, 1; got != want {
		t.Errorf("paused = %d, want %d", got, want)
	}
	if got, want := sum.Armed, 1; got != want {
		t.Errorf("armed = %d, want %d", got, want)
	}
	if got, want := sum.Candidates, 2; got != want {
		t.Errorf("candidates = %d, want %d", got, want)
	}
	if got := timers.times(soon.ID); len(got) != 1 || !got[0].Equal(soon.PauseDeadline()) {
		t.Errorf("timers of the 10 min session = %v, want [%s]", got, soon.PauseDeadline())
	}
	if got := timers.times(later.ID); len(got) != 0 {
		t.Errorf("timers of the 30 min session = %v, want none yet", got)
	}
	for id, want := range map[string]lifecycle.State{due.ID: lifecycle.StatePaused, soon.ID: lifecycle.StateRunning, later.ID: lifecycle.StateRunning} {
		got, err := svc.Get(t.Context(), account, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != want {
			t.Errorf("%s: state = %s, want %s", id, got.State, want)
		}
	}
}
