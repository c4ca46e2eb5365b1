package infra

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

// readByFunctions reports whether the functions read name: one of
// envnames.Functions, or a variable a deployable adapter declares
// (registry.Adapter.Vars).
func readByFunctions(name string) bool {
	if slices.Contains(envnames.Functions, name) {
		return true
	}
	for _, a := range provider.Lambda() {
		if slices.Contains(a.Vars(), name) {
			return true
		}
	}
	return false
}

// TestStackEnvContract: every environment variable the stack sets on a
// function is one the functions read (envnames.Functions and the adapters'
// variables; the readers' side is internal/app's TestEnvContract), and
// every secret name it sets is its adapter's default.
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
			if !readByFunctions(name) {
				t.Errorf("%s sets %s, which no function reads", id, name)
			}
			switch name {
			case e2b.EnvAPIKeySecret:
				if v != e2b.Adapter.Key.DefaultName {
					t.Errorf("%s: %s = %v, want %s", id, name, v, e2b.Adapter.Key.DefaultName)
				}
			case e2b.EnvWebhookSecretSecret:
				if v != e2bhook.Webhook.Secret.DefaultName {
					t.Errorf("%s: %s = %v, want %s", id, name, v, e2bhook.Webhook.Secret.DefaultName)
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
	for _, name := range []string{routes.Sessions, routes.Resume, routes.Pause, routes.Reconnect, routes.Webhook,
		routes.Sweep, routes.Timer, routes.Channel, routes.Readiness, routes.Notifier, routes.Checkpoint} {
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
