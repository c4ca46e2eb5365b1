package sqstimer_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// fakeSQS answers SendMessage in SQS's JSON protocol and keeps what it got.
type fakeSQS struct {
	mu   sync.Mutex
	sent []map[string]any
	fail bool
}

func (f *fakeSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("X-Amz-Target"); got != "AmazonSQS.SendMessage" {
		http.Error(w, "unexpected target "+got, http.StatusBadRequest)
		return
	}
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	fail := f.fail
	if !fail {
		f.sent = append(f.sent, in)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if fail {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no queue"}`))
		return
	}
	sum := md5.Sum([]byte(in["MessageBody"].(string)))
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": "m-1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

func newClient(t *testing.T, h http.Handler) *sqs.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1})
}

func TestDelay(t *testing.T) {
	for _, c := range []struct {
		name string
		in   time.Duration
		want int32
	}{
		{"Past", -time.Minute, 0},
		{"Now", 0, 0},
		{"RoundsUp", 1500 * time.Millisecond, 2},
		{"Exact", time.Minute, 60},
		{"Capped", time.Hour, 900},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := sqstimer.Delay(t0, t0.Add(c.in)); got != c.want {
				t.Errorf("Delay(%s) = %d, want %d", c.in, got, c.want)
			}
		})
	}
}

func TestArmSendsADelayedMessage(t *testing.T) {
	f := &fakeSQS{}
	tm := sqstimer.New(newClient(t, f), "https://sqs.example/123/timers", lifecycle.NewManualClock(t0))
	at := t0.Add(90 * time.Second)
	if err := tm.Arm(t.Context(), "ses_a", at); err != nil {
		t.Fatalf("arm: %v", err)
	}
	if got := len(f.sent); got != 1 {
		t.Fatalf("messages sent = %d, want 1", got)
	}
	in := f.sent[0]
	if got, want := in["QueueUrl"], "https://sqs.example/123/timers"; got != want {
		t.Errorf("QueueUrl = %v, want %v", got, want)
	}
	if got, want := in["DelaySeconds"], 90.0; got != want {
		t.Errorf("DelaySeconds = %v, want %v", got, want)
	}
	var m sqstimer.Message
	if err := json.Unmarshal([]byte(in["MessageBody"].(string)), &m); err != nil {
		t.Fatalf("body: %v", err)
	}
	if m.SessionID != "ses_a" || !m.At.Equal(at) {
		t.Errorf("body = %+v, want ses_a at %s", m, at)
	}

	f.fail = true
	if err := tm.Arm(t.Context(), "ses_b", at); !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("arm against a failing queue: %v, want unavailable", err)
	}
}

// firer records fires and fails the sessions named in failing.
type firer struct {
	mu      sync.Mutex
	fired   []string
	failing map[string]bool
}

func (f *firer) FireTimer(_ context.Context, id string) (lifecycle.TimerOutcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fired = append(f.fired, id)
	if f.failing[id] {
		return lifecycle.TimerIdle, errors.New("provider down")
	}
	return lifecycle.TimerPaused, nil
}

func TestHandlerReportsBatchItemFailures(t *testing.T) {
	f := &firer{failing: map[string]bool{"ses_bad": true}}
	h := sqstimer.NewHandler(f, slog.New(slog.DiscardHandler))
	body := func(id string) string { return `{"session_id":"` + id + `","at":"2026-05-06T07:08:09Z"}` }
	resp, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "1", Body: body("ses_ok")},
		{MessageId: "2", Body: body("ses_bad")},
		{MessageId: "3", Body: "not json"},
	}})
	if err != nil {
		t.Fatalf("handle: %v", err)
	}
	slices.Sort(f.fired)
	if got, want := strings.Join(f.fired, ","), "ses_bad,ses_ok"; got != want {
		t.Errorf("fired = %s, want %s", got, want)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "2" {
		t.Errorf("failures = %+v, want only message 2", resp.BatchItemFailures)
	}
}

// blockingFirer holds every fire until release is closed, counting how many
// are in flight at once.
type blockingFirer struct {
	release           chan struct{}
	mu                sync.Mutex
	inFlight, busiest int
}

func (f *blockingFirer) FireTimer(context.Context, string) (lifecycle.TimerOutcome, error) {
	f.mu.Lock()
	f.inFlight++
	f.busiest = max(f.busiest, f.inFlight)
	f.mu.Unlock()
	<-f.release
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	return lifecycle.TimerPaused, nil
}

// TestHandlerFiresABatchConcurrently: a batch of 10 timers is fired at once
// (a pause takes seconds at the provider; ten in a row would take ten
// times that), and no more than the handler's concurrency at a time.
func TestHandlerFiresABatchConcurrently(t *testing.T) {
	for _, tt := range []struct {
		name        string
		concurrency int
		want        int
	}{{"Default", 0, 10}, {"Bounded", 3, 3}, {"OneByOne", 1, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			f := &blockingFirer{release: make(chan struct{})}
			h := sqstimer.NewHandlerConcurrent(f, slog.New(slog.DiscardHandler), tt.concurrency)
			var recs []events.SQSMessage
			for i := range 10 {
				recs = append(recs, events.SQSMessage{MessageId: strconv.Itoa(i),
					Body: `{"session_id":"ses_` + strconv.Itoa(i) + `","at":"2026-05-06T07:08:09Z"}`})
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if _, err := h.Handle(t.Context(), events.SQSEvent{Records: recs}); err != nil {
					t.Errorf("handle: %v", err)
				}
			}()
			// Wait until the handler has started as many fires as it may.
			for {
				f.mu.Lock()
				n := f.inFlight
				f.mu.Unlock()
				if n >= tt.want {
					break
				}
				runtime.Gosched()
			}
			close(f.release)
			<-done
			if got := f.busiest; got != tt.want {
				t.Errorf("at most %d fires at once, want %d", got, tt.want)
			}
		})
	}
}
