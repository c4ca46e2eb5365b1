package providertest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/providertest"
)

// TestFakeProvider runs the suite against the in-memory fake provider the
// service tests use, so the suite itself is exercised with every hook a
// fake can offer except WakeRequests and RunLengthCap.
func TestFakeProvider(t *testing.T) {
	ops := map[providertest.Op]fake.Op{
		providertest.OpCreate: fake.OpCreate, providertest.OpGet: fake.OpGet,
		providertest.OpList: fake.OpList, providertest.OpPause: fake.OpPause,
		providertest.OpResume: fake.OpResume, providertest.OpSetTimeout: fake.OpSetTimeout,
		providertest.OpKill: fake.OpKill,
	}
	providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env {
		clock := lifecycle.NewManualClock(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
		p := fake.New(fake.Config{Clock: clock})
		return providertest.Env{
			Provider: p,
			Template: "base",
			Now:      clock.Now,
			Advance:  func(d time.Duration) { clock.Advance(d) },
			Preview:  &http.Client{Transport: p.Preview()},
			Fail: func(op providertest.Op, retryAfter time.Duration) func() {
				p.SetFault(ops[op], fake.Fault{Rate: 1, RetryAfter: retryAfter})
				return func() { p.SetFault(ops[op], fake.Fault{}) }
			},
		}
	}})
}
