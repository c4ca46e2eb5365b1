// Package retry holds the retry loop the provider adapters (internal/provider/e2b,
// internal/provider/daytona, internal/provider/vercel) share: reading a Retry-After header,
// the jittered exponential backoff between attempts, and Do, which retries
// a call while a predicate allows. It imports only the standard library, so
// adapters use it without importing each other.
package retry

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxAfter bounds a Retry-After value that is believed: anything longer is
// treated as absent (0).
const maxAfter = 24 * time.Hour

// ParseAfter reads a Retry-After header value, delay-seconds or an HTTP date
// (RFC 9110 §10.2.3), relative to now. It returns 0 for a missing,
// malformed, past or longer-than-24-h value.
func ParseAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 || s > int64(maxAfter/time.Second) {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 && d <= maxAfter {
			return d
		}
	}
	return 0
}

// Backoff returns the wait before retry n (0-based): base doubled n times,
// capped at maxWait, jittered to between half and all of it, and at least
// retryAfter. It returns false when the retry should not happen: retryAfter
// exceeds maxWait, or the wait would outlast ctx's deadline.
func Backoff(ctx context.Context, n int, base, maxWait, retryAfter time.Duration) (time.Duration, bool) {
	if retryAfter > maxWait {
		return 0, false
	}
	d := maxWait
	if n < 32 {
		if b := base << n; b > 0 && b < d {
			d = b
		}
	}
	d = d/2 + rand.N(d/2+1)
	if retryAfter > d {
		d = retryAfter
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return 0, false
	}
	return d, true
}

// Policy says how Do retries. Retryable, Sleep and Log are required.
type Policy struct {
	// Name names the caller in the debug line logged before each retry:
	// "<Name> call failed, retrying".
	Name string
	// Retryable reports whether the failure err, after n retries (0 on the
	// first failure), may be retried. It may count kinds of failure itself
	// (Daytona retries 409s fewer times than transient failures).
	Retryable func(err error, n int) bool
	// After returns how long err asks the caller to wait (its Retry-After),
	// 0 for no hint; nil means no error carries one.
	After func(err error) time.Duration
	// Base and MaxWait are Backoff's: the first wait, doubled on each
	// retry, and the cap of one wait.
	Base, MaxWait time.Duration
	// Sleep waits d or until ctx ends, returning ctx's error then. Tests
	// pass one that does not wait.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives the debug line of each retry.
	Log *slog.Logger
	// Settle, when set, turns the error Do is about to return (the last
	// attempt's) into the one it returns, given the errors of the attempts
	// before it, oldest first: a caller withdraws there what the last error
	// claims and an earlier attempt contradicts (lifecycle.SettleRefused: a
	// 429 says "not applied", but a timed-out attempt before it may have
	// been). nil returns the last error as it is.
	Settle func(last error, earlier []error) error
}

// Do calls attempt until it succeeds or fails for good, and returns its
// last error (nil on success). A failure is retried when ctx is not done
// and pol.Retryable allows it, after the wait Backoff gives for the retry
// and the failure's Retry-After (pol.After); when Backoff says not to retry
// (a Retry-After beyond MaxWait, or a wait past ctx's deadline), or the wait
// is cut short by ctx, the last error is returned, its Retry-After intact
// for the caller. attrs (slog key-value pairs such as "op", "pause") are
// added to the debug line logged before each retry. Callers pass only
// idempotent operations.
func Do(ctx context.Context, pol Policy, attempt func(ctx context.Context) error, attrs ...any) error {
	var earlier []error
	settle := func(err error) error {
		if err == nil || pol.Settle == nil {
			return err
		}
		return pol.Settle(err, earlier)
	}
	for n := 0; ; n++ {
		err := attempt(ctx)
		if err == nil || ctx.Err() != nil || !pol.Retryable(err, n) {
			return settle(err)
		}
		var after time.Duration
		if pol.After != nil {
			after = pol.After(err)
		}
		wait, ok := Backoff(ctx, n, pol.Base, pol.MaxWait, after)
		if !ok {
			return settle(err)
		}
		pol.Log.DebugContext(ctx, pol.Name+" call failed, retrying", append(attrs, "attempt", n+1, "wait", wait, "err", err)...)
		if serr := pol.Sleep(ctx, wait); serr != nil {
			return settle(err)
		}
		earlier = append(earlier, err)
	}
}

// Limit reads a configured retry count: 0 means def, a negative value no
// retries (0), anything else itself.
func Limit(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}
