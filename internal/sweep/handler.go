package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
)

// Handler is the sweep Lambda's handler: one run per EventBridge
// scheduled event, and, with Refills set, the pool refill requests of the
// refill queue (Invoke tells them apart).
type Handler struct {
	Sweeper *Sweeper
	Log     *slog.Logger // may be nil: slog.Default()
	// Refills runs pool refill requests (docs/POOLS.md "Refill"); nil:
	// an SQS batch is refused.
	Refills *sqsrefill.Handler
}

// NewHandler returns a Handler running sw; log may be nil.
func NewHandler(sw *Sweeper, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{Sweeper: sw, Log: log}
}

// Handle runs one sweep for the scheduled event ev (its content only goes to
// the log: any event triggers a run, so `make invoke` and a manual test
// invoke work too) and returns the run's Summary. It returns an error only
// when the run could not start (the store is unreachable, say), so the
// retries of the asynchronous invocation (Lambda's, for EventBridge targets)
// are spent on failures a retry can fix; work a run leaves undone is picked
// up by the next scheduled run anyway.
func (h *Handler) Handle(ctx context.Context, ev events.CloudWatchEvent) (Summary, error) {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	log.InfoContext(ctx, "idle sweep triggered", "event_id", ev.ID, "detail_type", ev.DetailType,
		"source", ev.Source, "scheduled_at", ev.Time, "resources", ev.Resources)
	return h.Sweeper.Run(ctx)
}

// Invoke is the function's entry point: an SQS batch (records whose
// eventSource is "aws:sqs") goes to Refills, anything else is a scheduled
// event for Handle. Errors: Handle's; an SQS batch without Refills, or an
// event that is not JSON.
func (h *Handler) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("decode the invocation's event: %w", err)
	}
	if len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sqs" {
		if h.Refills == nil {
			return nil, errors.New("an SQS batch reached the sweep, which has no pool refill handler")
		}
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("decode the SQS batch: %w", err)
		}
		return h.Refills.Handle(ctx, ev)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("decode the scheduled event: %w", err)
	}
	return h.Handle(ctx, ev)
}
