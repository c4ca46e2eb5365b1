// Command publisher is the Lambda function DynamoDB Streams invokes with the
// sessions table's changes: it puts one EventBridge event per committed
// transition on the bus SANDMAN_EVENT_BUS (internal/outbox, docs/DESIGN.md
// "Events out") and reports the records it could not publish as batch item
// failures. Before publishing it records each transition's usage counters
// and keeps it among its session's recent events in the table
// (outbox.Recording; docs/DESIGN.md "Operators"). It reads no secret. It counts
// the events it puts (EventsPublished, internal/metrics) on stdout.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Publisher, Needs: app.Needs{}},
		func(ctx context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			if a.Config.EventBus == "" {
				return nil, fmt.Errorf("%s is required: the event bus the publisher puts events on", app.EnvEventBus)
			}
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("load aws config: %w", err)
			}
			pub := eventbridge.New(eventbridge.Config{Client: awseb.NewFromConfig(cfg), Bus: a.Config.EventBus, Log: a.Log})
			return metrics.Handler(m, outbox.NewHandler(outbox.Recording(a.Store, m.Publisher(pub)), a.Log).Handle), nil
		})
}
