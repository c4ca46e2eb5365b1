package outbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// BatchSize is how many events Publish hands the publisher per call:
// PutEvents' limit of 10 entries (EventBridge API reference, PutEvents), so
// one failed call names a span of at most 10 records.
const BatchSize = 10

// Publish publishes the events of changes, in order, BatchSize at a time,
// through pub (which retries failed entries itself, as internal/outbox/eventbridge
// does). It returns how many changes, from the first, are done: every
// transition among them was published (changes that are not transitions
// count as done). On success that is len(changes) and err is nil. Otherwise
// changes[done] is the first change to deliver again (its batch failed, or
// its record cannot be read: err says which); later changes must be
// delivered again after it so that a session's events keep version order.
func Publish(ctx context.Context, pub lifecycle.Publisher, changes []Change) (done int, err error) {
	var (
		batch []lifecycle.Event
		first []int // first[i]: index in changes of batch[i]
	)
	// flush publishes the batch; on failure the first change to deliver
	// again is the batch's first (everything before it is done).
	flush := func() (int, error) {
		if len(batch) == 0 {
			return 0, nil
		}
		if err := pub.Publish(ctx, batch...); err != nil {
			return first[0], fmt.Errorf("publish %d events from stream record %s on: %w", len(batch), changes[first[0]].Sequence, err)
		}
		batch, first = batch[:0], first[:0]
		return 0, nil
	}
	for i, c := range changes {
		ev, ok, err := c.Event()
		if err != nil {
			if at, ferr := flush(); ferr != nil {
				return at, ferr
			}
			return i, err
		}
		if !ok {
			continue // not a transition: done once everything before it is
		}
		batch, first = append(batch, ev), append(first, i)
		if len(batch) == BatchSize {
			if at, err := flush(); err != nil {
				return at, err
			}
		}
	}
	if at, err := flush(); err != nil {
		return at, err
	}
	return len(changes), nil
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
