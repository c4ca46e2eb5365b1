//go:build linux

package local

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/providertest"
)

// TestConformance runs the provider conformance suite against the local
// provider with real sandbox processes. The local provider has no network
// to inject faults into and refuses a timeout above its maximum rather than
// capping it, so those rows are logged as not applicable.
func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env {
		clock := lifecycle.NewManualClock(t0)
		p := MustProvider(tb, Config{Clock: clock})
		return providertest.Env{
			Provider: p,
			Template: TemplateBase,
			App:      func() lifecycle.Command { return appCommand(tb) },
			Now:      clock.Now,
			Advance: func(d time.Duration) {
				clock.Advance(d)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := p.Tick(ctx); err != nil {
					tb.Errorf("Tick: %v", err)
				}
			},
			Inject: p.Inject,
		}
	}})
}
