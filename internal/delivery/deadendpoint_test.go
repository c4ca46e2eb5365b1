package delivery_test

import (
	"container/heap"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// countingStore is a memstore that counts its writes and their write
// capacity units as DynamoDB bills them (one per KB of the item written,
// rounded up; the item's size taken as its JSON).
type countingStore struct {
	*memstore.Store
	mu                             sync.Mutex
	deliveryWrites, endpointWrites int
	deliveryWCU, endpointWCU       int
}

func wcu(v any) int {
	b, _ := json.Marshal(v)
	return (len(b) + 1023) / 1024
}

func (s *countingStore) UpdateDelivery(ctx context.Context, d *delivery.Delivery, prev int64) error {
	s.mu.Lock()
	s.deliveryWrites++
	s.deliveryWCU += wcu(d)
	s.mu.Unlock()
	return s.Store.UpdateDelivery(ctx, d, prev)
}

func (s *countingStore) UpdateEndpoint(ctx context.Context, e *delivery.Endpoint, prev int64) error {
	s.mu.Lock()
	s.endpointWrites++
	s.endpointWCU += wcu(e)
	s.mu.Unlock()
	return s.Store.UpdateEndpoint(ctx, e, prev)
}

func (s *countingStore) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliveryWrites, s.endpointWrites, s.deliveryWCU, s.endpointWCU = 0, 0, 0, 0
}

// timeline is a Dispatcher that keeps jobs in time order, for a test to run
// them on a manual clock as SQS would hand them back.
type timeline struct {
	mu   sync.Mutex
	jobs jobHeap
	seq  int
}

type timedJob struct {
	job delivery.Job
	at  time.Time
	seq int
}

type jobHeap []timedJob

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(timedJob)) }
func (h *jobHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (l *timeline) Dispatch(_ context.Context, job delivery.Job, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	heap.Push(&l.jobs, timedJob{job: job, at: at, seq: l.seq})
	return nil
}

// runUntil runs every job due before end in time order, moving clock to
// each one's time; it returns how many ran.
func (l *timeline) runUntil(t *testing.T, e *delivery.Engine, clock *lifecycle.ManualClock, end time.Time) int {
	t.Helper()
	n := 0
	for {
		l.mu.Lock()
		if l.jobs.Len() == 0 || !l.jobs[0].at.Before(end) {
			l.mu.Unlock()
			clock.Set(end)
			return n
		}
		next := heap.Pop(&l.jobs).(timedJob)
		l.mu.Unlock()
		if next.at.After(clock.Now()) {
			clock.Set(next.at)
		}
		if err := e.Attempt(context.Background(), next.job); err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// TestDeadEndpointHoldsItsDeliveriesWithoutWrites: 1,000 deliveries queued
// for an endpoint that fails every attempt cost the table a few writes per
// probe of the endpoint, not one rewrite of each delivery per ProbeWait.
// The figure in docs/WEBHOOKS.md "Retries, failure, disabling" comes from
// this test's log line.
func TestDeadEndpointHoldsItsDeliveriesWithoutWrites(t *testing.T) {
	const queued = 1000
	store := &countingStore{Store: memstore.New()}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	line := &timeline{}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: line, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, line, clock)
	url := rcv.URL
	ep, _ := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	var evs []lifecycle.Event
	for v := int64(1); v <= queued; v++ {
		evs = append(evs, pausedEvent("acct", "ses_dead", v))
	}
	if err := engine.Accept(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
	// The first minute: the endpoint fails and becomes failing; the queue
	// settles into waiting.
	start := clock.Now()
	line.runUntil(t, engine, clock, start.Add(time.Minute))
	if got, _ := store.GetEndpoint(context.Background(), "acct", ep.ID); got.FailingSince.IsZero() {
		t.Fatal("the endpoint is not failing")
	}

	store.reset()
	before := len(rcv.requests())
	const window = 10 * time.Minute
	jobs := line.runUntil(t, engine, clock, start.Add(time.Minute+window))
	probes := len(rcv.requests()) - before
	secs := window.Seconds()
	wcuPerSec := float64(store.deliveryWCU+store.endpointWCU) / secs
	t.Logf("%d deliveries held by a dead endpoint over %s: %d jobs run, %d attempts reached it, "+
		"%d delivery writes (%d WCU), %d endpoint writes (%d WCU): %.2f writes/s, %.2f WCU/s (%.2f WCU/s were every delivery item 10 KB)",
		queued, window, jobs, probes, store.deliveryWrites, store.deliveryWCU, store.endpointWrites, store.endpointWCU,
		float64(store.deliveryWrites+store.endpointWrites)/secs, wcuPerSec, float64(10*store.deliveryWrites+store.endpointWCU)/secs)
	if max := int(window / delivery.FailingGap); probes > max+1 {
		t.Errorf("%d attempts reached the dead endpoint in %s, want at most one per %s (%d)", probes, window, delivery.FailingGap, max)
	}
	if perProbe := 4 * (probes + 1); store.deliveryWrites+store.endpointWrites > perProbe {
		t.Errorf("%d writes for %d attempts, want at most %d: a waiting delivery must cost no write",
			store.deliveryWrites+store.endpointWrites, probes, perProbe)
	}
}

// TestHeldDeliveriesCostNoWrites: while another process's attempt holds a
// failing endpoint (a probe that takes its time), the 1,000 deliveries
// queued for it wait with no write at all; each ProbeWait their jobs come
// back and read, nothing more. The figure in docs/WEBHOOKS.md comes from
// this test's log line.
// hold marks ep failing and held by an attempt under way until at+ProbeWait.
func hold(ep *delivery.Endpoint, at time.Time) {
	ep.FailingSince, ep.Holds = at.Add(-time.Hour), []time.Time{at.Add(delivery.ProbeWait)}
}

func TestHeldDeliveriesCostNoWrites(t *testing.T) {
	const queued = 1000
	store := &countingStore{Store: memstore.New()}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	line := &timeline{}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: line, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, line, clock)
	url := rcv.URL
	ep, _ := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	ctx := context.Background()
	var evs []lifecycle.Event
	for v := int64(1); v <= queued; v++ {
		evs = append(evs, pausedEvent("acct", "ses_dead", v))
	}
	if err := engine.Accept(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	const window = 10 * time.Minute
	for at := start; at.Before(start.Add(window)); at = at.Add(delivery.ProbeWait) {
		// Another process probes the endpoint all along: it holds it.
		cur, _ := store.Store.GetEndpoint(ctx, "acct", ep.ID)
		prev := cur.Version
		hold(cur, at)
		cur.Version++
		if err := store.Store.UpdateEndpoint(ctx, cur, prev); err != nil {
			t.Fatal(err)
		}
		line.runUntil(t, engine, clock, at.Add(delivery.ProbeWait))
	}
	secs := window.Seconds()
	t.Logf("%d deliveries waiting on a held endpoint over %s: %d delivery writes (%d WCU), %d endpoint writes (%d WCU): "+
		"%.2f writes/s, %.2f WCU/s (%.0f WCU/s were every delivery item 10 KB)",
		queued, window, store.deliveryWrites, store.deliveryWCU, store.endpointWrites, store.endpointWCU,
		float64(store.deliveryWrites+store.endpointWrites)/secs, float64(store.deliveryWCU+store.endpointWCU)/secs,
		float64(10*store.deliveryWrites+store.endpointWCU)/secs)
	if got := len(rcv.requests()); got != 0 {
		t.Errorf("%d attempts reached the endpoint while another attempt held it", got)
	}
	if store.deliveryWrites+store.endpointWrites != 0 {
		t.Errorf("waiting cost %d delivery and %d endpoint writes, want none", store.deliveryWrites, store.endpointWrites)
	}
}
