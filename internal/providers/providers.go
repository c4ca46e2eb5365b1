// Package providers is the provider wiring of the Lambda functions that call
// a sandbox provider: the factories app.New builds SANDMAN_PROVIDER's
// provider with, and the webhook function's handler. Only the functions that
// need a provider import it (functions/status links none of it); the local
// stack adds its local provider (internal/localstack).
package providers

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/e2b"
	"github.com/sandmanhq/sandman/internal/fakeprovider"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/webhook"
)

// Lambda returns the providers the Lambda functions know: e2b (production)
// and the in-memory fake, which the cold-start benchmark (internal/bench)
// runs the real function binaries on.
func Lambda() map[string]app.ProviderFactory {
	return map[string]app.ProviderFactory{
		app.ProviderE2B:  E2B,
		app.ProviderFake: Fake,
	}
}

// E2B builds the E2B provider from the configuration and the API key.
func E2B(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	prov, err := e2b.New(e2b.Config{APIKey: p.APIKey, BaseURL: p.Config.E2BBaseURL, Domain: p.Config.E2BDomain,
		Clock: p.Clock, Logger: p.Log})
	if err != nil {
		return nil, nil, err
	}
	return prov, nil, nil
}

// Fake builds the in-memory fake provider: sandboxes live only in this
// process.
func Fake(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	p.Log.Warn("using the in-memory fake provider: sandboxes live only in this process")
	return fakeprovider.New(fakeprovider.WithClock(p.Clock)), nil, nil
}

// WebhookHandler returns the webhook function's handler: E2B-format
// deliveries on /v1/webhooks/e2b, verified with the webhook secret and
// stamped with this deployment's provider name (the local provider sends
// E2B-format webhooks too). a must be loaded with app.Needs.WebhookSecret.
func WebhookHandler(a *app.App) (*webhook.Handler, error) {
	format, err := webhook.NewE2B(a.Provider.Name(), a.WebhookSecret)
	if err != nil {
		return nil, err
	}
	return webhook.New(a.Service, []webhook.Format{format},
		webhook.WithLogger(a.Log), webhook.WithAllowOrigin(a.Config.CORSOrigin))
}
