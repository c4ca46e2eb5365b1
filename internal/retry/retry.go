// Package retry holds the retry timing the provider adapters (internal/e2b,
// internal/daytona, internal/vercel) share: reading a Retry-After header and
// the jittered exponential backoff between attempts. It imports only the
// standard library, so adapters use it without importing each other.
package retry

import (
	"context"
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
