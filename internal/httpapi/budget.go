package httpapi

import (
	"context"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultRequestTimeout bounds one request of an HTTP function when its
// handler's Config.RequestTimeout is zero: 29 s, just under API Gateway's 30 s integration timeout, so a slow
// provider answers 503 rather than the gateway's bare 503.
const DefaultRequestTimeout = 29 * time.Second

// settleReserve is the time a request leaves before its Lambda deadline for
// the work that records a provider call's outcome after the request's own
// budget ran out (lifecycle.SettleReserve).
const settleReserve = lifecycle.SettleReserve

// RequestBudget returns how long a request may run: limit, cut so that
// settleReserve (or, with less than twice that left, half of what is left)
// remains before ctx's deadline, the Lambda's. Without it a slow provider
// would use the whole Lambda and the outcome writes, the claim release and
// the 503 answer would be killed with the function.
func RequestBudget(ctx context.Context, limit time.Duration) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return limit
	}
	left := time.Until(dl)
	reserve := settleReserve
	if left < 2*settleReserve {
		reserve = left / 2
	}
	return max(min(limit, left-reserve), 0)
}
