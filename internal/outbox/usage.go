package outbox

import (
	"context"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Recording returns a Publisher that first records every event in usage
// (lifecycle.UsageStore.RecordTransition: the account's and session's usage
// counters and the session's recent events, docs/DESIGN.md "Operators"), in the
// order given, and then publishes the events through pub. Both the
// publisher function and the local poller publish through it, so usage is
// kept from the stream and never from a request. An event that cannot be
// recorded fails the whole call, so its stream record is delivered again;
// recording is idempotent per session version, so the events recorded
// before it are skipped on that redelivery.
func Recording(usage lifecycle.UsageStore, pub lifecycle.Publisher) lifecycle.Publisher {
	return lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		for _, ev := range evs {
			if err := usage.RecordTransition(ctx, ev); err != nil {
				return err
			}
		}
		return pub.Publish(ctx, evs...)
	})
}
