// Command deliver is the Lambda function fed by the webhook delivery queue
// (SQS, docs/WEBHOOKS.md "In AWS"): lifecycle events from the bus become
// deliveries to the accounts' endpoints, and each job message runs one
// signed attempt; a retry is a delayed message, never a sleep
// (internal/delivery/sqsqueue). Exhausted deliveries are copied to the
// dead-letter queue. It reads and writes the table and calls no provider.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	ctx := context.Background()
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Deliver})
	a, err := app.Load(ctx, app.Needs{}, app.Deps{Metrics: m})
	if err != nil {
		slog.Error("cold start failed", "function", routes.Deliver, "err", err)
		os.Exit(1)
	}
	if a.Config.WebhookQueueURL == "" || a.Config.WebhookDLQURL == "" {
		a.Log.Error("cold start failed: SANDMAN_WEBHOOK_QUEUE_URL and SANDMAN_WEBHOOK_DLQ_URL are required", "function", routes.Deliver)
		os.Exit(1)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Deliver, "err", err)
		os.Exit(1)
	}
	engine, err := a.WebhookEngine(nil, sqsqueue.DeadLetter(sqs.NewFromConfig(awsCfg), a.Config.WebhookDLQURL))
	if err != nil {
		a.Log.Error("cold start failed", "function", routes.Deliver, "err", err)
		os.Exit(1)
	}
	lambda.Start(metrics.Handler(m, sqsqueue.NewHandler(engine, a.Log).Handle))
}
