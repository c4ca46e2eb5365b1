package sqsqueue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// fakeSQS keeps every message sent, by queue URL.
type fakeSQS struct {
	mu   sync.Mutex
	sent map[string][]*sqs.SendMessageInput
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent == nil {
		f.sent = map[string][]*sqs.SendMessageInput{}
	}
	f.sent[*in.QueueUrl] = append(f.sent[*in.QueueUrl], in)
	return &sqs.SendMessageOutput{}, nil
}

// take removes and returns the messages sent to url.
func (f *fakeSQS) take(url string) []*sqs.SendMessageInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.sent[url]
	delete(f.sent, url)
	return m
}

const queueURL, dlqURL = "https://sqs.local/deliveries", "https://sqs.local/deliveries-dlq"

func TestDeliverFunctionRetriesThroughTheQueueAndDeadLetters(t *testing.T) {
	var calls int
	var mu sync.Mutex
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(500)
	}))
	defer rcv.Close()

	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 2, 10, 0, 0, time.UTC))
	store, api := memstore.New(), &fakeSQS{}
	q := sqsqueue.New(api, queueURL, clock)
	guard := delivery.Guard{AllowPrivate: true}
	engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: q, Guard: guard, Clock: clock,
		Schedule: []time.Duration{0, 5 * time.Second, 40 * time.Minute}, OnExhausted: sqsqueue.DeadLetter(api, dlqURL)})
	if err != nil {
		t.Fatal(err)
	}
	url := rcv.URL
	ep, err := delivery.NewService(store, guard, q, clock).Create(context.Background(), "dev", delivery.EndpointInput{URL: &url})
	if err != nil {
		t.Fatal(err)
	}
	h := sqsqueue.NewHandler(engine, nil)

	b, err := os.ReadFile("../../../events/queue/deliver.json")
	if err != nil {
		t.Fatal(err)
	}
	var batch events.SQSEvent
	if err := json.Unmarshal(b, &batch); err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), batch)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("fixture batch: %+v, %v (a malformed body is dropped, not retried)", resp, err)
	}
	// run feeds the queue's messages back to the handler, moving the clock
	// to each message's delay as SQS would.
	run := func(wantDelays ...int32) {
		t.Helper()
		msgs := api.take(queueURL)
		if len(msgs) != len(wantDelays) {
			t.Fatalf("queue has %d messages, want %d", len(msgs), len(wantDelays))
		}
		for i, m := range msgs {
			if m.DelaySeconds != wantDelays[i] {
				t.Errorf("message %d: DelaySeconds %d, want %d", i, m.DelaySeconds, wantDelays[i])
			}
			clock.Advance(time.Duration(m.DelaySeconds) * time.Second)
			resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: aws.ToString(m.MessageBody)}}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("job: %+v, %v", resp, err)
			}
		}
	}
	run(0)   // the first attempt, dispatched by the accepted event
	run(5)   // 500: the second attempt 5 s later
	run(900) // 500: the third is 40 min out, so the message hops at 15 min
	run(900) // ... and again
	run(600) // ... then the remaining 10 min: the third attempt
	run()    // nothing left
	if calls != 3 {
		t.Errorf("receiver got %d requests, want 3", calls)
	}
	dead := api.take(dlqURL)
	if len(dead) != 1 || !strings.Contains(aws.ToString(dead[0].MessageBody), `"status":"failed"`) {
		t.Fatalf("dead-letter queue: %d messages", len(dead))
	}
	ds, _, _ := store.ListDeliveries(context.Background(), ep.ID, 10, "")
	if len(ds) != 1 || ds[0].Status != delivery.StatusFailed || len(ds[0].Attempts) != 3 {
		t.Fatalf("log: %+v", ds)
	}
	if got, want := ds[0].EventID, "ses_01JDEMO0000000000000000000:7"; got != want {
		t.Errorf("event id: %q, want %q", got, want)
	}
}

// flakySQS fails the SendMessage calls whose number (from 1) is in fail.
type flakySQS struct {
	fakeSQS
	calls int
	fail  map[int]bool
}

func (f *flakySQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.calls++
	if f.fail[f.calls] {
		return nil, context.DeadlineExceeded
	}
	return f.fakeSQS.SendMessage(ctx, in, o...)
}

// TestJobWhoseNextDispatchFailedIsNotLost: an attempt is recorded, then
// sending the next job fails; SQS delivers the job again (receive count 2)
// and the retry still happens.
func TestJobWhoseNextDispatchFailedIsNotLost(t *testing.T) {
	var mu sync.Mutex
	var calls int
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		code := map[bool]int{true: 500, false: 200}[calls == 1]
		mu.Unlock()
		w.WriteHeader(code)
	}))
	defer rcv.Close()
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 2, 10, 0, 0, time.UTC))
	store := memstore.New()
	api := &flakySQS{fail: map[int]bool{2: true}} // the first job sends; the retry's send fails
	q := sqsqueue.New(api, queueURL, clock)
	guard := delivery.Guard{AllowPrivate: true}
	engine, _ := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: q, Guard: guard, Clock: clock,
		Schedule: []time.Duration{0, 5 * time.Second}})
	url := rcv.URL
	ep, _ := delivery.NewService(store, guard, q, clock).Create(context.Background(), "dev", delivery.EndpointInput{URL: &url})
	h := sqsqueue.NewHandler(engine, nil)
	ev := lifecycle.Event{EventID: "ses_a:3", SessionID: "ses_a", AccountID: "dev", From: "running", To: "paused", Version: 3, Time: clock.Now()}
	if err := engine.Accept(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	job := api.take(queueURL)
	if len(job) != 1 {
		t.Fatalf("first job: %d messages", len(job))
	}
	msg := events.SQSMessage{MessageId: "m1", Body: aws.ToString(job[0].MessageBody), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("a run whose next dispatch failed must be reported failed: %+v", resp)
	}
	msg.Attributes["ApproximateReceiveCount"] = "2" // SQS delivers it again
	clock.Advance(6 * time.Minute)
	if resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivered job: %+v", resp)
	}
	next := api.take(queueURL)
	if len(next) != 1 {
		t.Fatalf("after the redelivery: %d job messages, want the retry", len(next))
	}
	if resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m2", Body: aws.ToString(next[0].MessageBody)}}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry: %+v", resp)
	}
	ds, _, _ := store.ListDeliveries(context.Background(), ep.ID, 10, "")
	if len(ds) != 1 || ds[0].Status != delivery.StatusSucceeded || len(ds[0].Attempts) != 2 {
		t.Fatalf("log: %+v", ds[0])
	}
}
