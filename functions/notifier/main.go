// Command notifier is the Lambda function an EventBridge rule on the
// stack's bus invokes with every lifecycle event: it pushes the session's
// current status to each of its WebSocket connections through the API
// Gateway Management API, deleting the ones that are gone
// (channel.Notifier.HandleEvent says why a rule and not the stream). It
// reads the table and calls no provider; it holds no secret.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/channel/apigwmgmt"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	ctx := context.Background()
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Notifier})
	a, err := app.Load(ctx, app.Needs{}, app.Deps{Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.Notifier, "err", err)
		os.Exit(1)
	}
	push, err := apigwmgmt.Load(ctx, a.Config.WSManagementURL)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Notifier, "err", err)
		os.Exit(1)
	}
	h, err := channel.NewNotifier(a.Service, a.Store, m.CountPushes(push), a.Log)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Notifier, "err", err)
		os.Exit(1)
	}
	// An asynchronous invocation's result is discarded; only the error counts.
	lambda.Start(metrics.Handler(m, func(ctx context.Context, ev events.CloudWatchEvent) (struct{}, error) {
		return struct{}{}, h.HandleEvent(ctx, ev)
	}))
}
