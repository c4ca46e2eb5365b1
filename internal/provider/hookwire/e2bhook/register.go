package e2bhook

import "github.com/sandmanhq/sandman/internal/provider/registry"

// The environment variables of the E2B-format webhook secret
// (docs/CONFIGURATION.md). They keep their first, provider-neutral names:
// E2B was Sandman's only provider then.
const (
	EnvSecret       = "SANDMAN_WEBHOOK_SECRET"        // the signing secret in plain text (local use)
	EnvSecretSecret = "SANDMAN_WEBHOOK_SECRET_SECRET" // the Secrets Manager secret holding it; set by the stack for webhook
)

// Format is the format's name in registry.Webhook and its path segment:
// deliveries come to POST /v1/webhooks/e2b.
const Format = "e2b"

// Webhook is the declaration (internal/provider/registry) of E2B's webhook
// format and signing secret. E2B, the local provider and the in-memory fake
// all speak it, so each names this one value in its register.go: one route
// (/v1/webhooks/e2b), one secret (docs/providers/e2b.md "Lifecycle
// webhooks"). The secret's ConstructID is part of the deployed template's
// logical ids: never change it.
var Webhook = registry.Webhook{Format: Format, Secret: registry.Secret{
	What: "webhook secret", Env: EnvSecret, SecretEnv: EnvSecretSecret,
	DefaultName: "sandman/webhook-signing-key", ContextKey: "sandman:webhookSecretName", ConstructID: "WebhookSigningKeySecret",
}}
