package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestStackProviders: a stack with daytona as the default and vercel and
// e2b next to it sets SANDMAN_PROVIDERS on every function, gives each
// enabled provider's key only to the functions that call providers and
// Daytona's and E2B's webhook secrets only to webhook (Vercel has none), and
// sets the non-secret settings only where providers are called.
func TestStackProviders(t *testing.T) {
	s := MustSynth(t, &SandmanStackProps{Provider: "daytona", Providers: []string{"vercel", "e2b", "daytona"},
		ProviderSettings: map[string]string{vercel.EnvProjectID: "prj_1", vercel.EnvTeamID: "team_1"}})
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
			if !readByFunctions(k) {
				t.Errorf("%s sets %s, which no function reads", name, k)
			}
		}
		calls := slices.Contains(providerKeyFunctions, name)
		want := map[string]any{}
		switch {
		case calls:
			want = map[string]any{
				e2b.EnvAPIKeySecret:     e2b.Adapter.Key.DefaultName,
				daytona.EnvAPIKeySecret: daytona.Adapter.Key.DefaultName,
				vercel.EnvTokenSecret:   vercel.Adapter.Key.DefaultName,
				vercel.EnvProjectID:     "prj_1",
				vercel.EnvTeamID:        "team_1",
			}
		case name == routes.Webhook:
			want = map[string]any{
				e2b.EnvWebhookSecretSecret:     e2bhook.Webhook.Secret.DefaultName,
				daytona.EnvWebhookSecretSecret: daytona.Adapter.Webhook.Secret.DefaultName,
			}
		}
		for _, k := range []string{e2b.EnvAPIKeySecret, daytona.EnvAPIKeySecret, vercel.EnvTokenSecret,
			vercel.EnvProjectID, vercel.EnvTeamID, e2b.EnvWebhookSecretSecret, daytona.EnvWebhookSecretSecret} {
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
				for _, secret := range []string{e2b.Adapter.Key.DefaultName, e2bhook.Webhook.Secret.DefaultName,
					daytona.Adapter.Key.DefaultName, daytona.Adapter.Webhook.Secret.DefaultName, vercel.Adapter.Key.DefaultName} {
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
	for _, name := range []string{daytona.Adapter.Key.DefaultName, daytona.Adapter.Webhook.Secret.DefaultName, vercel.Adapter.Key.DefaultName,
		envnames.Providers} {
		if strings.Contains(doc, name) {
			t.Errorf("the default stack mentions %s", name)
		}
	}
}

// TestStackRefusesLocalOnlyProviders: a provider no deployment can run
// (the local provider, the in-memory fake, or a name nobody declares), as
// the default or among the others, fails synthesis with an error naming
// it; the deployable ones pass.
func TestStackRefusesLocalOnlyProviders(t *testing.T) {
	for _, tc := range []struct {
		names   []string
		refused string
	}{
		{names: []string{"e2b", "daytona", "vercel"}},
		{names: []string{"local"}, refused: "local"},
		{names: []string{"e2b", "fake"}, refused: "fake"},
		{names: []string{"e2b", "modal"}, refused: "modal"},
	} {
		err := checkProviders(tc.names)
		if (err != nil) != (tc.refused != "") || (err != nil && !strings.Contains(err.Error(), `"`+tc.refused+`"`)) {
			t.Errorf("%v: %v, want refused %q", tc.names, err, tc.refused)
		}
	}
	s := MustSynth(t, &SandmanStackProps{Provider: "local"})
	found := mustAnnotations(t, assertions.Annotations_FromStack(s.stack).FindError(jsii.String("*"),
		assertions.Match_StringLikeRegexp(jsii.String(".*cannot run in a deployment.*"))))
	if len(found) == 0 {
		t.Error("a stack with the local provider synthesized without an error annotation")
	}
}
