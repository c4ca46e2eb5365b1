// Command sweep is the Lambda function the EventBridge schedule
// (routes.ScheduleExpression) invokes: one idle sweep per scheduled event
// (internal/sweep). The pool refill queue feeds it too: each batch of
// refill requests fills the pools it names (internal/sweep/sqsrefill). Configuration comes from the environment once per cold
// start (internal/app for the service, sweep.ConfigFromEnv for the sweep).
package main

import (
	"context"
	"os"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/sweep"
	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Sweep, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()},
		func(_ context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			cfg, err := sweep.ConfigFromEnv(os.Getenv)
			if err != nil {
				return nil, err
			}
			// Connections that lost their socket without a $disconnect stop
			// counting as present clients (docs/DESIGN.md "Client channel").
			if cfg.Conns, err = channel.NewReaper(a.Service, a.Store, a.Log); err != nil {
				return nil, err
			}
			h := sweep.NewHandler(sweep.New(a.Service, cfg, a.Log), a.Log)
			// The pool refill queue's requests: a claim's pool refilled at
			// once (docs/POOLS.md "Refill").
			h.Refills = sqsrefill.NewHandler(a.Service, a.Log)
			return metrics.Handler(m, h.Invoke), nil
		})
}
