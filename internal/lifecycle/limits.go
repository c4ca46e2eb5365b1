package lifecycle

import "time"

// Limits that more than one package applies; each is defined here once.
const (
	// MaxListLimit is the largest page Service.List and Store.ListSessions
	// return (docs/DESIGN.md GET /v1/sessions: limit 1..100).
	MaxListLimit = 100
	// DefaultListLimit is the page size of GET /v1/sessions without a limit
	// (ours).
	DefaultListLimit = 20
	// MaxEventPage is the largest page of a session's events
	// (Service.SessionEvents, GET /v1/sessions/{id}/events: limit 1..100);
	// DefaultEventPage the page without a limit (ours).
	MaxEventPage     = 100
	DefaultEventPage = 20
	// MaxDuePageSize is the largest page Store.FindDue returns (ours: well
	// under DynamoDB's 1 MB query page at about 1 KB a session).
	MaxDuePageSize = 1000

	// SettleTimeout bounds the write that records a provider call's outcome
	// (settleContext): it runs even when the caller's context is done.
	SettleTimeout = 10 * time.Second
	// SettleReserve is what a request leaves before its Lambda deadline for
	// the settle writes, the claim release and the answer after its own
	// budget ran out (httpapi.RequestBudget): SettleTimeout plus 2 s to answer.
	SettleReserve = SettleTimeout + 2*time.Second
)

// The lease bound: a transitional state's lease must outlast the longest
// operation that holds it, or the sweep reconciles an operation still in
// flight (a create still provisioning is marked failed, and its retry then
// answers 409 for a fresh Idempotency-Key). docs/DESIGN.md "Session states".
const (
	// MaxRequestDuration is the longest an API request runs: API Gateway's
	// 29 s integration timeout, which the HTTP functions' Lambda timeout
	// matches (infra).
	MaxRequestDuration = 29 * time.Second
	// LeaseMargin is what a lease keeps beyond the longest operation: clock
	// skew between functions and the answer after the last write.
	LeaseMargin = 10 * time.Second
)

// MinLeaseDuration returns the shortest Policy.LeaseDuration that outlasts
// every operation holding a lease, with callTimeout the provider call
// bound (Config.CallTimeout; 0: DefaultCallTimeout): the longer of a whole
// API request and a sweep's provider call plus its settle write, plus
// LeaseMargin. With the defaults: 30 s + 10 s + 10 s = 50 s.
func MinLeaseDuration(callTimeout time.Duration) time.Duration {
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	return max(MaxRequestDuration, callTimeout+SettleTimeout) + LeaseMargin
}
