// Command webhook is the Lambda function behind POST /v1/webhooks/{provider}
// (internal/routes, API Gateway HTTP API, payload 2.0): signed provider
// lifecycle events, verified and applied by internal/providerhook. It needs the
// webhook signing secret (SANDMAN_WEBHOOK_SECRET locally, a Secrets Manager
// secret in AWS; see internal/app) and no provider credentials. E2B-format
// events are stamped with the configured provider's name (SANDMAN_PROVIDER:
// "e2b" in AWS, "local" for the local process provider).
package main

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/providerhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Webhook, Needs: app.Needs{WebhookSecret: true}, Adapters: provider.Lambda()},
		func(_ context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			formats, err := providerhook.Formats(a.Config.Providers, a.Adapters, a.WebhookSecrets, a.Service.Config().Clock)
			if err != nil {
				return nil, err
			}
			h, err := providerhook.New(providerhook.Config{Applier: a.Service, Formats: formats, Log: a.Log, AllowOrigin: a.Config.CORSOrigin})
			if err != nil {
				return nil, err
			}
			return metrics.Handler(m, h.Handle), nil
		})
}
