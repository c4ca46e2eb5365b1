package delivery_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// slowReceiver answers 200 after a while: delay on the test's clock, and
// while gate is set, only once the gate opens; it counts the requests
// under way.
type slowReceiver struct {
	*httptest.Server
	clock       *lifecycle.ManualClock
	mu          sync.Mutex
	delay       time.Duration
	gate        chan struct{}
	inFlight    atomic.Int32
	maxInFlight atomic.Int32
	requests    atomic.Int32
}

func newSlowReceiver(t *testing.T, clock *lifecycle.ManualClock, delay time.Duration) *slowReceiver {
	t.Helper()
	r := &slowReceiver{clock: clock, delay: delay}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.requests.Add(1)
		n := r.inFlight.Add(1)
		for m := r.maxInFlight.Load(); n > m && !r.maxInFlight.CompareAndSwap(m, n); m = r.maxInFlight.Load() {
		}
		r.mu.Lock()
		gate, delay := r.gate, r.delay
		r.mu.Unlock()
		if gate != nil {
			<-gate
		}
		r.clock.Advance(delay)
		r.inFlight.Add(-1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

// TestSlowEndpointGetsAtMostItsShareOfAttempts: a healthy endpoint that
// answers in 14 s is marked slow after one such answer; from then on at
// most SlowEndpointConcurrency attempts reach it at once, across every
// caller, and the rest wait (not counted, not written) instead of taking
// the attempts in flight that other endpoints' deliveries run in. A quick
// answer lifts the cap.
func TestSlowEndpointGetsAtMostItsShareOfAttempts(t *testing.T) {
	const queued = 20
	ctx := context.Background()
	store := &countingStore{Store: memstore.New()}
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	rcv := newSlowReceiver(t, clock, 14*time.Second)
	rec := &recorder{}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	ep, _ := svc.Create(ctx, "acct", delivery.EndpointInput{URL: &url})

	// One slow answer: a success, but the endpoint is now slow.
	if err := engine.Accept(ctx, pausedEvent("acct", "ses_first", 1)); err != nil {
		t.Fatal(err)
	}
	first, _, _ := rec.take()
	if err := engine.Attempt(ctx, first); err != nil {
		t.Fatal(err)
	}
	got, _ := store.GetEndpoint(ctx, "acct", ep.ID)
	if got.SlowSince.IsZero() || !got.FailingSince.IsZero() || got.AttemptCap() != delivery.SlowEndpointConcurrency {
		t.Fatalf("after a 14 s answer: slow since %s, failing since %s, cap %d; want slow, not failing, cap %d",
			got.SlowSince, got.FailingSince, got.AttemptCap(), delivery.SlowEndpointConcurrency)
	}

	// queued deliveries due at once, each job run by its own caller (the
	// deliver function's invocations), while the receiver holds every
	// request.
	var evs []lifecycle.Event
	for v := int64(1); v <= queued; v++ {
		evs = append(evs, pausedEvent("acct", "ses_slow", v))
	}
	if err := engine.Accept(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	var jobs []delivery.Job
	for job, _, ok := rec.take(); ok; job, _, ok = rec.take() {
		jobs = append(jobs, job)
	}
	gate := make(chan struct{})
	rcv.mu.Lock()
	rcv.gate = gate
	rcv.mu.Unlock()
	store.reset()
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := engine.Attempt(ctx, job); err != nil {
				t.Error(err)
			}
		}()
	}
	// Every caller either reaches the receiver or parks its delivery.
	deadline := time.Now().Add(10 * time.Second)
	for {
		parked, _ := store.ParkedDeliveries(ctx, ep.ID, queued)
		if len(parked)+int(rcv.inFlight.Load()) == queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	under := rcv.inFlight.Load()
	close(gate)
	wg.Wait()
	if max := rcv.maxInFlight.Load(); max > delivery.SlowEndpointConcurrency || under < 1 {
		t.Errorf("%d attempts at once reached the slow endpoint (%d when all callers had run), want 1 to %d",
			max, under, delivery.SlowEndpointConcurrency)
	}
	// Each attempt that let go of its hold woke one parked delivery, at
	// once; the others stay parked.
	var again []delivery.Job
	for job, at, ok := rec.take(); ok; job, at, ok = rec.take() {
		if job.Seq == 0 && job.DeliveryID != "" {
			if at.After(clock.Now()) || at.Before(time.Date(2026, 11, 27, 6, 0, 14, 0, time.UTC)) {
				t.Errorf("a woken attempt is due at %s, want at once when a hold is let go (by %s)", at, clock.Now())
			}
			again = append(again, job)
		}
	}
	parked, _ := store.ParkedDeliveries(ctx, ep.ID, queued)
	if len(again) != int(under) || len(again)+len(parked)+int(under) != queued {
		t.Errorf("%d attempts woken, %d parked and %d ran, want one woken per attempt that ran and %d in all",
			len(again), len(parked), under, queued)
	}
	if w := store.deliveryWrites; w != 2*int(under) {
		t.Errorf("%d delivery writes for %d attempts, want 2 each (claim, record) and none for a wait", w, under)
	}
	got, _ = store.GetEndpoint(ctx, "acct", ep.ID)
	if len(got.Holds) != 0 {
		t.Errorf("the finished attempts left holds %v", got.Holds)
	}

	// A quick answer lifts the cap: every waiting attempt runs at once.
	rcv.mu.Lock()
	rcv.delay, rcv.gate = 0, nil
	rcv.mu.Unlock()
	if len(again) == 0 {
		t.Fatal("no attempt waited")
	}
	if err := engine.Attempt(ctx, again[0]); err != nil {
		t.Fatal(err)
	}
	got, _ = store.GetEndpoint(ctx, "acct", ep.ID)
	if !got.SlowSince.IsZero() || got.AttemptCap() != 0 {
		t.Errorf("after a quick answer: slow since %s, cap %d; want neither", got.SlowSince, got.AttemptCap())
	}
	woken := 0
	for job, at, ok := rec.take(); ok; job, at, ok = rec.take() {
		if job.Seq == 0 && job.DeliveryID != "" && !at.After(clock.Now()) {
			woken++
		}
	}
	if left, _ := store.ParkedDeliveries(ctx, ep.ID, queued); len(left) != 0 || woken != len(parked) {
		t.Errorf("after a quick answer %d deliveries were woken and %d are still parked, want the %d parked woken at once",
			woken, len(left), len(parked))
	}
}
