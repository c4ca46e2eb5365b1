// Command pauser is the Lambda function fed by the timer queue (SQS, docs/DESIGN.md
// "Precise pausing"): each message fires one pause timer through
// lifecycle.Service.FireTimer, which pauses the session only if it is still
// due and re-arms it when its deadline moved (internal/timer/sqstimer). The event
// source mapping's maximum concurrency bounds the provider's rate.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

func main() {
	ctx := context.Background()
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Pauser})
	a, err := app.Load(ctx, app.Needs{Provider: true}, app.Deps{Providers: provider.Lambda(), Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.Pauser, "err", err)
		os.Exit(1)
	}
	lambda.Start(metrics.Handler(m, sqstimer.NewHandler(a.Service, a.Log).Handle))
}
