package infra

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/registry"
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

// checkProviders refuses a provider a deployment cannot run: one not in
// internal/provider.Lambda (the local provider and the in-memory fake run
// only in the local stack; a deployed function would fail at cold start).
func checkProviders(names []string) error {
	deployable := provider.Lambda()
	for _, name := range names {
		if _, ok := deployable.Find(name); !ok {
			return fmt.Errorf("infra: provider %q cannot run in a deployment: want some of %s (the local provider and the fake run only in the local stack)",
				name, strings.Join(deployable.Names(), ", "))
		}
	}
	return nil
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

// newProviderSecrets references the secrets of the enabled providers only,
// as their adapters declare them (registry.Adapter.Key and Webhook), in
// internal/provider.Lambda's order, each once: e.g. E2B's API key and
// webhook secret, Daytona's API key and Svix webhook secret, Vercel's
// token (Vercel sends no webhooks).
func newProviderSecrets(stack awscdk.Stack, p SandmanStackProps) providerSecrets {
	var s providerSecrets
	seen := map[string]bool{}
	ref := func(sec registry.Secret) (stackSecret, bool) {
		if seen[sec.SecretEnv] {
			return stackSecret{}, false
		}
		seen[sec.SecretEnv] = true
		name := p.SecretNames[sec.SecretEnv]
		if name == "" {
			name = sec.DefaultName
		}
		return stackSecret{env: sec.SecretEnv, name: name,
			secret: awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String(sec.ConstructID), jsii.String(name))}, true
	}
	for _, a := range provider.Lambda() {
		if !slices.Contains(p.Providers, a.Name) {
			continue
		}
		if a.Key != nil {
			if r, ok := ref(*a.Key); ok {
				s.provider = append(s.provider, r)
			}
		}
		if a.Webhook != nil {
			if r, ok := ref(a.Webhook.Secret); ok {
				s.webhook = append(s.webhook, r)
			}
		}
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
