// Command checkpoint is the Lambda function fed by the checkpoint queue
// (SQS, docs/CHECKPOINTS.md "Jobs"): each message is one checkpoint job,
// lifecycle.Service.RunCheckpointJob, which saves a session's checkpoint
// (the provider's snapshot, or an archive of its workspace streamed to the
// archive bucket), restores a session from one in place, forks a new
// session from one, or deletes one (internal/checkpoint/sqscheckpoint). It
// calls the provider and is the function that reads and writes the
// archive bucket (SANDMAN_ARCHIVE_BUCKET). The event source mapping's
// maximum concurrency bounds how many jobs run at once.
package main

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/checkpoint/sqscheckpoint"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Checkpoint, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()},
		func(_ context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			return metrics.Handler(m, sqscheckpoint.NewHandler(a.Service, a.Log).Handle), nil
		})
}
