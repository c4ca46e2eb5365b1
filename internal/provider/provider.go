// Package providers is the provider wiring of the Lambda functions that call
// a sandbox provider: the factories app.New builds SANDMAN_PROVIDER's
// provider with, and the webhook function's handler. Only the functions that
// need a provider import it (functions/status links none of it); the local
// stack adds its local provider (internal/localstack).
package provider

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/webhook"
)

// Lambda returns the providers the Lambda functions know: e2b, daytona and
// vercel (app.LambdaProviders). The in-memory fake and the local provider
// are not among them, so no production function links them; the local
// stack adds both (internal/localstack).
func Lambda() map[string]app.ProviderFactory {
	return map[string]app.ProviderFactory{
		app.ProviderE2B:     E2B,
		app.ProviderDaytona: Daytona,
		app.ProviderVercel:  Vercel,
	}
}

// Daytona builds the Daytona provider from the configuration (SANDMAN_DAYTONA_*)
// and the API key.
func Daytona(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	c := p.Config
	prov, err := daytona.New(daytona.Config{BaseURL: c.DaytonaBaseURL, APIKey: p.APIKey,
		OrganizationID: c.DaytonaOrganizationID, Target: c.DaytonaTarget, PauseMode: c.DaytonaPauseMode,
		AutoArchive: c.DaytonaAutoArchive, AutoDelete: c.DaytonaAutoDelete, Clock: p.Clock, Logger: p.Log})
	if err != nil {
		return nil, nil, err
	}
	return prov, nil, nil
}

// Vercel builds the Vercel Sandbox provider from the configuration
// (SANDMAN_VERCEL_*) and the token.
func Vercel(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	c := p.Config
	prov, err := vercel.New(vercel.Config{BaseURL: c.VercelBaseURL, Token: p.APIKey, TeamID: c.VercelTeamID,
		ProjectID: c.VercelProjectID, MaxSessionTimeout: c.VercelMaxSessionTimeout, Clock: p.Clock, Logger: p.Log})
	if err != nil {
		return nil, nil, err
	}
	return prov, nil, nil
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

// WebhookHandler returns the webhook function's handler: E2B-format
// deliveries on /v1/webhooks/e2b when e2b, local or fake is enabled,
// verified with the webhook secret and stamped with the first of those in
// app.Config.Providers (the local provider and the fake send E2B-format
// webhooks too), and Daytona's Svix-signed deliveries on
// /v1/webhooks/daytona when daytona is enabled, their timestamps checked on
// the service's clock. Vercel sends none. a must be loaded with
// app.Needs.WebhookSecret. When no enabled provider sends webhooks (Vercel
// only), every request answers 404. Errors: a secret is unusable.
func WebhookHandler(a *app.App) (*webhook.Handler, error) {
	var formats []webhook.Format
	for _, name := range a.Config.Providers {
		if name == app.ProviderE2B || name == app.ProviderLocal || name == app.ProviderFake {
			format, err := webhook.NewE2B(name, a.WebhookSecret)
			if err != nil {
				return nil, err
			}
			formats = append(formats, format)
			break
		}
	}
	if a.Config.Enabled(app.ProviderDaytona) {
		format, err := webhook.NewDaytona(a.Service.Config().Clock, a.DaytonaWebhookSecret)
		if err != nil {
			return nil, err
		}
		formats = append(formats, format)
	}
	return webhook.New(webhook.Config{Applier: a.Service, Formats: formats, Log: a.Log, AllowOrigin: a.Config.CORSOrigin})
}
