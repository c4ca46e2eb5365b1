// Package sqskit is what Sandman's SQS edges share (internal/timer/sqstimer,
// internal/readiness/sqsjobs, internal/sweep/sqsrefill,
// internal/delivery/sqsqueue, internal/checkpoint/sqscheckpoint): the part of *sqs.Client they call, sending
// one JSON message (with a delay, or in a FIFO group), and handling a batch
// of messages with partial batch failures. Each edge keeps its own message
// shape and what a message runs; edges never import each other.
package sqskit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// API is the part of *sqs.Client the edges use.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// MaxDelay is SQS's largest DelaySeconds (900 s, 15 min).
const MaxDelay = 15 * time.Minute

// Delay returns the DelaySeconds of a message due at at (a pause timer, a
// delivery retry) seen at now: the time left rounded up to whole seconds
// (never early), from 0 to 900.
func Delay(now, at time.Time) int32 {
	d := at.Sub(now)
	if d <= 0 {
		return 0
	}
	d = min(d, MaxDelay)
	return int32((d + time.Second - 1) / time.Second)
}

// Queue is one queue an edge sends to.
type Queue struct {
	// API sends (required): an *sqs.Client.
	API API
	// URL is the queue's URL (required).
	URL string
	// Clock tells now, for a message's delay. Default lifecycle.SystemClock.
	Clock lifecycle.Clock
}

// Message is one message to send.
type Message struct {
	// Body is sent encoded as JSON.
	Body any
	// DueAt delays delivery until then, by at most MaxDelay (Delay, on the
	// queue's clock); zero sends it at once. A FIFO queue takes no delay.
	DueAt time.Time
	// GroupID and DeduplicationID are a FIFO queue's message group and
	// deduplication id; "" leaves them out.
	GroupID, DeduplicationID string
}

// SendJSON sends m. Errors: the encoder's, wrapped (a body that does not
// encode), or SQS's as it is.
func (q Queue) SendJSON(ctx context.Context, m Message) error {
	in, err := q.input(m)
	if err != nil {
		return err
	}
	_, err = q.API.SendMessage(ctx, in)
	return err
}

// Send is SendJSON for a queue the lifecycle counts on: when SQS refuses or
// does not answer, the error is a *lifecycle.Error of code unavailable whose
// message is refused (the sentence a caller may show, such as "the timer
// queue did not take the pause timer") and whose cause names what was sent
// ("send timer for ses_x"). A body that does not encode is a plain error.
func (q Queue) Send(ctx context.Context, m Message, what, refused string) error {
	in, err := q.input(m)
	if err != nil {
		return err
	}
	if _, err := q.API.SendMessage(ctx, in); err != nil {
		return &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: refused, Err: fmt.Errorf("%s: %w", what, err)}
	}
	return nil
}

// input builds m's SendMessageInput.
func (q Queue) input(m Message) (*sqs.SendMessageInput, error) {
	body, err := json.Marshal(m.Body)
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(body))}
	if !m.DueAt.IsZero() {
		clock := q.Clock
		if clock == nil {
			clock = lifecycle.SystemClock{}
		}
		in.DelaySeconds = Delay(clock.Now(), m.DueAt)
	}
	if m.GroupID != "" {
		in.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		in.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	return in, nil
}

// BeforeDeadline returns ctx cut margin before its deadline, so that a
// handler's work ends while the invocation can still record it (and the
// CancelFunc to release it); a ctx without a deadline is returned as is.
func BeforeDeadline(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d.Add(-margin))
}

// Batch runs handle on every record of ev, at most concurrency at once
// (1 or less: one after another, in order), and reports the records whose
// handle failed as batch item failures, in the batch's order, so that with
// ReportBatchItemFailures on the event source mapping only those are
// delivered again (and, after the queue's maxReceiveCount, land in its
// dead-letter queue). handle logs its own failures; a record it cannot
// read it logs and drops, returning nil, since redelivery cannot help.
func Batch(ctx context.Context, ev events.SQSEvent, concurrency int, handle func(ctx context.Context, rec events.SQSMessage) error) events.SQSEventResponse {
	failed := make([]bool, len(ev.Records))
	if concurrency <= 1 {
		for i, rec := range ev.Records {
			failed[i] = handle(ctx, rec) != nil
		}
	} else {
		var g errgroup.Group
		g.SetLimit(concurrency)
		for i, rec := range ev.Records {
			g.Go(func() error {
				failed[i] = handle(ctx, rec) != nil
				return nil // a failure is per record
			})
		}
		_ = g.Wait()
	}
	var resp events.SQSEventResponse
	for i, rec := range ev.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp
}
