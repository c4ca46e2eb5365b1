package lifecycle

import (
	"context"
	"time"
)

// MaxProviderClockSkew is how far ahead of Sandman's clock a provider
// event's timestamp may be (ours: 5 min, well above real clock
// skew between NTP-synchronised hosts).
const MaxProviderClockSkew = 5 * time.Minute

// clampEventTime returns ev with its timestamp clamped to now when it lies
// more than MaxProviderClockSkew ahead of now. Events are ordered by their
// timestamp (docs/DESIGN.md "Webhooks"); one dated far in the future, even
// signed, would otherwise make every real event after it stale. A clamped
// event is still applied as of now: what it reports is as true as any other
// event, only its date is not.
func (s *Service) clampEventTime(ctx context.Context, ev ProviderEvent) ProviderEvent {
	now := s.now()
	if ev.Timestamp.After(now.Add(MaxProviderClockSkew)) {
		s.log().WarnContext(ctx, "provider event dated in the future; clamped to now",
			"event_id", ev.ID, "sandbox_id", ev.SandboxID, "timestamp", ev.Timestamp, "now", now)
		ev.Timestamp = now
	}
	return ev
}
