package provhttp

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// Retrier retries an adapter's idempotent calls (retry.Do) as every adapter
// does: after a jittered exponential backoff (Base, MaxWait) that honours
// the failure's lifecycle.RetryAfter, withdrawing a 429's "not applied"
// when an earlier attempt may have been (lifecycle.SettleRefused). Its
// fields are the adapter's Config's.
type Retrier struct {
	// Name names the adapter in the debug line of each retry: "e2b".
	Name string
	// MaxRetries is how many transient failures are retried (Transient).
	MaxRetries int
	// Base and MaxWait are the first backoff, doubled on each retry, and
	// the cap of one wait; a longer Retry-After ends the retries.
	Base, MaxWait time.Duration
	// Sleep waits between attempts (tests pass one that does not).
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives the debug line of each retry.
	Log *slog.Logger
}

// Do runs attempt on sandboxID ("" for create and list) for operation op
// until it succeeds, fails for good, or the retries run out, and returns
// the last error. retryable says whether a failure, after n retries, may be
// retried; nil retries transient failures (lifecycle.ErrProviderTransient)
// up to MaxRetries times. Callers pass only idempotent operations.
func (r Retrier) Do(ctx context.Context, op, sandboxID string, retryable func(err error, n int) bool, attempt func(ctx context.Context) error) error {
	if retryable == nil {
		retryable = func(err error, n int) bool {
			return errors.Is(err, lifecycle.ErrProviderTransient) && n < r.MaxRetries
		}
	}
	return retry.Do(ctx, retry.Policy{Name: r.Name, Settle: lifecycle.SettleRefused, After: lifecycle.RetryAfter,
		Retryable: retryable, Base: r.Base, MaxWait: r.MaxWait, Sleep: r.Sleep, Log: r.Log,
	}, attempt, "op", op, "sandbox_id", sandboxID)
}
