// Package provider is the provider wiring of the Lambda functions that call
// a sandbox provider: Lambda, the one list of the adapters a deployment can
// run (each declared in its own package's register.go), and the webhook
// function's handler. Only the functions that need a provider import it
// (functions/status links none of it); the local stack adds the local
// provider and the fake (internal/localstack.Adapters).
package provider

import (
	"fmt"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/webhook"
)

// Lambda returns the adapters the Lambda functions link and a deployment
// may run: adding a provider to Sandman is adding it here
// (docs/DEVELOPMENT.md "Adding a provider"). The in-memory fake and the
// local provider are not among them, so no production function links them.
func Lambda() registry.Set {
	return registry.Set{e2b.Adapter, daytona.Adapter, vercel.Adapter}
}

// WebhookHandler returns the webhook function's handler: one route per
// webhook format of the enabled providers (registry.Adapter.Webhook), in
// app.Config.Providers order. Providers sharing a format (E2B, the local
// provider and the fake send E2B-format webhooks) share its route, and its
// events are stamped with the first of them; Daytona's Svix-signed
// deliveries have their timestamps checked on the service's clock. A
// provider that sends none (Vercel) has no route; when no enabled provider
// sends webhooks, every request answers 404. a must be loaded with
// app.Needs.WebhookSecret and the adapters. Errors: a secret is unusable, a
// format internal/webhook does not know.
func WebhookHandler(a *app.App) (*webhook.Handler, error) {
	var formats []webhook.Format
	seen := map[string]bool{}
	for _, name := range a.Config.Providers {
		ad, ok := a.Adapters.Find(name)
		if !ok || ad.Webhook == nil || seen[ad.Webhook.Format] {
			continue
		}
		seen[ad.Webhook.Format] = true
		var (
			format webhook.Format
			err    error
		)
		switch secret := a.WebhookSecrets[name]; ad.Webhook.Format {
		case webhook.E2BName:
			format, err = webhook.NewE2B(name, secret)
		case webhook.DaytonaName:
			format, err = webhook.NewDaytona(a.Service.Config().Clock, secret)
		default:
			err = fmt.Errorf("provider %s: no webhook format %q in internal/webhook", name, ad.Webhook.Format)
		}
		if err != nil {
			return nil, err
		}
		formats = append(formats, format)
	}
	return webhook.New(webhook.Config{Applier: a.Service, Formats: formats, Log: a.Log, AllowOrigin: a.Config.CORSOrigin})
}
