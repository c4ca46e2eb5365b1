package sqsrefill_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
)

var quiet = slog.New(slog.DiscardHandler)

// fifo is a FIFO queue as the refill path sees it: it keeps what was sent
// and drops a message whose deduplication id it has seen.
type fifo struct {
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
	ids  map[string]bool
	fail error
}

func (q *fifo) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		return nil, q.fail
	}
	if q.ids == nil {
		q.ids = map[string]bool{}
	}
	if id := aws.ToString(in.MessageDeduplicationId); !q.ids[id] {
		q.ids[id] = true
		q.sent = append(q.sent, in)
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

// records returns the messages sent so far as SQS records.
func (q *fifo) records() []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]events.SQSMessage, len(q.sent))
	for i, in := range q.sent {
		out[i] = events.SQSMessage{MessageId: aws.ToString(in.MessageDeduplicationId), Body: aws.ToString(in.MessageBody),
			Attributes: map[string]string{"MessageGroupId": aws.ToString(in.MessageGroupId)}}
	}
	return out
}

func TestRequestRefillSendsOneMessageInThePoolsGroup(t *testing.T) {
	q := &fifo{}
	r := sqsrefill.New(q, "https://sqs.example/refill.fifo")
	for range 2 { // a retried send of one claim
		if err := r.RequestRefill(t.Context(), "pool_a", "ses_1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.RequestRefill(t.Context(), "pool_a", "ses_2"); err != nil {
		t.Fatal(err)
	}
	if len(q.sent) != 2 {
		t.Fatalf("messages = %d, want 2: one per claim", len(q.sent))
	}
	in := q.sent[0]
	if aws.ToString(in.QueueUrl) != "https://sqs.example/refill.fifo" || aws.ToString(in.MessageGroupId) != "pool_a" ||
		aws.ToString(in.MessageBody) != `{"pool_id":"pool_a","session_id":"ses_1"}` {
		t.Errorf("sent %+v, want the pool's group and the pool and session in the body", in)
	}
	q.fail = errors.New("throttled")
	if err := r.RequestRefill(t.Context(), "pool_a", "ses_3"); !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("refused send = %v, want unavailable", err)
	}
}

// fillLog is a Filler that records the pools it was asked to fill.
type fillLog struct {
	pools    []string
	deadline time.Time
}

func (f *fillLog) FillPool(ctx context.Context, poolID string) (lifecycle.PoolFillSummary, error) {
	f.pools = append(f.pools, poolID)
	f.deadline, _ = ctx.Deadline()
	if poolID == "pool_gone" {
		return lifecycle.PoolFillSummary{}, lifecycle.Errorf(lifecycle.CodeNotFound, "pool %s is not configured", poolID)
	}
	return lifecycle.PoolFillSummary{Made: 1}, nil
}

func TestHandleFillsEachPoolOfABatchOnce(t *testing.T) {
	f := &fillLog{}
	h := sqsrefill.NewHandler(f, quiet)
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: `{"pool_id":"pool_a","session_id":"ses_1"}`},
		{MessageId: "2", Body: `{"pool_id":"pool_gone"}`},
		{MessageId: "3", Body: `{"pool_id":"pool_a","session_id":"ses_2"}`},
		{MessageId: "4", Body: `not json`},
		{MessageId: "5", Body: `{"pool_id":"pool_b"}`},
	}}
	end := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), end)
	defer cancel()
	resp, err := h.Handle(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Errorf("handle = %+v, %v; want no failures (a refill not made waits for the sweep)", resp, err)
	}
	if got, want := f.pools, []string{"pool_a", "pool_gone", "pool_b"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("filled %v, want %v: each pool once, in order", got, want)
	}
	if want := end.Add(-sqsrefill.DeadlineMargin); !f.deadline.Equal(want) {
		t.Errorf("fill deadline %s, want %s (the invocation's less the margin)", f.deadline, want)
	}
}

func TestClaimsRefillThePoolThroughTheQueueWithoutASweep(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	q := &fifo{}
	pool := lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", nil), Provider: "fake", Template: "base", Size: 3,
		Tier: lifecycle.TierPaused, MaxAge: time.Hour}
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: prov, Clock: clock, Log: quiet,
		Pools: []lifecycle.Pool{pool}, PoolRefills: sqsrefill.New(q, "https://sqs.example/refill.fifo"),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	if sum := svc.FillPools(t.Context()); sum.Made != 3 {
		t.Fatalf("boot fill = %+v", sum)
	}
	prov.ResetCalls()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
			if err != nil || !sess.FromPool {
				t.Errorf("create = %v, %v; want a session from the pool", sess, err)
			}
		})
	}
	wg.Wait()
	recs := q.records()
	if len(recs) != 3 {
		t.Fatalf("refill requests = %d, want one per claim", len(recs))
	}
	// SQS gives the pool's group to one invocation at a time: one
	// message per batch here, the worst case for the fills' count.
	h := sqsrefill.NewHandler(svc, quiet)
	for _, rec := range recs {
		if _, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{rec}}); err != nil {
			t.Fatal(err)
		}
	}
	views, err := svc.PoolViews(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if views[0].Ready != pool.Size {
		t.Errorf("ready spares = %d, want the pool back to %d", views[0].Ready, pool.Size)
	}
	if n := prov.Calls(fake.OpCreate); n != 3 {
		t.Errorf("provider creates = %d, want 3: three claims make three spares", n)
	}
}
