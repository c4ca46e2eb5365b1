package dynamostore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// jobList is a Dispatcher that keeps the jobs it is given.
type jobList struct {
	mu   sync.Mutex
	jobs []delivery.Job
}

func (l *jobList) Dispatch(_ context.Context, job delivery.Job, _ time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobs = append(l.jobs, job)
	return nil
}

func (l *jobList) take() []delivery.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	j := l.jobs
	l.jobs = nil
	return j
}

// TestEndpointCapHoldsAcrossCallersOnTheTable: the holds of a capped
// endpoint are conditional writes of its item, so callers racing on the
// table (the deliver function's invocations) never put more attempts
// under way than the cap: one for a failing endpoint, four for a slow one.
// A caller over the cap parks its delivery, unwritten.
func TestEndpointCapHoldsAcrossCallersOnTheTable(t *testing.T) {
	client := dynamotest.MustClient(t)
	for _, tc := range []struct {
		name string
		mark func(e *delivery.Endpoint, now time.Time)
		cap  int32
	}{
		{"failing", func(e *delivery.Endpoint, now time.Time) { e.FailingSince = now.Add(-time.Hour) }, 1},
		{"slow", func(e *delivery.Endpoint, now time.Time) { e.SlowSince = now.Add(-time.Hour) }, delivery.SlowEndpointConcurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const queued = 10
			ctx := context.Background()
			store := dynamostore.New(client, dynamotest.MustTable(t))
			gate := make(chan struct{})
			var inFlight, maxInFlight atomic.Int32
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n := inFlight.Add(1)
				for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
				}
				<-gate
				inFlight.Add(-1)
				w.WriteHeader(http.StatusOK)
			}))
			defer rcv.Close()
			guard := delivery.Guard{AllowPrivate: true}
			jobs := &jobList{}
			engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: jobs, Guard: guard})
			if err != nil {
				t.Fatal(err)
			}
			url := rcv.URL
			ep, err := delivery.NewService(store, guard, jobs, nil).Create(ctx, "acct", delivery.EndpointInput{URL: &url})
			if err != nil {
				t.Fatal(err)
			}
			prev := ep.Version
			tc.mark(ep, time.Now())
			ep.Version++
			if err := store.UpdateEndpoint(ctx, ep, prev); err != nil {
				t.Fatal(err)
			}
			var evs []lifecycle.Event
			for v := int64(1); v <= queued; v++ {
				evs = append(evs, lifecycle.Event{EventID: lifecycle.EventID("ses_cap", v), SessionID: "ses_cap",
					AccountID: "acct", From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: v,
					Time: time.Now().Add(time.Duration(v) * time.Millisecond)})
			}
			if err := engine.Accept(ctx, evs...); err != nil {
				t.Fatal(err)
			}
			due := jobs.take()
			var wg sync.WaitGroup
			for _, job := range due {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := engine.Attempt(ctx, job); err != nil {
						t.Error(err)
					}
				}()
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				parked, err := store.ParkedDeliveries(ctx, ep.ID, queued)
				if err != nil {
					t.Fatal(err)
				}
				if len(parked)+int(inFlight.Load()) == queued || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			under := inFlight.Load()
			close(gate)
			wg.Wait()
			if m := maxInFlight.Load(); m > tc.cap || under < 1 {
				t.Errorf("%d attempts at once reached the endpoint (%d once every caller had run), want 1 to %d", m, under, tc.cap)
			}
			// The waiting deliveries: parked, or woken by an attempt that
			// let go of its hold (their jobs dispatched, not yet run).
			waiting := jobs.take()
			parked, err := store.ParkedDeliveries(ctx, ep.ID, queued)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parked {
				waiting = append(waiting, p.Job())
			}
			waited := 0
			for _, job := range waiting {
				if job.Seq != 0 || job.DeliveryID == "" {
					continue // an attempt's next one, or the endpoint's watch
				}
				waited++
				d, err := store.GetDelivery(ctx, ep.ID, job.DeliveryID)
				if err != nil {
					t.Fatal(err)
				}
				if d.Version != 1 || len(d.Attempts) != 0 {
					t.Errorf("a waiting delivery was written: version %d, %d attempts", d.Version, len(d.Attempts))
				}
			}
			if waited+int(under) != queued {
				t.Errorf("%d waited and %d ran, want %d in all", waited, under, queued)
			}
			got, err := store.GetEndpoint(ctx, "acct", ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range got.Holds {
				if h.After(time.Now().Add(delivery.FailingGap)) {
					t.Errorf("a finished attempt left its hold until %s", h)
				}
			}
		})
	}
}
