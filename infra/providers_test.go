package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestStackProviders: a stack with daytona as the default and vercel and
// e2b next to it sets SANDMAN_PROVIDERS on every function, gives each
// enabled provider's key only to the functions that call providers and
// Daytona's and E2B's webhook secrets only to webhook (Vercel has none), and
// sets the non-secret settings only where providers are called.
func TestStackProviders(t *testing.T) {
	s := MustSynth(t, &SandmanStackProps{Provider: "daytona", Providers: []string{"vercel", "e2b", "daytona"},
		ProviderSettings: map[string]string{envnames.VercelProjectID: "prj_1", envnames.VercelTeamID: "team_1"}})
	all := s.statements(t)
	for _, name := range routes.Functions {
		fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		if got, want := vars[envnames.Provider], "daytona"; got != want {
			t.Errorf("%s: %s = %v, want %s", name, envnames.Provider, got, want)
		}
		if got, want := vars[envnames.Providers], "vercel,e2b"; got != want {
			t.Errorf("%s: %s = %v, want %s", name, envnames.Providers, got, want)
		}
		for k := range vars {
			if !slices.Contains(envnames.Functions, k) {
				t.Errorf("%s sets %s, which no function reads", name, k)
			}
		}
		calls := slices.Contains(providerKeyFunctions, name)
		want := map[string]any{}
		switch {
		case calls:
			want = map[string]any{
				envnames.ProviderAPIKeySecret: DefaultProviderAPIKeySecretName,
				envnames.DaytonaAPIKeySecret:  DefaultDaytonaAPIKeySecretName,
				envnames.VercelTokenSecret:    DefaultVercelTokenSecretName,
				envnames.VercelProjectID:      "prj_1",
				envnames.VercelTeamID:         "team_1",
			}
		case name == routes.Webhook:
			want = map[string]any{
				envnames.WebhookSecretSecret:        DefaultWebhookSecretName,
				envnames.DaytonaWebhookSecretSecret: DefaultDaytonaWebhookSecretName,
			}
		}
		for _, k := range []string{envnames.ProviderAPIKeySecret, envnames.DaytonaAPIKeySecret, envnames.VercelTokenSecret,
			envnames.VercelProjectID, envnames.VercelTeamID, envnames.WebhookSecretSecret, envnames.DaytonaWebhookSecretSecret} {
			if got := vars[k]; got != want[k] {
				t.Errorf("%s: %s = %v, want %v", name, k, got, want[k])
			}
		}

		var readable []string
		for a, resources := range s.functionActions(t, all, name) {
			if a != "secretsmanager:GetSecretValue" {
				continue
			}
			for _, r := range resources {
				for _, secret := range []string{DefaultProviderAPIKeySecretName, DefaultWebhookSecretName,
					DefaultDaytonaAPIKeySecretName, DefaultDaytonaWebhookSecretName, DefaultVercelTokenSecretName} {
					if strings.Contains(r, ":secret:"+secret+"-??????") {
						readable = append(readable, secret)
					}
				}
			}
		}
		var wantReadable []string
		for _, v := range want {
			if s, ok := v.(string); ok && strings.HasPrefix(s, "sandman/") {
				wantReadable = append(wantReadable, s)
			}
		}
		if got, want := sorted(readable), sorted(wantReadable); !same(got, want) {
			t.Errorf("%s may read secrets %v, want %v", name, got, want)
		}
	}
}

// TestStackProvidersDefault: the default stack (e2b only) references no
// Daytona or Vercel secret and sets no SANDMAN_PROVIDERS.
func TestStackProvidersDefault(t *testing.T) {
	s := MustDefaultStack(t)
	doc := canonical(s.doc)
	for _, name := range []string{DefaultDaytonaAPIKeySecretName, DefaultDaytonaWebhookSecretName, DefaultVercelTokenSecretName,
		envnames.Providers} {
		if strings.Contains(doc, name) {
			t.Errorf("the default stack mentions %s", name)
		}
	}
}
