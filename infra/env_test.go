package infra

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// TestStackEnvContract: every environment variable the stack sets on a
// function is one the functions read (envnames.Functions; the readers' side
// is internal/app's TestEnvContract), and every secret name it sets is
// envnames' default.
func TestStackEnvContract(t *testing.T) {
	s := MustDefaultStack(t)
	fns := s.ofType("AWS::Lambda::Function")
	if len(fns) == 0 {
		t.Fatal("no functions in the stack")
	}
	for id, fn := range fns {
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		if len(vars) == 0 {
			t.Errorf("%s sets no environment", id)
		}
		for name, v := range vars {
			if !slices.Contains(envnames.Functions, name) {
				t.Errorf("%s sets %s, which no function reads", id, name)
			}
			switch name {
			case envnames.ProviderAPIKeySecret:
				if v != envnames.DefaultProviderAPIKeySecretName {
					t.Errorf("%s: %s = %v, want %s", id, name, v, envnames.DefaultProviderAPIKeySecretName)
				}
			case envnames.WebhookSecretSecret:
				if v != envnames.DefaultWebhookSecretName {
					t.Errorf("%s: %s = %v, want %s", id, name, v, envnames.DefaultWebhookSecretName)
				}
			}
		}
	}
}
