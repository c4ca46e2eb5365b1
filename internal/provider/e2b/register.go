package e2b

import (
	"context"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// The environment variables of the E2B adapter (docs/CONFIGURATION.md).
// The API key's variables keep their first, provider-neutral names: E2B was
// Sandman's only provider then.
const (
	EnvBaseURL             = "SANDMAN_E2B_BASE_URL"            // the control API's URL (default DefaultBaseURL)
	EnvDomain              = "SANDMAN_E2B_DOMAIN"              // the sandbox domain (default DefaultDomain)
	EnvAPIKey              = "SANDMAN_PROVIDER_API_KEY"        // the API key in plain text (local use)
	EnvAPIKeySecret        = "SANDMAN_PROVIDER_API_KEY_SECRET" // the Secrets Manager secret holding it; set by the stack
	EnvWebhookSecret       = e2bhook.EnvSecret                 // the webhook signing secret in plain text (local use)
	EnvWebhookSecretSecret = e2bhook.EnvSecretSecret           // the secret holding it; set by the stack for webhook
	EnvCallsPerSecond      = "SANDMAN_E2B_CALLS_PER_SECOND"    // the call budget's rate (Adapter.Calls)
)

// Adapter is E2B's declaration (internal/provider/registry).
//
// Calls: 20,000 lifecycle calls per 30 s (667/s), the figure Sandman's
// capacity model assumes for E2B (docs/providers/e2b.md, its rate limits;
// E2B publishes only its create rate, 5/s on Pro, and concurrency).
//
// Price: 2 vCPU + 512 MiB at $0.000014 per vCPU-second and $0.0000045 per
// GiB-second, paused free (E2B's list prices, 2025): an estimate.
//
// PausedRetention: 30 days, as E2B's 2025 docs said of paused sandboxes
// (counted from the sandbox's create; a 2026 preview says kept
// indefinitely: docs/providers/e2b.md "Retention"). Sandman counts from
// the pause, so the default archive deadline (27 days after the pause)
// assumes the conservative reading only for sandboxes paused soon after
// their create; set SANDMAN_ARCHIVE_AFTER shorter for long-lived ones.
var Adapter = registry.Adapter{
	Name:       Name,
	Deployable: true,
	Env:        []string{EnvBaseURL, EnvDomain},
	Key: &registry.Secret{What: "e2b API key", Env: EnvAPIKey, SecretEnv: EnvAPIKeySecret,
		DefaultName: "sandman/provider-api-key", ContextKey: "sandman:providerApiKeySecretName", ConstructID: "ProviderApiKeySecret"},
	Webhook:  &e2bhook.Webhook, // shared with the local provider and the fake
	Calls:    calllimit.Limit{PerSecond: 20000.0 / 30},
	CallsEnv: EnvCallsPerSecond,
	Price:    lifecycle.Price{RunningPerHour: 0.1089, PausedPerHour: 0, PausedGB: 10.74}, // PausedGB: the Hobby disk, 10 GiB
	// 30 days (see above).
	PausedRetention: 30 * 24 * time.Hour,
	Read: func(getenv func(string) string) (any, error) {
		return Config{BaseURL: getenv(EnvBaseURL), Domain: getenv(EnvDomain)}, nil
	},
	New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
		cfg, _ := p.Settings.(Config)
		cfg.APIKey, cfg.Clock, cfg.Logger = p.APIKey, p.Clock, p.Log
		prov, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return prov, nil, nil
	},
}
