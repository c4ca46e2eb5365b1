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
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	var level slog.Level
	if v := os.Getenv(app.EnvLogLevel); v != "" {
		_ = level.UnmarshalText([]byte(v)) // an unknown level keeps info
	}
	log := app.NewLogger(os.Stderr, level)
	bus, table := os.Getenv(app.EnvEventBus), os.Getenv(app.EnvTable)
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil || bus == "" || table == "" {
		log.Error("cold start failed", "function", routes.Publisher, "bus", bus, "table", table, "err", err)
		os.Exit(1)
	}
	ddb, err := dynamo.NewClient(ctx, os.Getenv(app.EnvDynamoEndpoint))
	if err != nil {
		log.Error("cold start failed", "function", routes.Publisher, "err", err)
		os.Exit(1)
	}
	pub := eventbridge.New(eventbridge.Config{Client: awseb.NewFromConfig(cfg), Bus: bus, Log: log})
	m := metrics.New(metrics.Config{Writer: os.Stdout, Function: routes.Publisher, Log: log})
	usage := dynamo.New(dynamo.Config{Client: ddb, Table: table, Log: log})
	lambda.Start(metrics.Handler(m, outbox.NewHandler(outbox.Recording(usage, m.Publisher(pub)), log).Handle))
}
