package app_test

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// TestEnvContract ties internal/envnames and the adapters' declarations
// to their readers: every variable the functions' readers
// (app.ConfigFromEnv, sweep.ConfigFromEnv) ask for is named in
// envnames.Functions or declared by an adapter (registry.Adapter.Vars),
// and every name there is asked for. The stack's
// side (every variable it sets is one of envnames.Functions) is
// infra.TestStackEnvContract.
func TestEnvContract(t *testing.T) {
	asked := map[string]bool{}
	getenv := func(name string) string {
		asked[name] = true
		if name == envnames.Table {
			return "sessions" // required: without it the reader stops early
		}
		return ""
	}
	all := localstack.Adapters()
	if _, err := app.ConfigFromEnv(getenv, all...); err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.ConfigFromEnv(getenv); err != nil {
		t.Fatal(err)
	}
	var adapterVars []string
	for _, a := range all {
		for _, name := range a.Vars() {
			adapterVars = append(adapterVars, name)
			if !asked[name] {
				t.Errorf("the %s adapter declares %s, which ConfigFromEnv does not read", a.Name, name)
			}
		}
	}
	for name := range asked {
		if !slices.Contains(envnames.Functions, name) && !slices.Contains(adapterVars, name) {
			t.Errorf("%s is read but not named in envnames.Functions nor declared by an adapter", name)
		}
	}
	for _, name := range envnames.Functions {
		if !asked[name] {
			t.Errorf("envnames.Functions names %s, which no reader asks for", name)
		}
	}
	for _, name := range []string{localstack.EnvAddr, localstack.EnvSweepInterval, localstack.EnvInMemory,
		localstack.EnvDDBPort, localstack.EnvStateDir, localstack.EnvDevAPIKey} {
		if !slices.Contains(envnames.LocalStack, name) {
			t.Errorf("the local stack reads %s, not named in envnames.LocalStack", name)
		}
	}
}
