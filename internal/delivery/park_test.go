package delivery_test

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// waitingCost queues queued deliveries on one endpoint whose attempts all
// fail (held: another process's attempt holds the endpoint all along
// instead), lets a minute pass (the queue parks), then counts what the
// next 10 minutes cost the store.
func waitingCost(t *testing.T, queued int, held bool) (store *countingStore, attempts int, window time.Duration) {
	t.Helper()
	ctx := context.Background()
	store = &countingStore{Store: memstore.New()}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	line := &timeline{}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: line, Guard: private, Clock: clock})
	url := rcv.URL
	ep, _ := delivery.NewService(store, private, line, clock).Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	var evs []lifecycle.Event
	for v := 1; v <= queued; v++ {
		evs = append(evs, pausedEvent("acct", "ses_wait", int64(v)))
	}
	if err := engine.Accept(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	window = 10 * time.Minute
	start := clock.Now()
	run := func(until time.Time) {
		for at := clock.Now(); at.Before(until); at = at.Add(holdStep) {
			if held { // another process's attempt holds the endpoint all along
				cur, _ := store.Store.GetEndpoint(ctx, "acct", ep.ID)
				prev := cur.Version
				hold(cur, at)
				cur.Version++
				if err := store.Store.UpdateEndpoint(ctx, cur, prev); err != nil {
					t.Fatal(err)
				}
			}
			stop := at.Add(holdStep)
			if stop.After(until) {
				stop = until
			}
			line.runUntil(t, engine, clock, stop)
		}
	}
	run(start.Add(time.Minute))
	if parked, _ := store.Store.ParkedDeliveries(ctx, ep.ID, queued); len(parked) < queued-20 {
		t.Fatalf("%d of %d deliveries parked after a minute", len(parked), queued)
	}
	store.reset()
	before := len(rcv.requests())
	run(start.Add(time.Minute + window))
	return store, len(rcv.requests()) - before, window
}

// TestWaitingDeliveriesCostAtMostOneRCUPerSecond: deliveries queued on one
// failing endpoint park; while they wait nothing reads them. What the table
// still reads is the endpoint's: its watch (one look a minute), and on a
// dead endpoint the one attempt per FailingGap (its delivery, the endpoint,
// the next parked one), whatever the queue's length. Before, every waiting
// job came back every 20 s and read its delivery and the endpoint: 100
// reads/s for 1,000 queued (150 RCU/s at 10 KB items). The figures of
// docs/CAPACITY.md "Webhook deliveries" come from this test's log lines.
func TestWaitingDeliveriesCostAtMostOneRCUPerSecond(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued int
		held   bool
	}{
		{"1000 held by another attempt", 1000, true},
		{"1000 on a dead endpoint", 1000, false},
		{"10000 on a dead endpoint", 10000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, attempts, window := waitingCost(t, tc.queued, tc.held)
			secs := window.Seconds()
			rcuPerSec := float64(store.rcu) / secs
			t.Logf("%d deliveries waiting on one failing endpoint (%s) over %s: %d attempts reached it; %d reads, %d RCU: "+
				"%.3f RCU/s; %d delivery and %d endpoint writes, %d parking writes: %.3f writes/s",
				tc.queued, tc.name, window, attempts, store.reads, store.rcu, rcuPerSec, store.deliveryWrites,
				store.endpointWrites, store.parkWrites, float64(store.deliveryWrites+store.endpointWrites+store.parkWrites)/secs)
			if rcuPerSec > 1 {
				t.Errorf("waiting costs %.3f RCU/s, want at most 1", rcuPerSec)
			}
			if tc.held && attempts != 0 {
				t.Errorf("%d attempts reached the endpoint while another attempt held it", attempts)
			}
		})
	}
}

// TestParkedDeliveriesOfADeletedEndpointSettle: deliveries parked on an
// endpoint that is then deleted are woken by its watch and end failed
// ("endpoint deleted"); nothing stays parked and the watch ends.
func TestParkedDeliveriesOfADeletedEndpointSettle(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	line := &timeline{}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: line, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, line, clock)
	url := rcv.URL
	ep, _ := svc.Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	cur, _ := store.GetEndpoint(ctx, "acct", ep.ID)
	hold(cur, clock.Now().Add(time.Hour)) // held for an hour and more
	cur.Version++
	if err := store.UpdateEndpoint(ctx, cur, cur.Version-1); err != nil {
		t.Fatal(err)
	}
	var evs []lifecycle.Event
	for v := int64(1); v <= 5; v++ {
		evs = append(evs, pausedEvent("acct", "ses_del", v))
	}
	if err := engine.Accept(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	line.runUntil(t, engine, clock, clock.Now().Add(time.Second))
	if parked, _ := store.ParkedDeliveries(ctx, ep.ID, 10); len(parked) != 5 {
		t.Fatalf("%d parked, want 5", len(parked))
	}
	if err := svc.Delete(ctx, "acct", ep.ID); err != nil {
		t.Fatal(err)
	}
	line.runUntil(t, engine, clock, clock.Now().Add(2*delivery.WatchEvery))
	ds, _, _ := store.ListDeliveries(ctx, ep.ID, 10, "")
	for _, d := range ds {
		if d.Status != delivery.StatusFailed || d.Reason != "endpoint deleted" {
			t.Errorf("delivery %s: %s (%s), want failed, endpoint deleted", d.ID, d.Status, d.Reason)
		}
	}
	parked, _ := store.ParkedDeliveries(ctx, ep.ID, 10)
	since, _ := store.Watching(ctx, ep.ID)
	if len(parked) != 0 || !since.IsZero() || len(rcv.requests()) != 0 {
		t.Errorf("%d still parked, watch %s, %d attempts; want none parked, no watch, no attempt", len(parked), since, len(rcv.requests()))
	}
}

// TestRecoverWakesParkedDeliveries: the process that parked deliveries
// dies with their watch's job (the local stack's jobs live in memory); a
// new one's Recover dispatches the pending deliveries and the recorded
// watch, and every delivery is made.
func TestRecoverWakesParkedDeliveries(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	rcv := newReceiver(t, 200)
	url := rcv.URL
	ep, _ := delivery.NewService(store, private, nil, nil).Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	cur, _ := store.GetEndpoint(ctx, "acct", ep.ID)
	cur.FailingSince, cur.Holds, cur.Version = time.Now().Add(-time.Hour), []time.Time{time.Now().Add(100 * time.Millisecond)}, cur.Version+1
	if err := store.UpdateEndpoint(ctx, cur, cur.Version-1); err != nil {
		t.Fatal(err)
	}
	dead := &recorder{} // the jobs of the process that dies
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: dead, Guard: private})
	for v := int64(1); v <= 3; v++ {
		if err := engine.Accept(ctx, pausedEvent("acct", "ses_rec", v)); err != nil {
			t.Fatal(err)
		}
	}
	for job, _, ok := dead.take(); ok; job, _, ok = dead.take() {
		if job.DeliveryID != "" {
			if err := engine.Attempt(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
	}
	if parked, _ := store.ParkedDeliveries(ctx, ep.ID, 10); len(parked) != 3 {
		t.Fatalf("%d parked, want 3", len(parked))
	}

	local := delivery.NewLocal(delivery.LocalConfig{})
	engine, _ = delivery.NewEngine(delivery.Config{Store: store, Dispatcher: local, Guard: private, WatchEvery: 50 * time.Millisecond})
	lctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); local.Wait() }()
	local.Start(lctx, engine)
	if _, err := local.Recover(lctx, store); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rcv.requests()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	local.Idle() // the last attempts are recorded, the watch has ended
	ds, _, _ := store.ListDeliveries(ctx, ep.ID, 10, "")
	for _, d := range ds {
		if d.Status != delivery.StatusSucceeded {
			t.Errorf("delivery %s: %s after the restart, want succeeded", d.ID, d.Status)
		}
	}
}

// faultyStore fails a share of a memstore's calls: before the call (nothing
// done) or, for writes, after it (done, but the caller hears an error), as
// a table that times out does.
type faultyStore struct {
	*memstore.Store
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
}

var errInjected = errors.New("injected store failure")

// fail reports whether to fail the call, and whether after doing it.
func (s *faultyStore) fail() (fail, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < s.rate, s.rng.IntN(2) == 0
}

func (s *faultyStore) read() error {
	if f, _ := s.fail(); f {
		return errInjected
	}
	return nil
}

func (s *faultyStore) write(do func() error) error {
	f, after := s.fail()
	if !f {
		return do()
	}
	if after {
		_ = do()
	}
	return errInjected
}

func (s *faultyStore) GetDelivery(ctx context.Context, endpointID, id string) (*delivery.Delivery, error) {
	if err := s.read(); err != nil {
		return nil, err
	}
	return s.Store.GetDelivery(ctx, endpointID, id)
}

func (s *faultyStore) GetEndpoint(ctx context.Context, accountID, id string) (*delivery.Endpoint, error) {
	if err := s.read(); err != nil {
		return nil, err
	}
	return s.Store.GetEndpoint(ctx, accountID, id)
}

func (s *faultyStore) ParkedDeliveries(ctx context.Context, endpointID string, limit int) ([]*delivery.Parked, error) {
	if err := s.read(); err != nil {
		return nil, err
	}
	return s.Store.ParkedDeliveries(ctx, endpointID, limit)
}

func (s *faultyStore) Watching(ctx context.Context, endpointID string) (time.Time, error) {
	if err := s.read(); err != nil {
		return time.Time{}, err
	}
	return s.Store.Watching(ctx, endpointID)
}

func (s *faultyStore) UpdateDelivery(ctx context.Context, d *delivery.Delivery, prev int64) error {
	return s.write(func() error { return s.Store.UpdateDelivery(ctx, d, prev) })
}

func (s *faultyStore) UpdateEndpoint(ctx context.Context, e *delivery.Endpoint, prev int64) error {
	return s.write(func() error { return s.Store.UpdateEndpoint(ctx, e, prev) })
}

func (s *faultyStore) ParkDelivery(ctx context.Context, p *delivery.Parked) error {
	return s.write(func() error { return s.Store.ParkDelivery(ctx, p) })
}

func (s *faultyStore) ClaimParked(ctx context.Context, p *delivery.Parked, now, before time.Time) (bool, error) {
	var ok bool
	err := s.write(func() (err error) { ok, err = s.Store.ClaimParked(ctx, p, now, before); return err })
	return ok, err
}

func (s *faultyStore) UnparkDelivery(ctx context.Context, p *delivery.Parked) error {
	return s.write(func() error { return s.Store.UnparkDelivery(ctx, p) })
}

func (s *faultyStore) StartWatch(ctx context.Context, endpointID string, since time.Time) (bool, error) {
	var ok bool
	err := s.write(func() (err error) { ok, err = s.Store.StartWatch(ctx, endpointID, since); return err })
	return ok, err
}

func (s *faultyStore) EndWatch(ctx context.Context, endpointID string, since time.Time) error {
	return s.write(func() error { return s.Store.EndWatch(ctx, endpointID, since) })
}

// faultyLine is a timeline whose sends fail at the store's rate (before or
// after the job is queued), and which runs a job whose run failed again
// after a visibility timeout through Redelivered, as SQS and the deliver
// function do.
type faultyLine struct {
	timeline
	faults *faultyStore
}

func (l *faultyLine) Dispatch(ctx context.Context, job delivery.Job, at time.Time) error {
	return l.faults.write(func() error { return l.timeline.Dispatch(ctx, job, at) })
}

// TestParkedDeliveriesAreNeverStranded: 200 deliveries to an endpoint that
// fails for its first 3 minutes, run like the deliver function runs them
// (a failed run comes back after 30 s through Redelivered) while 5 % of
// every store call and every send fails, half of them after taking
// effect. Every delivery ends succeeded and nothing stays parked: no
// parked delivery was stranded by a crash between two steps.
func TestParkedDeliveriesAreNeverStranded(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		ctx := context.Background()
		faults := &faultyStore{Store: memstore.New(), rng: rand.New(rand.NewPCG(seed, 7))}
		clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
		healthyAt := clock.Now().Add(3 * time.Minute)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if clock.Now().Before(healthyAt) {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		line := &faultyLine{faults: faults}
		engine, _ := delivery.NewEngine(delivery.Config{Store: faults, Dispatcher: line, Guard: private, Clock: clock,
			Log: slog.New(slog.DiscardHandler)})
		url := rcv.URL
		ep, err := delivery.NewService(faults.Store, private, line, clock).Create(ctx, "acct", delivery.EndpointInput{URL: &url})
		if err != nil {
			t.Fatal(err)
		}
		var evs []lifecycle.Event
		for v := int64(1); v <= 200; v++ {
			evs = append(evs, pausedEvent("acct", "ses_crash", v))
		}
		if err := engine.Accept(ctx, evs...); err != nil {
			t.Fatal(err) // no faults yet
		}
		faults.rate = 0.05
		failedRuns := 0
		end := clock.Now().Add(3 * time.Hour)
		for {
			line.mu.Lock()
			if line.jobs.Len() == 0 || !line.jobs[0].at.Before(end) {
				line.mu.Unlock()
				break
			}
			next := heap.Pop(&line.jobs).(timedJob)
			line.mu.Unlock()
			if next.at.After(clock.Now()) {
				clock.Set(next.at)
			}
			run := engine.Attempt
			if next.seq < 0 {
				run = engine.Redelivered
			}
			if err := run(ctx, next.job); err != nil {
				failedRuns++
				line.mu.Lock() // the message comes back after its visibility timeout
				heap.Push(&line.jobs, timedJob{job: next.job, at: clock.Now().Add(30 * time.Second), seq: -1})
				line.mu.Unlock()
			}
		}
		rcv.Close()
		faults.rate = 0
		ds, _, _ := faults.ListDeliveries(ctx, ep.ID, 300, "")
		succeeded := 0
		for _, d := range ds {
			if d.Status == delivery.StatusSucceeded {
				succeeded++
			}
		}
		parked, _ := faults.ParkedDeliveries(ctx, ep.ID, 300)
		t.Logf("seed %d: %d runs failed and came back; %d of %d deliveries succeeded, %d parked at the end",
			seed, failedRuns, succeeded, len(ds), len(parked))
		if succeeded != 200 || len(parked) != 0 {
			t.Errorf("seed %d: %d of 200 deliveries succeeded, %d still parked; want all succeeded, none parked", seed, succeeded, len(parked))
		}
	}
}
