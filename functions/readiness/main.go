// Command readiness is the Lambda function fed by the readiness queue (SQS,
// docs/READINESS.md "Where it runs"): each message is one readiness job,
// lifecycle.Service.BringUp, which starts the session's app command unless
// it already runs, probes the preview and records ready or failed
// (internal/readiness/sqsjobs). The resume queue feeds it too: a message of
// kind resume is lifecycle.Service.FinishResume, the resume an open or a
// return handed off. Each event source mapping's maximum concurrency bounds
// how many of its jobs run at once; a readiness job still waiting near the
// invocation's deadline continues in a new message.
package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/readiness/sqsjobs"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Readiness, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()},
		func(ctx context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			var requeue lifecycle.ReadinessJobs // nil without a queue
			if url := a.Config.ReadinessQueueURL; url != "" {
				c, err := config.LoadDefaultConfig(ctx)
				if err != nil {
					return nil, fmt.Errorf("load aws config: %w", err)
				}
				requeue = sqsjobs.New(sqs.NewFromConfig(c), url)
			}
			return metrics.Handler(m, sqsjobs.NewHandler(a.Service, requeue, a.Log).Handle), nil
		})
}
