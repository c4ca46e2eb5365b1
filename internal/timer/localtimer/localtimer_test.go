package localtimer_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/timer/localtimer"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// handFuncs is an AfterFunc that fires only when told to.
type handFuncs struct {
	mu    sync.Mutex
	funcs []*handFunc
}

type handFunc struct {
	d       time.Duration
	f       func()
	stopped bool
	ran     bool
}

func (h *handFuncs) AfterFunc(d time.Duration, f func()) func() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	hf := &handFunc{d: d, f: f}
	h.funcs = append(h.funcs, hf)
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		if hf.ran || hf.stopped {
			return false
		}
		hf.stopped = true
		return true
	}
}

// live returns the scheduled, not stopped, not run funcs.
func (h *handFuncs) live() []*handFunc {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*handFunc
	for _, hf := range h.funcs {
		if !hf.stopped && !hf.ran {
			out = append(out, hf)
		}
	}
	return out
}

// runAll fires every live func, each in its own goroutine as time.AfterFunc
// does, and waits for them.
func (h *handFuncs) runAll() {
	var wg sync.WaitGroup
	for _, hf := range h.live() {
		h.mu.Lock()
		hf.ran = true
		h.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); hf.f() }()
	}
	wg.Wait()
}

func newTimers(h *handFuncs, conc int) *localtimer.Timers {
	return localtimer.New(localtimer.Config{Concurrency: conc, Rate: rate.Inf,
		Clock: lifecycle.NewManualClock(t0), AfterFunc: h.AfterFunc, Log: slog.New(slog.DiscardHandler)})
}

func TestArmKeepsTheEarliestTimer(t *testing.T) {
	h := &handFuncs{}
	tm := newTimers(h, 4)
	var mu sync.Mutex
	var fired []string
	tm.Start(t.Context(), func(_ context.Context, id string) error {
		mu.Lock()
		defer mu.Unlock()
		fired = append(fired, id)
		return nil
	})
	defer tm.Close()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tm.Arm(ctx, "a", t0.Add(time.Minute)))
	must(tm.Arm(ctx, "a", t0.Add(2*time.Minute)))  // later: kept the first
	must(tm.Arm(ctx, "a", t0.Add(30*time.Second))) // earlier: replaces it
	must(tm.Arm(ctx, "b", t0.Add(-time.Second)))   // past: fires at once
	live := h.live()
	if got, want := len(live), 2; got != want {
		t.Fatalf("live timers = %d, want %d", got, want)
	}
	ds := map[time.Duration]bool{}
	for _, hf := range live {
		ds[hf.d] = true
	}
	if !ds[30*time.Second] || !ds[0] {
		t.Fatalf("delays = %v, want 30s and 0s", ds)
	}
	if got, want := tm.Pending(), 2; got != want {
		t.Fatalf("pending = %d, want %d", got, want)
	}
	h.runAll()
	if got, want := len(fired), 2; got != want {
		t.Fatalf("fired = %v, want a and b once each", fired)
	}
	if got := tm.Pending(); got != 0 {
		t.Fatalf("pending after firing = %d, want 0", got)
	}
}

func TestFiresAreBounded(t *testing.T) {
	h := &handFuncs{}
	const conc = 3
	tm := newTimers(h, conc)
	var inFlight, peak, total atomic.Int64
	release := make(chan struct{})
	tm.Start(t.Context(), func(context.Context, string) error {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		total.Add(1)
		return nil
	})
	for i := range 20 {
		if err := tm.Arm(t.Context(), string(rune('a'+i)), t0); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { h.runAll(); close(done) }()
	// Let fires through one at a time until all ran.
	for range 20 {
		release <- struct{}{}
	}
	<-done
	tm.Close()
	if got, want := total.Load(), int64(20); got != want {
		t.Fatalf("fires = %d, want %d", got, want)
	}
	if got := peak.Load(); got > conc {
		t.Fatalf("peak concurrent fires = %d, want at most %d", got, conc)
	}
}

func TestArmAfterCloseFails(t *testing.T) {
	h := &handFuncs{}
	tm := newTimers(h, 1)
	tm.Start(t.Context(), func(context.Context, string) error { return nil })
	if err := tm.Arm(t.Context(), "a", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	tm.Close()
	if got := len(h.live()); got != 0 {
		t.Fatalf("live timers after close = %d, want 0", got)
	}
	if err := tm.Arm(t.Context(), "b", t0); err == nil {
		t.Fatal("arm after close: nil error, want unavailable")
	}
}
