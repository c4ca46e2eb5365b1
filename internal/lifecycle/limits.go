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
	// MaxDuePageSize is the largest page Store.FindDue returns (ours: well
	// under DynamoDB's 1 MB query page at about 1 KB a session).
	MaxDuePageSize = 1000

	// SettleTimeout bounds the write that records a provider call's outcome
	// (settleContext): it runs even when the caller's context is done.
	SettleTimeout = 10 * time.Second
	// SettleReserve is what a request leaves before its Lambda deadline for
	// the settle writes, the claim release and the answer after its own
	// budget ran out (apigw.RequestBudget): SettleTimeout plus 2 s to answer.
	SettleReserve = SettleTimeout + 2*time.Second
)
