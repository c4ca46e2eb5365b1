package vercel_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/providertest"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// TestConformance runs the provider conformance suite against the fake
// Vercel Sandbox, on its manual clock; started commands listen after 3 s.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env {
		fake := verceltest.MustStart(tb, verceltest.Config{BootDelay: 3 * time.Second})
		return providertest.Env{
			Provider: fake.MustProvider(tb, nil),
			Template: "base",
			Now:      fake.Clock.Now,
			Advance:  func(d time.Duration) { fake.Clock.Advance(d) },
			// The next request, whatever it is, answers 429 with the
			// Retry-After; it is longer than the adapter's retry window,
			// so the call fails at once and the fault is used up.
			Fail: func(_ providertest.Op, retryAfter time.Duration) func() {
				fake.FailNext(verceltest.Fault{Status: 429, RetryAfter: strconv.Itoa(int(retryAfter / time.Second))})
				return func() {}
			},
			WakeRequests: fake.Boots,
			BootDelay:    3 * time.Second,
			Inject:       fake.Inject,
		}
	}})
}
