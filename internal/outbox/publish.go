package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Publish publishes the events of changes, in order, through pub in one
// call: a stream batch's transitions go to the publisher together, which
// records their usage concurrently across sessions (Recording) and puts
// them on the bus up to 10 per PutEvents call, in order per session
// (internal/outbox/eventbridge). It returns how many changes, from the
// first, are done: every transition among them was published (changes that
// are not transitions count as done). On success that is len(changes) and
// err is nil. Otherwise changes[done] is the first change to deliver again:
// the first transition the publisher did not deliver (when its error says
// which, with a FirstFailed() int method, as *eventbridge.DeliveryError
// and Recording's errors do; else the first transition), or the first record
// that cannot be read; later changes must be delivered again after it so
// that a session's events keep version order (consumers dedupe the ones
// delivered twice on event_id).
func Publish(ctx context.Context, pub lifecycle.Publisher, changes []Change) (done int, err error) {
	var (
		batch []lifecycle.Event
		at    []int // at[i]: index in changes of batch[i]
	)
	stop, readErr := len(changes), error(nil)
	for i, c := range changes {
		ev, ok, err := c.Event()
		if err != nil {
			stop, readErr = i, err
			break
		}
		if ok {
			batch, at = append(batch, ev), append(at, i)
		}
	}
	if len(batch) > 0 {
		if err := pub.Publish(ctx, batch...); err != nil {
			k := 0
			var ff firstFailer
			if errors.As(err, &ff) {
				k = min(max(ff.FirstFailed(), 0), len(batch)-1)
			}
			return at[k], fmt.Errorf("publish %d events from stream record %s on: %w", len(batch)-k, changes[at[k]].Sequence, err)
		}
	}
	if readErr != nil {
		return stop, readErr
	}
	return len(changes), nil
}

// firstFailer is an error of a publisher that delivered some of a call's
// events: every event before index FirstFailed() was delivered.
type firstFailer interface {
	error
	FirstFailed() int
}

// Handler is the publisher function's handler: DynamoDB Streams batches in,
// lifecycle events out through its publisher (EventBridge in AWS).
type Handler struct {
	pub lifecycle.Publisher
	log *slog.Logger
}

// NewHandler returns the stream handler publishing through pub; log nil
// means slog.Default().
func NewHandler(pub lifecycle.Publisher, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{pub: pub, log: log}
}

// Handle publishes the transitions of one batch of stream records. It never
// returns an error: a record that could not be published is reported as a
// batch item failure (its sequence number), so the event source mapping
// (with ReportBatchItemFailures) checkpoints before it and retries from it,
// never redoing the records before it; its bisect-on-error, bounded retries
// and on-failure destination deal with a record that keeps failing.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	changes := make([]Change, len(ev.Records))
	for i, r := range ev.Records {
		changes[i] = FromLambda(r)
	}
	done, err := Publish(ctx, h.pub, changes)
	if err == nil {
		return events.DynamoDBEventResponse{}, nil
	}
	h.log.ErrorContext(ctx, "publish lifecycle events from the stream", "records", len(changes),
		"done", done, "retry_from", changes[done].Sequence, "err", err)
	return events.DynamoDBEventResponse{
		BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: changes[done].Sequence}},
	}, nil
}
