// Command notifier is the Lambda function an EventBridge rule on the
// stack's bus invokes with every lifecycle event: it pushes the session's
// current status to each of its WebSocket connections through the API
// Gateway Management API, deleting the ones that are gone
// (channel.Notifier.HandleEvent says why a rule and not the stream). It
// reads the table and calls no provider; it holds no secret.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/channel/apigwmgmt"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Notifier, Needs: app.Needs{}},
		func(ctx context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			push, err := apigwmgmt.Load(ctx, a.Config.WSManagementURL)
			if err != nil {
				return nil, err
			}
			h, err := channel.NewNotifier(a.Service, a.Store, m.CountPushes(push), a.Log)
			if err != nil {
				return nil, err
			}
			// An asynchronous invocation's result is discarded; only the error counts.
			return metrics.Handler(m, func(ctx context.Context, ev events.CloudWatchEvent) (struct{}, error) {
				return struct{}{}, h.HandleEvent(ctx, ev)
			}), nil
		})
}
