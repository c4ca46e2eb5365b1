package lifecycle

import "time"

// ProviderEventType is the kind of a provider lifecycle webhook, after
// provider-specific parsing (E2B's sandbox.lifecycle.* types map one to one).
type ProviderEventType string

// The provider event types.
const (
	ProviderEventCreated ProviderEventType = "created"
	ProviderEventPaused  ProviderEventType = "paused"
	ProviderEventResumed ProviderEventType = "resumed"
	ProviderEventUpdated ProviderEventType = "updated"
	ProviderEventKilled  ProviderEventType = "killed"
)

// ProviderEvent is one verified, parsed provider webhook delivery.
type ProviderEvent struct {
	ID        string // the provider's event id, the dedupe key
	Provider  string // e.g. "e2b"
	Type      ProviderEventType
	SandboxID string
	Timestamp time.Time // when the provider says it happened (UTC)
	// Timeout is the provider-side timeout an "updated" event reports, or 0.
	Timeout time.Duration
	// KillReason is E2B's kill_reason on "killed" (request, timeout, admin,
	// orphaned, resume_failed, unknown), or "".
	KillReason string
}
