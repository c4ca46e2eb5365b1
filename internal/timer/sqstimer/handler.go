package sqstimer

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Firer is what a timer message fires: lifecycle.Service.FireTimer.
type Firer interface {
	FireTimer(ctx context.Context, sessionID string) (lifecycle.TimerOutcome, error)
}

// Handler is the pauser function's SQS handler. Build it with NewHandler.
type Handler struct {
	svc Firer
	log *slog.Logger
}

// NewHandler returns a Handler firing through svc; log may be nil.
func NewHandler(svc Firer, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{svc: svc, log: log}
}

// Handle fires every message of a batch and reports the ones that failed
// as batch item failures (the event source mapping sets
// ReportBatchItemFailures), so only those are delivered again and, after
// the queue's maxReceiveCount, land in the dead-letter queue. A body that is
// not a Message is logged and dropped: redelivering it cannot help.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		var m Message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil || m.SessionID == "" {
			h.log.ErrorContext(ctx, "drop malformed timer message", "message_id", rec.MessageId, "err", err)
			continue
		}
		out, err := h.svc.FireTimer(ctx, m.SessionID)
		if err != nil {
			h.log.WarnContext(ctx, "pause timer failed; SQS delivers it again", "session_id", m.SessionID, "err", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			continue
		}
		h.log.DebugContext(ctx, "pause timer fired", "session_id", m.SessionID, "outcome", out)
	}
	return resp, nil
}
