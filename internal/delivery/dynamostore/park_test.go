package dynamostore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// unitCounter is a dynamostore.API that asks DynamoDB for the capacity
// each request consumed and adds it up: read units (GetItem, Query) and
// write units (PutItem, UpdateItem, DeleteItem).
type unitCounter struct {
	*dynamodb.Client
	mu          sync.Mutex
	reads       int
	readUnits   float64
	writeUnits  float64
	writeCounts int
}

func (c *unitCounter) add(read bool, cc *types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	units := 0.0
	if cc != nil && cc.CapacityUnits != nil {
		units = *cc.CapacityUnits
	}
	if read {
		c.reads++
		c.readUnits += units
		return
	}
	c.writeCounts++
	c.writeUnits += units
}

func (c *unitCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads, c.readUnits, c.writeUnits, c.writeCounts = 0, 0, 0, 0
}

const total = types.ReturnConsumedCapacityTotal

func (c *unitCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.Client.GetItem(ctx, in, o...)
	if err == nil {
		c.add(true, out.ConsumedCapacity)
	}
	return out, err
}

func (c *unitCounter) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.Client.Query(ctx, in, o...)
	if err == nil {
		c.add(true, out.ConsumedCapacity)
	}
	return out, err
}

func (c *unitCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.Client.PutItem(ctx, in, o...)
	if err == nil {
		c.add(false, out.ConsumedCapacity)
	}
	return out, err
}

func (c *unitCounter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.Client.UpdateItem(ctx, in, o...)
	if err == nil {
		c.add(false, out.ConsumedCapacity)
	}
	return out, err
}

func (c *unitCounter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	in.ReturnConsumedCapacity = total
	out, err := c.Client.DeleteItem(ctx, in, o...)
	if err == nil {
		c.add(false, out.ConsumedCapacity)
	}
	return out, err
}

// dueJob is a job and when it is due.
type dueJob struct {
	job delivery.Job
	at  time.Time
}

// queue is a Dispatcher that keeps jobs for the test to run in time order
// on a manual clock, as SQS hands them back.
type queue struct {
	mu   sync.Mutex
	jobs []dueJob
}

func (q *queue) Dispatch(_ context.Context, job delivery.Job, at time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, dueJob{job, at})
	return nil
}

// runUntil runs every job due before end, earliest first, moving clock.
func (q *queue) runUntil(t *testing.T, e *delivery.Engine, clock *lifecycle.ManualClock, end time.Time) {
	t.Helper()
	for {
		q.mu.Lock()
		slices.SortStableFunc(q.jobs, func(a, b dueJob) int { return a.at.Compare(b.at) })
		if len(q.jobs) == 0 || !q.jobs[0].at.Before(end) {
			q.mu.Unlock()
			clock.Set(end)
			return
		}
		next := q.jobs[0]
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		if next.at.After(clock.Now()) {
			clock.Set(next.at)
		}
		if err := e.Attempt(context.Background(), next.job); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitingDeliveriesCostOnTheTable: 1,000 deliveries queued on an
// endpoint that answers every attempt with a 500, on DynamoDB Local: once
// they park, the 10 minutes that follow cost at most 1 RCU/s (the units
// DynamoDB Local reports), the endpoint's one attempt per FailingGap and
// its watch included. The delivery package's
// TestWaitingDeliveriesCostAtMostOneRCUPerSecond gives the same figure on
// the memory store.
func TestWaitingDeliveriesCostOnTheTable(t *testing.T) {
	const queued = 1000
	ctx := context.Background()
	counter := &unitCounter{Client: dynamotest.MustClient(t)}
	store := dynamostore.New(counter, dynamotest.MustTable(t))
	var requests atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer rcv.Close()
	guard := delivery.Guard{AllowPrivate: true}
	clock := lifecycle.NewManualClock(time.Now().UTC().Truncate(time.Second))
	jobs := &queue{}
	engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: jobs, Guard: guard, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	url := rcv.URL
	ep, err := delivery.NewService(store, guard, jobs, clock).Create(ctx, "acct", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]lifecycle.Event, 0, queued)
	for v := int64(1); v <= queued; v++ {
		evs = append(evs, lifecycle.Event{EventID: lifecycle.EventID("ses_park", v), SessionID: "ses_park", AccountID: "acct",
			From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: v, Time: clock.Now().Add(time.Duration(v) * time.Millisecond)})
	}
	if err := engine.Accept(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	jobs.runUntil(t, engine, clock, start.Add(time.Minute))
	parked, err := store.ParkedDeliveries(ctx, ep.ID, queued)
	if err != nil || len(parked) < queued-20 {
		t.Fatalf("%d of %d parked after a minute (%v)", len(parked), queued, err)
	}
	counter.reset()
	before := requests.Load()
	const window = 10 * time.Minute
	jobs.runUntil(t, engine, clock, start.Add(time.Minute+window))
	counter.mu.Lock()
	defer counter.mu.Unlock()
	secs := window.Seconds()
	t.Logf("%d deliveries waiting on a dead endpoint over %s on DynamoDB Local: %d attempts reached it; %d reads, %.1f RCU: "+
		"%.3f RCU/s; %d writes, %.1f WCU: %.3f WCU/s", queued, window, requests.Load()-before, counter.reads, counter.readUnits,
		counter.readUnits/secs, counter.writeCounts, counter.writeUnits, counter.writeUnits/secs)
	if counter.readUnits/secs > 1 {
		t.Errorf("waiting costs %.3f RCU/s, want at most 1", counter.readUnits/secs)
	}
	if counter.reads == 0 {
		t.Error("no read was counted: DynamoDB Local reported no capacity")
	}
}
