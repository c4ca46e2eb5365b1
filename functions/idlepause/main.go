// Command idlepause is the Lambda function the EventBridge schedule
// (routes.ScheduleExpression) invokes: one idle sweep per scheduled event
// (internal/sweep). Configuration comes from the environment once per cold
// start (internal/app for the service, sweep.ConfigFromEnv for the sweep).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/sweep"
)

func main() {
	ctx := context.Background()
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.IdlePause})
	a, err := app.Load(ctx, app.Needs{Provider: true}, app.Deps{Providers: provider.Lambda(), Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.IdlePause, "err", err)
		os.Exit(1)
	}
	cfg, err := sweep.ConfigFromEnv(os.Getenv)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.IdlePause, "err", err)
		os.Exit(1)
	}
	// Connections that lost their socket without a $disconnect stop
	// counting as present clients (docs/DESIGN.md "Client channel").
	if cfg.Conns, err = channel.NewReaper(a.Service, a.Store, a.Log); err != nil {
		a.Log.Error("cold start failed", "function", routes.IdlePause, "err", err)
		os.Exit(1)
	}
	h := sweep.NewHandler(sweep.New(a.Service, cfg, a.Log), a.Log)
	lambda.Start(metrics.Handler(m, h.Handle))
}
