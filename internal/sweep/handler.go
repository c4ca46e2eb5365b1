package sweep

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
)

// Handler is the idlepause Lambda's handler: one run per EventBridge
// scheduled event.
type Handler struct {
	Sweeper *Sweeper
	Log     *slog.Logger // may be nil: slog.Default()
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
