// Command deliver is the Lambda function fed by the webhook delivery queue
// (SQS, docs/WEBHOOKS.md "How it runs"): lifecycle events from the bus become
// deliveries to the accounts' endpoints, and each job message runs one
// signed attempt; a retry is a delayed message, never a sleep
// (internal/delivery/sqsqueue). Exhausted deliveries are copied to the
// dead-letter queue. It reads and writes the table and calls no provider.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Deliver, Needs: app.Needs{}},
		func(ctx context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			if a.Config.WebhookQueueURL == "" || a.Config.WebhookDLQURL == "" {
				return nil, fmt.Errorf("%s and %s are required", app.EnvWebhookQueueURL, app.EnvWebhookDLQURL)
			}
			awsCfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("load aws config: %w", err)
			}
			engine, err := a.WebhookEngine(nil, sqsqueue.DeadLetter(sqs.NewFromConfig(awsCfg), a.Config.WebhookDLQURL))
			if err != nil {
				return nil, err
			}
			return metrics.Handler(m, sqsqueue.NewHandler(engine, a.Log).Handle), nil
		})
}
