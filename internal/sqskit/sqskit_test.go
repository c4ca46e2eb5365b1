package sqskit_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
	"github.com/sandmanhq/sandman/internal/sqskit/sqskittest"
)

func TestDelay(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, c := range []struct {
		name string
		in   time.Duration
		want int32
	}{{"Past", -time.Second, 0}, {"RoundsUp", 1001 * time.Millisecond, 2}, {"Capped", 16 * time.Minute, 900}} {
		t.Run(c.name, func(t *testing.T) {
			if got := sqskit.Delay(t0, t0.Add(c.in)); got != c.want {
				t.Errorf("Delay(%s) = %d, want %d", c.in, got, c.want)
			}
		})
	}
}

func TestSend(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	t.Run("OK", func(t *testing.T) {
		q := &sqskittest.Queue{}
		fifo := sqskit.Queue{API: q, URL: "https://sqs.example/q.fifo", Clock: lifecycle.NewManualClock(t0)}
		m := sqskit.Message{Body: map[string]string{"pool_id": "p"}, GroupID: "p", DeduplicationID: "p.s"}
		if err := fifo.Send(t.Context(), m, "send refill", "refused"); err != nil {
			t.Fatal(err)
		}
		in := q.Sent()[0]
		if got, want := aws.ToString(in.MessageBody), `{"pool_id":"p"}`; got != want {
			t.Errorf("body = %s, want %s", got, want)
		}
		if aws.ToString(in.QueueUrl) != fifo.URL || in.DelaySeconds != 0 || aws.ToString(in.MessageGroupId) != "p" ||
			aws.ToString(in.MessageDeduplicationId) != "p.s" {
			t.Errorf("input = %+v, want the queue, no delay, the group and deduplication id", in)
		}
		if err := fifo.SendJSON(t.Context(), sqskit.Message{Body: 1, DueAt: t0.Add(7 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if in := q.Sent()[1]; in.DelaySeconds != 7 || in.MessageGroupId != nil || in.MessageDeduplicationId != nil {
			t.Errorf("a delayed message: delay %d s, group %v, want 7 s and no group", in.DelaySeconds, in.MessageGroupId)
		}
	})
	t.Run("ErrUnavailable", func(t *testing.T) {
		down := errors.New("queue down")
		q := sqskit.Queue{API: &sqskittest.Queue{Fail: down}, URL: "u"}
		err := q.Send(t.Context(), sqskit.Message{Body: 1}, "send timer for ses_a", "the timer queue did not take the pause timer")
		var le *lifecycle.Error
		if !errors.As(err, &le) || le.Code != lifecycle.CodeUnavailable || le.Message != "the timer queue did not take the pause timer" || !errors.Is(err, down) {
			t.Errorf("err = %v, want unavailable with the sentence, wrapping SQS's error", err)
		}
		if err := q.SendJSON(t.Context(), sqskit.Message{Body: 1}); !errors.Is(err, down) || lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
			t.Errorf("SendJSON: %v, want SQS's error as it is", err)
		}
	})
	t.Run("ErrEncode", func(t *testing.T) {
		q := &sqskittest.Queue{}
		err := sqskit.Queue{API: q, URL: "u"}.Send(t.Context(), sqskit.Message{Body: func() {}}, "w", "r")
		if err == nil || lifecycle.IsCode(err, lifecycle.CodeUnavailable) || len(q.Sent()) != 0 {
			t.Errorf("a body that does not encode: %v (sent %d), want a plain error and nothing sent", err, len(q.Sent()))
		}
	})
}

func TestBatch(t *testing.T) {
	var recs []events.SQSMessage
	for i := range 6 {
		recs = append(recs, events.SQSMessage{MessageId: strconv.Itoa(i)})
	}
	for _, c := range []struct {
		name        string
		concurrency int
	}{{"InOrder", 1}, {"Concurrent", 4}} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			resp := sqskit.Batch(t.Context(), events.SQSEvent{Records: recs}, c.concurrency, func(_ context.Context, rec events.SQSMessage) error {
				mu.Lock()
				defer mu.Unlock()
				order = append(order, rec.MessageId)
				if n, _ := strconv.Atoi(rec.MessageId); n%2 == 1 {
					return errors.New("failed")
				}
				return nil
			})
			if len(order) != len(recs) {
				t.Fatalf("handled %d records, want %d", len(order), len(recs))
			}
			if c.concurrency == 1 {
				for i, id := range order {
					if id != strconv.Itoa(i) {
						t.Fatalf("order = %v, want the batch's", order)
					}
				}
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if got, want := len(failed), 3; got != want || failed[0] != "1" || failed[1] != "3" || failed[2] != "5" {
				t.Errorf("failures = %v, want [1 3 5] in the batch's order", failed)
			}
		})
	}
}

func TestBeforeDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	cut, stop := sqskit.BeforeDeadline(ctx, time.Minute)
	defer stop()
	if got, _ := cut.Deadline(); !got.Equal(deadline.Add(-time.Minute)) {
		t.Errorf("deadline %v, want %v (a minute earlier)", got, deadline.Add(-time.Minute))
	}
	none, stop := sqskit.BeforeDeadline(t.Context(), time.Minute)
	defer stop()
	if _, ok := none.Deadline(); ok {
		t.Error("a context without a deadline got one")
	}
}
