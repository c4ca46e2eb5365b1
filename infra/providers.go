package infra

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// The provider names SandmanStackProps.Provider and Providers take
// (internal/app's).
const (
	providerE2B     = "e2b"
	providerDaytona = "daytona"
	providerVercel  = "vercel"
)

// enabledProviders returns the default provider first, then the others,
// each once.
func enabledProviders(def string, others []string) []string {
	out := []string{def}
	for _, p := range others {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// stackSecret is one Secrets Manager secret a function reads: the
// environment variable naming it, its name, and its construct.
type stackSecret struct {
	env, name string
	secret    awssecretsmanager.ISecret
}

// providerSecrets are the enabled providers' secrets: the API keys and
// tokens the provider-calling functions read, and the webhook secrets the
// webhook function reads.
type providerSecrets struct {
	provider, webhook []stackSecret
}

// newProviderSecrets references the secrets of the enabled providers only:
// E2B's API key and webhook secret (also for the local provider and the
// fake, which E2B's settings configure), Daytona's API key and Svix webhook
// secret, Vercel's token (Vercel sends no webhooks).
func newProviderSecrets(stack awscdk.Stack, p SandmanStackProps) providerSecrets {
	ref := func(id, env, name string) stackSecret {
		return stackSecret{env: env, name: name,
			secret: awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String(id), jsii.String(name))}
	}
	var s providerSecrets
	// The local process provider and the fake speak E2B's webhook format
	// and are configured like E2B (internal/app).
	if slices.ContainsFunc(p.Providers, func(n string) bool { return n == providerE2B || n == "local" || n == "fake" }) {
		s.provider = append(s.provider, ref("ProviderApiKeySecret", envnames.ProviderAPIKeySecret, p.ProviderAPIKeySecretName))
		s.webhook = append(s.webhook, ref("WebhookSigningKeySecret", envnames.WebhookSecretSecret, p.WebhookSecretName))
	}
	if slices.Contains(p.Providers, providerDaytona) {
		s.provider = append(s.provider, ref("DaytonaApiKeySecret", envnames.DaytonaAPIKeySecret, p.DaytonaAPIKeySecretName))
		s.webhook = append(s.webhook, ref("DaytonaWebhookSecret", envnames.DaytonaWebhookSecretSecret, p.DaytonaWebhookSecretName))
	}
	if slices.Contains(p.Providers, providerVercel) {
		s.provider = append(s.provider, ref("VercelTokenSecret", envnames.VercelTokenSecret, p.VercelTokenSecretName))
	}
	return s
}

// of returns the secrets spec's function reads.
func (s providerSecrets) of(spec functionSpec) []stackSecret {
	var out []stackSecret
	if spec.providerKey {
		out = append(out, s.provider...)
	}
	if spec.webhookKey {
		out = append(out, s.webhook...)
	}
	return out
}
