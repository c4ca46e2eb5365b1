// Command sessions is the Lambda function behind the sessions routes of
// internal/routes (API Gateway HTTP API, payload 2.0): create, list, get, heartbeat and delete sessions.
// Configuration comes from the environment once per cold start (internal/app).
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
)

func main() {
	ctx := context.Background()
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Sessions})
	a, err := app.Load(ctx, app.Needs{Provider: true}, app.Deps{Providers: provider.Lambda(), Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.Sessions, "err", err)
		os.Exit(1)
	}
	h, err := a.HTTPHandler(routes.Sessions)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Sessions, "err", err)
		os.Exit(1)
	}
	lambda.Start(metrics.Handler(m, h.Handle))
}
