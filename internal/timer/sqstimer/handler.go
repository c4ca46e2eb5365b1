package sqstimer

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// Firer is what a timer message fires: lifecycle.Service.FireTimer.
type Firer interface {
	FireTimer(ctx context.Context, sessionID string) (lifecycle.TimerOutcome, error)
}

// Handler is the timer function function's SQS handler. Build it with NewHandler.
type Handler struct {
	svc         Firer
	log         *slog.Logger
	concurrency int
}

// DefaultConcurrency is how many timers of one batch a Handler fires at
// once when NewHandlerConcurrent is given none: a whole SQS batch of 10
// (the event source mapping's batch size), so a batch takes about one
// provider pause, not ten in a row (docs/CAPACITY.md "Pauser").
const DefaultConcurrency = 10

// NewHandler returns a Handler firing through svc, DefaultConcurrency
// timers at a time; log may be nil.
func NewHandler(svc Firer, log *slog.Logger) *Handler {
	return NewHandlerConcurrent(svc, log, 0)
}

// NewHandlerConcurrent is NewHandler firing at most concurrency timers of a
// batch at once (0: DefaultConcurrency; 1: one after another).
func NewHandlerConcurrent(svc Firer, log *slog.Logger, concurrency int) *Handler {
	if log == nil {
		log = slog.Default()
	}
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	return &Handler{svc: svc, log: log, concurrency: concurrency}
}

// Handle fires every message of a batch, up to the handler's concurrency at
// once, and reports the ones that failed as batch item failures (the event
// source mapping sets ReportBatchItemFailures), so only those are delivered
// again and, after the queue's maxReceiveCount, land in the dead-letter
// queue. A body that is not a Message is logged and dropped: redelivering
// it cannot help. Failures are reported in the batch's order.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqskit.Batch(ctx, ev, h.concurrency, func(ctx context.Context, rec events.SQSMessage) error {
		var m Message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil || m.SessionID == "" {
			h.log.ErrorContext(ctx, "drop malformed timer message", "message_id", rec.MessageId, "err", err)
			return nil
		}
		out, err := h.svc.FireTimer(ctx, m.SessionID)
		if err != nil {
			h.log.WarnContext(ctx, "pause timer failed; SQS delivers it again", "session_id", m.SessionID, "err", err)
			return err
		}
		h.log.DebugContext(ctx, "pause timer fired", "session_id", m.SessionID, "outcome", out)
		return nil
	}), nil
}
