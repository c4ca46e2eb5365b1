// Command timer is the Lambda function fed by the timer queue (SQS, docs/DESIGN.md
// "Precise pausing"): each message fires one pause timer through
// lifecycle.Service.FireTimer, which pauses the session only if it is still
// due and re-arms it when its deadline moved (internal/timer/sqstimer). The event
// source mapping's maximum concurrency bounds the provider's rate.
package main

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Timer, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()},
		func(_ context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			return metrics.Handler(m, sqstimer.NewHandler(a.Service, a.Log).Handle), nil
		})
}
