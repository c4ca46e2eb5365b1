package infra

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
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

// TestRunningLimitReachesEverySessionWriter: SANDMAN_MAX_RUNNING reaches
// every function that writes sessions (those that move a session between
// running and not running, the webhook function included though it holds
// no provider key, and the notifier's presence writes), so they all keep the
// running-slot counter; it reaches no other function.
func TestRunningLimitReachesEverySessionWriter(t *testing.T) {
	s := optionsStack(t)
	movers := map[string]bool{}
	for _, spec := range functionSpecs {
		movers[spec.name] = spec.writesSessions
	}
	for _, name := range []string{routes.Sessions, routes.Resume, routes.Snapshot, routes.Reconnect, routes.Webhook,
		routes.IdlePause, routes.Pauser, routes.Channel, routes.Readiness, routes.Notifier} {
		if !movers[name] {
			t.Errorf("%s writes sessions but is not marked so", name)
		}
	}
	for name, moves := range movers {
		fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, ok := vars[envnames.MaxRunning]
		if moves && got != "7" {
			t.Errorf("%s: %s = %v, want 7", name, envnames.MaxRunning, got)
		}
		if !moves && ok {
			t.Errorf("%s writes no session but gets %s", name, envnames.MaxRunning)
		}
	}
}
