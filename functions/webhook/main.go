// Command webhook is the Lambda function behind POST /v1/webhooks/{provider}
// (internal/routes, API Gateway HTTP API, payload 2.0): signed provider
// lifecycle events, verified and applied by internal/webhook. It needs the
// webhook signing secret (SANDMAN_WEBHOOK_SECRET locally, a Secrets Manager
// secret in AWS; see internal/app) and no provider credentials. E2B-format
// events are stamped with the configured provider's name (SANDMAN_PROVIDER:
// "e2b" in AWS, "local" for the local process provider).
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
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Webhook})
	a, err := app.Load(context.Background(), app.Needs{WebhookSecret: true}, app.Deps{Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.Webhook, "err", err)
		os.Exit(1)
	}
	h, err := provider.WebhookHandler(a)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Webhook, "err", err)
		os.Exit(1)
	}
	lambda.Start(metrics.Handler(m, h.Handle))
}
