// Package sqsqueue is the AWS side of outbound webhooks (docs/WEBHOOKS.md
// "How it runs"): one SQS queue carries both what starts a delivery and what
// continues it, and functions/deliver consumes it (Handler).
//
//   - An EventBridge rule on the stack's bus sends every lifecycle event
//     (the whole EventBridge event, detail = lifecycle.Event) to the queue;
//     the handler accepts it (delivery.Engine.Accept), which makes the
//     deliveries and dispatches their first attempts.
//   - A dispatched attempt is a Message {"job":…,"at":…} sent with
//     DelaySeconds until its time (at most sqskit.MaxDelay, 15 min). A longer wait
//     hops: the message arrives early, Engine.Attempt finds the delivery
//     not due and dispatches it again for the rest. No function ever sleeps.
//
// Delivery is at least once: the engine drops a stale or duplicate job by
// the delivery's attempt count and version. A job message that comes back
// after a failed run (ApproximateReceiveCount above 1) goes through
// Engine.Redelivered, which dispatches the next attempt if the failed run
// had recorded its attempt but could not send the next job. A delivery whose schedule ran
// out is copied to the dead-letter queue (DeadLetter) where an alarm sees
// it; a message the handler keeps failing on lands there too, by the
// queue's redrive policy.
package sqsqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// Message is a job message's body: the job and when it is due (RFC 3339
// UTC).
type Message struct {
	Job delivery.Job `json:"job"`
	At  time.Time    `json:"at"`
}

// Queue is a delivery.Dispatcher on one SQS queue.
type Queue struct{ queue sqskit.Queue }

var _ delivery.Dispatcher = (*Queue)(nil)

// New returns a Queue sending to url; clock nil means lifecycle.SystemClock.
func New(client sqskit.API, url string, clock lifecycle.Clock) *Queue {
	return &Queue{sqskit.Queue{API: client, URL: url, Clock: clock}}
}

// Dispatch sends the job, delayed until at (at most sqskit.MaxDelay). Errors:
// unavailable when SQS refused or did not answer.
func (q *Queue) Dispatch(ctx context.Context, job delivery.Job, at time.Time) error {
	return q.queue.Send(ctx, sqskit.Message{Body: Message{Job: job, At: at.UTC()}, DueAt: at},
		"send delivery job "+job.DeliveryID, "the delivery queue did not take the job")
}

// DeadLetter returns a delivery.Config.OnExhausted that copies a failed
// delivery's summary (ids, event, attempts' status codes) to the queue at
// url, the dead-letter queue an alarm watches.
func DeadLetter(client sqskit.API, url string) func(context.Context, *delivery.Delivery) error {
	return func(ctx context.Context, d *delivery.Delivery) error {
		if err := (sqskit.Queue{API: client, URL: url}).SendJSON(ctx, sqskit.Message{Body: d.JSON()}); err != nil {
			return fmt.Errorf("send delivery %s to the dead-letter queue: %w", d.ID, err)
		}
		return nil
	}
}

// DefaultConcurrency is how many messages of one batch Handler works on at
// once.
const DefaultConcurrency = 10

// Handler is the deliver function's SQS handler.
type Handler struct {
	engine *delivery.Engine
	log    *slog.Logger
	limit  int
}

// NewHandler returns a Handler running jobs and accepting events through
// engine; log nil means slog.Default().
func NewHandler(engine *delivery.Engine, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{engine: engine, log: log, limit: DefaultConcurrency}
}

// body is either form of a queue message (see the package doc).
type body struct {
	DetailType string          `json:"detail-type"`
	Detail     json.RawMessage `json:"detail"`
	Job        *delivery.Job   `json:"job"`
}

// Handle works on a batch's messages concurrently (at most
// DefaultConcurrency at once; each attempt is bounded by
// delivery.AttemptTimeout) and reports the ones that failed as batch item
// failures, so only those come back. A message that is neither form is
// logged and dropped.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqskit.Batch(ctx, ev, h.limit, func(ctx context.Context, rec events.SQSMessage) error {
		err := h.handle(ctx, rec)
		if err != nil {
			h.log.WarnContext(ctx, "delivery message failed; SQS delivers it again", "message_id", rec.MessageId, "err", err)
		}
		return err
	}), nil
}

func (h *Handler) handle(ctx context.Context, rec events.SQSMessage) error {
	var b body
	if err := json.Unmarshal([]byte(rec.Body), &b); err != nil {
		h.log.ErrorContext(ctx, "drop malformed delivery message", "message_id", rec.MessageId, "err", err)
		return nil
	}
	switch {
	case b.Job != nil && (b.Job.DeliveryID != "" || !b.Job.Watch.IsZero()): // an attempt, or an endpoint's watch
		if n, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"]); n > 1 {
			return h.engine.Redelivered(ctx, *b.Job)
		}
		return h.engine.Attempt(ctx, *b.Job)
	case b.DetailType != "" && len(b.Detail) > 0:
		var e lifecycle.Event
		if err := json.Unmarshal(b.Detail, &e); err != nil || e.EventID == "" {
			h.log.ErrorContext(ctx, "drop lifecycle event without a readable detail", "message_id", rec.MessageId, "err", err)
			return nil
		}
		return h.engine.Accept(ctx, e)
	default:
		h.log.ErrorContext(ctx, "drop delivery message of no known form", "message_id", rec.MessageId)
		return nil
	}
}
