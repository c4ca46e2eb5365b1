package delivery_test

import (
	"container/heap"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var private = delivery.Guard{AllowPrivate: true}

func TestRetriedUntilTheThirdAttemptSucceeds(t *testing.T) {
	r := newRig(t, "0s,10ms,10ms,10ms", private)
	rcv := newReceiver(t, 500, 500, 200)
	ep := r.endpoint(t, "acct", rcv.URL)
	ev := pausedEvent("acct", "ses_a", 3)
	if err := r.engine.Accept(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()

	got := rcv.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	for i, rq := range got {
		if err := verify(t, ep.Secret, rq); err != nil {
			t.Errorf("request %d does not verify: %v", i+1, err)
		}
		if got, want := rq.header.Get("webhook-id"), ev.EventID; got != want {
			t.Errorf("request %d webhook-id: got %q, want the event_id %q", i+1, got, want)
		}
	}
	var body delivery.Body
	if err := json.Unmarshal(got[2].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "session.paused" || body.Data.EventID != ev.EventID || !body.Timestamp.Equal(ev.Time) {
		t.Errorf("body: got %+v", body)
	}
	ds, _, err := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries: %v, %v", ds, err)
	}
	d := ds[0]
	if d.Status != delivery.StatusSucceeded || len(d.Attempts) != 3 {
		t.Fatalf("delivery: status %s with %d attempts, want succeeded with 3", d.Status, len(d.Attempts))
	}
	for i, want := range []int{500, 500, 200} {
		if got := d.Attempts[i].StatusCode; got != want {
			t.Errorf("attempt %d status code: got %d, want %d", i+1, got, want)
		}
		if d.Attempts[i].Response != "answer from the receiver" {
			t.Errorf("attempt %d response: got %q", i+1, d.Attempts[i].Response)
		}
	}
}

func TestDeadReceiverEndsFailedAndReplayResends(t *testing.T) {
	r := newRig(t, "0s,5ms,5ms", private)
	rcv := newReceiver(t, 503)
	ep := r.endpoint(t, "acct", rcv.URL)
	if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	ds, _, _ := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
	if len(ds) != 1 || ds[0].Status != delivery.StatusFailed || len(ds[0].Attempts) != 3 {
		t.Fatalf("after the schedule: %+v, want one failed delivery with 3 attempts", ds)
	}
	if got, want := ds[0].Reason, "retry schedule exhausted"; got != want {
		t.Errorf("reason: got %q, want %q", got, want)
	}

	rcv.mu.Lock()
	rcv.codes = []int{503, 503, 503, 204} // the receiver is back
	rcv.mu.Unlock()
	if _, err := r.svc.Retry(context.Background(), "acct", ep.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	d, err := r.store.GetDelivery(context.Background(), ep.ID, ds[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != delivery.StatusSucceeded || len(d.Attempts) != 4 || d.Attempts[3].StatusCode != 204 {
		t.Fatalf("after replay: status %s, %d attempts", d.Status, len(d.Attempts))
	}
	reqs := rcv.requests()
	if reqs[3].header.Get("webhook-id") != reqs[0].header.Get("webhook-id") {
		t.Errorf("a replay must keep the webhook-id")
	}
}

func TestRotationOverlapVerifiesWithEitherSecret(t *testing.T) {
	r := newRig(t, "0s", private)
	rcv := newReceiver(t, 200)
	ep := r.endpoint(t, "acct", rcv.URL)
	rotated, err := r.svc.RotateSecret(context.Background(), "acct", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == ep.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotation kept the secret or made a bad one: %q", rotated.Secret)
	}
	if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	rq := rcv.requests()[0]
	if n := len(strings.Fields(rq.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("during the overlap: %d signatures, want 2", n)
	}
	for name, secret := range map[string]string{"old": ep.Secret, "new": rotated.Secret} {
		if err := verify(t, secret, rq); err != nil {
			t.Errorf("%s secret does not verify during the overlap: %v", name, err)
		}
	}
}

func TestRotatedOutSecretStopsSigningAfterTheOverlap(t *testing.T) {
	now := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	e := delivery.Endpoint{Secret: "new", Retired: []delivery.RetiredSecret{{Secret: "old", Until: now.Add(delivery.RotationOverlap)}}}
	if got := e.Secrets(now.Add(delivery.RotationOverlap - time.Second)); len(got) != 2 {
		t.Errorf("just before the overlap ends: %v, want both", got)
	}
	if got := e.Secrets(now.Add(delivery.RotationOverlap)); len(got) != 1 || got[0] != "new" {
		t.Errorf("when the overlap ends: %v, want the new one only", got)
	}
}

func TestEventTypesFilterDeliveries(t *testing.T) {
	r := newRig(t, "0s", private)
	paused, created := newReceiver(t, 200), newReceiver(t, 200)
	r.endpoint(t, "acct", paused.URL, "session.paused")
	r.endpoint(t, "acct", created.URL, "session.provisioning")
	r.endpoint(t, "other", created.URL) // another account's endpoint
	if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	if got := len(paused.requests()); got != 1 {
		t.Errorf("session.paused endpoint: %d requests, want 1", got)
	}
	if got := len(created.requests()); got != 0 {
		t.Errorf("session.provisioning endpoint and the other account: %d requests, want 0", got)
	}
}

func TestRedeliveredEventMakesNoSecondDelivery(t *testing.T) {
	r := newRig(t, "0s", private)
	rcv := newReceiver(t, 200)
	ep := r.endpoint(t, "acct", rcv.URL)
	ev := pausedEvent("acct", "ses_a", 3)
	for range 3 {
		if err := r.engine.Accept(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		r.local.Idle()
	}
	if got := len(rcv.requests()); got != 1 {
		t.Errorf("receiver got %d requests for one event accepted three times, want 1", got)
	}
	ds, _, _ := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
	if len(ds) != 1 {
		t.Errorf("log has %d deliveries, want 1", len(ds))
	}
}

func TestDuplicateJobMakesOneAttempt(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	if _, err := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url}); err != nil {
		t.Fatal(err)
	}
	if err := engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	job, _, _ := rec.take()
	for range 2 { // SQS delivers at least once
		if err := engine.Attempt(context.Background(), job); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(rcv.requests()); got != 1 {
		t.Errorf("two copies of one job made %d requests, want 1", got)
	}
}

func TestEndpointFailingFiveDaysIsDisabled(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	ep, _ := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	ctx := context.Background()
	// One event a day; each runs its whole schedule (about 27.6 h).
	for day := int64(0); day <= 6; day++ {
		if err := engine.Accept(ctx, pausedEvent("acct", "ses_a", day+1)); err != nil {
			t.Fatal(err)
		}
		for {
			job, at, ok := rec.take()
			if !ok {
				break
			}
			if at.After(clock.Now()) {
				clock.Set(at)
			}
			if err := engine.Attempt(ctx, job); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := svc.Get(ctx, "acct", ep.ID)
		failingFor := clock.Now().Sub(got.FailingSince)
		if got.Disabled != (failingFor >= delivery.DisableAfter) {
			t.Fatalf("failing for %s: disabled=%v", failingFor, got.Disabled)
		}
		if got.Disabled {
			if !strings.Contains(got.DisabledReason, "every delivery failed since") {
				t.Errorf("disabled reason: %q", got.DisabledReason)
			}
			return
		}
		clock.Advance(24 * time.Hour)
	}
	t.Fatal("an endpoint failing for 6 days was never disabled")
}

func TestSlowEndpointDoesNotDelayAnother(t *testing.T) {
	r := newRig(t, "0s", private)
	release := make(chan struct{})
	slow := newReceiver(t, 200)
	slow.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { <-release })
	defer close(release)
	fast := newReceiver(t, 200)
	r.endpoint(t, "slowacct", slow.URL)
	r.endpoint(t, "fastacct", fast.URL)
	ctx := context.Background()
	for v := int64(1); v <= 10; v++ {
		if err := r.engine.Accept(ctx, pausedEvent("slowacct", "ses_s", v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.engine.Accept(ctx, pausedEvent("fastacct", "ses_f", 1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for len(fast.requests()) == 0 {
		select {
		case <-deadline:
			t.Fatal("the fast endpoint got nothing while the slow one hung")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestPendingDeliveriesSurviveARestart: the process dies after the
// deliveries were written and before their attempts ran (the jobs lived in
// memory); a new process recovers them from the store.
func TestPendingDeliveriesSurviveARestart(t *testing.T) {
	store := memstore.New()
	rcv := newReceiver(t, 200)
	url := rcv.URL
	ep, err := delivery.NewService(store, private, nil, nil).Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: &recorder{}, Guard: private}) // its jobs die with it
	for v := int64(1); v <= 3; v++ {
		if err := dead.Accept(context.Background(), pausedEvent("acct", "ses_a", v)); err != nil {
			t.Fatal(err)
		}
	}

	local := delivery.NewLocal(delivery.LocalConfig{})
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: local, Guard: private})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); local.Wait() }()
	local.Start(ctx, engine)
	n, err := local.Recover(ctx, store)
	if err != nil || n != 3 {
		t.Fatalf("recovered %d, %v; want 3", n, err)
	}
	local.Idle()
	if got := len(rcv.requests()); got != 3 {
		t.Errorf("receiver got %d after the restart, want 3", got)
	}
	ds, _, _ := store.ListDeliveries(ctx, ep.ID, 10, "")
	for _, d := range ds {
		if d.Status != delivery.StatusSucceeded {
			t.Errorf("%s: %s", d.ID, d.Status)
		}
	}
}

// TestFailingEndpointGetsOneAttemptAtATime: while an attempt holds a
// failing endpoint, another delivery's attempt waits (not counted) instead
// of tying up a second slot on a dead endpoint.
func TestFailingEndpointGetsOneAttemptAtATime(t *testing.T) {
	store, rec := memstore.New(), &recorder{}
	rcv := newReceiver(t, 500)
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: rec, Guard: private, Clock: clock})
	svc := delivery.NewService(store, private, rec, clock)
	url := rcv.URL
	ep, _ := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
	ctx := context.Background()
	if err := engine.Accept(ctx, pausedEvent("acct", "ses_a", 1), pausedEvent("acct", "ses_b", 1)); err != nil {
		t.Fatal(err)
	}
	first, _, _ := rec.take()
	second, _, _ := rec.take()
	if err := engine.Attempt(ctx, first); err != nil { // fails: the endpoint is now failing
		t.Fatal(err)
	}
	rec.take() // the first delivery's retry

	// Another attempt holds the endpoint now (a concurrent invocation).
	held, _ := store.GetEndpoint(ctx, "acct", ep.ID)
	if held.FailingSince.IsZero() {
		t.Fatal("a failed attempt did not mark the endpoint failing")
	}
	held.Holds, held.Version = []time.Time{clock.Now().Add(10 * time.Second)}, held.Version+1
	if err := store.UpdateEndpoint(ctx, held, held.Version-1); err != nil {
		t.Fatal(err)
	}
	if err := engine.Attempt(ctx, second); err != nil {
		t.Fatal(err)
	}
	if got := len(rcv.requests()); got != 1 {
		t.Fatalf("receiver got %d requests while the endpoint was held, want 1", got)
	}
	// The waiting attempt parks its delivery: no job of it comes back by
	// itself; the endpoint's watch does, WatchEvery later.
	watch, at, ok := rec.take()
	if !ok || watch.DeliveryID != "" || !watch.Watch.Equal(clock.Now()) || !at.Equal(clock.Now().Add(delivery.WatchEvery)) {
		t.Fatalf("after the waiting attempt: job %+v at %s, want the endpoint's watch after %s", watch, at, delivery.WatchEvery)
	}
	if parked, _ := store.ParkedDeliveries(ctx, ep.ID, 10); len(parked) != 1 || parked[0].Job() != second {
		t.Fatalf("parked %+v, want the waiting delivery", parked)
	}
	d, _ := store.GetDelivery(ctx, ep.ID, second.DeliveryID)
	if len(d.Attempts) != 0 || d.Status != delivery.StatusPending {
		t.Fatalf("a wait counted as an attempt: %+v", d)
	}

	clock.Set(at) // the hold ran out: the watch wakes the waiting delivery
	if err := engine.Attempt(ctx, watch); err != nil {
		t.Fatal(err)
	}
	job, _, ok := rec.take()
	if !ok || job != second {
		t.Fatalf("the watch dispatched %+v, want the waiting delivery's job %+v", job, second)
	}
	if err := engine.Attempt(ctx, job); err != nil {
		t.Fatal(err)
	}
	if got := len(rcv.requests()); got != 2 {
		t.Errorf("after the hold: %d requests, want 2", got)
	}
	got, _ := store.GetEndpoint(ctx, "acct", ep.ID)
	if want := []time.Time{clock.Now().Add(delivery.FailingGap)}; !slices.EqualFunc(got.Holds, want, time.Time.Equal) {
		t.Errorf("after a failed attempt the endpoint's holds are %v, want only the wait before the next, %v", got.Holds, want)
	}
}

// countingStore is a memstore that counts its writes and their write
// capacity units as DynamoDB bills them (one per KB of the item written,
// rounded up; the item's size taken as its JSON), its parking writes, and
// its reads and their read capacity units (strongly consistent: one per 4
// KB read, rounded up, a Query's items summed, at least one per request).
type countingStore struct {
	*memstore.Store
	mu                             sync.Mutex
	deliveryWrites, endpointWrites int
	deliveryWCU, endpointWCU       int
	parkWrites                     int
	reads                          int
	rcu                            int
}

func wcu(v any) int {
	b, _ := json.Marshal(v)
	return (len(b) + 1023) / 1024
}

// read counts one read request of v (an item or a list of them).
func (s *countingStore) read(v any) {
	b, _ := json.Marshal(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	s.rcu += max(1, (len(b)+4095)/4096)
}

func (s *countingStore) GetDelivery(ctx context.Context, endpointID, id string) (*delivery.Delivery, error) {
	d, err := s.Store.GetDelivery(ctx, endpointID, id)
	s.read(d)
	return d, err
}

func (s *countingStore) GetEndpoint(ctx context.Context, accountID, id string) (*delivery.Endpoint, error) {
	e, err := s.Store.GetEndpoint(ctx, accountID, id)
	s.read(e)
	return e, err
}

func (s *countingStore) ListEndpoints(ctx context.Context, accountID string) ([]*delivery.Endpoint, error) {
	es, err := s.Store.ListEndpoints(ctx, accountID)
	s.read(es)
	return es, err
}

func (s *countingStore) ParkedDeliveries(ctx context.Context, endpointID string, limit int) ([]*delivery.Parked, error) {
	ps, err := s.Store.ParkedDeliveries(ctx, endpointID, limit)
	s.read(ps)
	return ps, err
}

func (s *countingStore) Watching(ctx context.Context, endpointID string) (time.Time, error) {
	since, err := s.Store.Watching(ctx, endpointID)
	s.read(since)
	return since, err
}

func (s *countingStore) parked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parkWrites++
}

func (s *countingStore) ParkDelivery(ctx context.Context, p *delivery.Parked) error {
	s.parked()
	return s.Store.ParkDelivery(ctx, p)
}

func (s *countingStore) ClaimParked(ctx context.Context, p *delivery.Parked, now, before time.Time) (bool, error) {
	s.parked()
	return s.Store.ClaimParked(ctx, p, now, before)
}

func (s *countingStore) UnparkDelivery(ctx context.Context, p *delivery.Parked) error {
	s.parked()
	return s.Store.UnparkDelivery(ctx, p)
}

func (s *countingStore) StartWatch(ctx context.Context, endpointID string, since time.Time) (bool, error) {
	s.parked()
	return s.Store.StartWatch(ctx, endpointID, since)
}

func (s *countingStore) EndWatch(ctx context.Context, endpointID string, since time.Time) error {
	s.parked()
	return s.Store.EndWatch(ctx, endpointID, since)
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
	s.parkWrites, s.reads, s.rcu = 0, 0, 0
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
// probe of the endpoint, not one rewrite of each delivery while it waits.
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

// holdStep is how long another process's attempt holds an endpoint each
// time it takes it (hold).
const holdStep = 20 * time.Second

// hold marks ep failing and held by an attempt under way until at+holdStep.
func hold(ep *delivery.Endpoint, at time.Time) {
	ep.FailingSince, ep.Holds = at.Add(-time.Hour), []time.Time{at.Add(holdStep)}
}

// TestHeldDeliveriesCostNoWrites: while another process's attempt holds a
// failing endpoint (a probe that takes its time), the 1,000 deliveries
// queued for it wait with no write of a delivery or the endpoint at all:
// they park (docs/WEBHOOKS.md; TestWaitingDeliveriesCostAtMostOneRCUPerSecond
// counts their reads). The figure in docs/WEBHOOKS.md comes from this test's
// log line.

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
	for at := start; at.Before(start.Add(window)); at = at.Add(holdStep) {
		// Another process probes the endpoint all along: it holds it.
		cur, _ := store.Store.GetEndpoint(ctx, "acct", ep.ID)
		prev := cur.Version
		hold(cur, at)
		cur.Version++
		if err := store.Store.UpdateEndpoint(ctx, cur, prev); err != nil {
			t.Fatal(err)
		}
		line.runUntil(t, engine, clock, at.Add(holdStep))
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
