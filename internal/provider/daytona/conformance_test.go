package daytona_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/providertest"
)

// TestConformance runs the provider conformance suite against the fake
// Daytona, on a manual clock the adapter's waits advance (and the suite's
// Advance: a snapshot's capture takes 3 s, a fork 2 s). Its sandboxes are
// linux-vm, the class that forks; the adapter pauses with stop all the
// same (PauseStop).
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env {
		clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		srv, hs := daytonatest.Start(tb, daytonatest.Config{Clock: clock, BootDelay: 2 * time.Second, Class: "linux-vm",
			SnapshotTime: 3 * time.Second, ForkTime: 2 * time.Second})
		p, err := daytona.New(srv.ProviderConfig(hs.URL))
		if err != nil {
			tb.Fatal(err)
		}
		return providertest.Env{
			Provider: p,
			Template: "base",
			Now:      clock.Now,
			Advance:  func(d time.Duration) { clock.Advance(d) },
			Fail: func(_ providertest.Op, retryAfter time.Duration) func() {
				return srv.FailUntil(daytonatest.OpAny, daytonatest.Fault{Status: 429, RetryAfter: int(retryAfter / time.Second)})
			},
			WakeRequests: func() int { return srv.Wakes("") },
			Preview:      &http.Client{Transport: srv.Preview()},
			BootDelay:    2 * time.Second,
			Inject:       srv.Inject,
		}
	}})
}
