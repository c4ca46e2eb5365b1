// Package sqsrefill is the AWS lifecycle.PoolRefills (docs/POOLS.md
// "Refill"): after a create claims a warm pool's spare, the sessions
// function sends one message naming the pool to a FIFO SQS queue, and the
// sweep function (Handler, beside its schedule) consumes it by calling
// lifecycle.Service.FillPool, so the pool is back to its size within
// seconds instead of at the sweep's next run.
//
// Bounded and idempotent: the message group is the pool id, so SQS hands
// the refills of one pool to one invocation at a time, in order; each is
// FillPool, a "make up to size" that finds the spares the one before it
// made, so N claims make N spares, never N pools. The deduplication id is
// the claiming session's, so a send the SDK retried is dropped. A batch
// naming a pool several times fills it once. A request that could not be
// sent, or a refill cut short by the invocation's deadline, only waits for
// the sweep's next run (every 5 minutes), which fills every pool anyway.
package sqsrefill

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// Message is a refill request's body (JSON): the pool to refill and the
// session whose claim asked for it (for the logs).
type Message struct {
	PoolID    string `json:"pool_id"`
	SessionID string `json:"session_id,omitempty"`
}

// Refills sends refill requests to one FIFO queue. Build it with New.
type Refills struct{ queue sqskit.Queue }

var _ lifecycle.PoolRefills = (*Refills)(nil)

// New returns Refills sending to the FIFO queue queueURL through client.
func New(client sqskit.API, queueURL string) *Refills {
	return &Refills{sqskit.Queue{API: client, URL: queueURL}}
}

// RequestRefill sends one message for poolID in the pool's message group,
// deduplicated by the pool and sessionID (a new id when sessionID is "").
// Errors: unavailable when SQS refused or did not answer.
func (r *Refills) RequestRefill(ctx context.Context, poolID, sessionID string) error {
	dedup := sessionID
	if dedup == "" {
		dedup = lifecycle.NewSessionID()
	}
	return r.queue.Send(ctx, sqskit.Message{Body: Message{PoolID: poolID, SessionID: sessionID},
		GroupID: poolID, DeduplicationID: poolID + "." + dedup},
		"send refill of pool "+poolID, "the pool refill queue did not take the request")
}

// Filler is what a refill runs: lifecycle.Service.FillPool.
type Filler interface {
	FillPool(ctx context.Context, poolID string) (lifecycle.PoolFillSummary, error)
}

// DeadlineMargin is how long before the invocation's deadline a refill is
// cut short, so the spares under way are dropped and killed (their making
// is not left to the sweep) before Lambda stops the process.
const DeadlineMargin = 15 * time.Second

// Handler is the sweep function's handler of refill messages. Build
// it with NewHandler.
type Handler struct {
	svc Filler
	log *slog.Logger
}

// NewHandler returns a Handler filling pools through svc; log may be nil.
func NewHandler(svc Filler, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{svc: svc, log: log}
}

// Handle fills each pool the batch names once, in the order of its first
// message, until DeadlineMargin before ctx's deadline. A body that is not
// a Message and a pool that is not configured (any more) are logged and
// dropped. Handle reports no failures: a refill that did not run or was
// cut short waits for the sweep's next run, which fills every pool.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx, cancel := sqskit.BeforeDeadline(ctx, DeadlineMargin)
	defer cancel()
	var pools []string
	seen := map[string]bool{}
	for _, rec := range ev.Records {
		var m Message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil || m.PoolID == "" {
			h.log.ErrorContext(ctx, "drop malformed pool refill request", "message_id", rec.MessageId, "err", err)
			continue
		}
		if !seen[m.PoolID] {
			seen[m.PoolID] = true
			pools = append(pools, m.PoolID)
		}
	}
	for _, id := range pools {
		if ctx.Err() != nil {
			h.log.WarnContext(ctx, "no time left to refill the pool; the sweep refills it on its next run", "pool_id", id)
			continue
		}
		sum, err := h.svc.FillPool(ctx, id)
		if err != nil {
			h.log.WarnContext(ctx, "drop pool refill request", "pool_id", id, "err", err)
			continue
		}
		h.log.InfoContext(ctx, "pool refilled", "pool_id", id, "made", sum.Made, "failed", sum.Failed,
			"retired", sum.Retired+sum.Dropped, "stopped", sum.Stopped > 0)
	}
	return events.SQSEventResponse{}, nil
}
