package channel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// HandleEvent is the AWS notifier function's handler (functions/notifier):
// an EventBridge rule on the stack's bus hands it each lifecycle event
// (source lifecycle.EventSource, detail a lifecycle.Event as
// internal/outbox/eventbridge puts it) and it pushes the session's current status
// to every connection of that session (Notify).
//
// Why a rule on the bus and not the publisher or a second stream consumer
// (docs/DESIGN.md "Events out" is the outbox; docs/DESIGN.md is silent on this): the
// publisher's delivery never waits on, nor fails with, a push; the table's
// stream keeps its second reader slot (Lambda recommends at most two
// consumers per DynamoDB stream shard); and a failed push is retried by
// Lambda's asynchronous invocation on its own (two retries, then the
// stack's on-failure queue) instead of holding back the stream shard's
// later records. Delivery stays at least once end to end: the stream
// yields every transition to the publisher at least once, EventBridge
// delivers every event to the rule's target at least once. Order does not
// matter: every push carries the status read from the table at push time,
// so a late or repeated event pushes the current state again, never an old
// one.
//
// Errors: a detail that is not a lifecycle event is logged and dropped (a
// retry cannot fix it); a failed read or push is returned, so Lambda
// retries the event.
func (h *Notifier) HandleEvent(ctx context.Context, ev events.CloudWatchEvent) error {
	if ev.Source != lifecycle.EventSource {
		h.log.WarnContext(ctx, "notifier: event from another source ignored", "source", ev.Source, "detail_type", ev.DetailType)
		return nil
	}
	var le lifecycle.Event
	if err := json.Unmarshal(ev.Detail, &le); err != nil || le.SessionID == "" || le.AccountID == "" {
		h.log.ErrorContext(ctx, "notifier: detail is not a lifecycle event", "event_id", ev.ID, "detail_type", ev.DetailType, "err", err)
		return nil
	}
	if err := h.Notify(ctx, le); err != nil {
		if lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			return nil // the session is gone: nobody to tell
		}
		return fmt.Errorf("notify session %s (event %s): %w", le.SessionID, le.EventID, err)
	}
	return nil
}
