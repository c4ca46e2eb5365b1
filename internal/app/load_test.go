package app_test

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider"
)

// TestLoadRefusesLocalOnlyProviders: a deployed function (linking the
// Lambda adapters) configured with the in-memory fake or the local provider
// (whose sandboxes live in one process) fails at cold start with an error
// naming it, before any AWS or table access.
func TestLoadRefusesLocalOnlyProviders(t *testing.T) {
	for _, tc := range []struct{ provider, providers, want string }{
		{provider: "fake", want: `"fake"`},
		{provider: "local", want: `"local"`},
		{provider: "e2b", providers: "daytona,fake", want: `"fake"`},
	} {
		t.Run(tc.provider+"+"+tc.providers, func(t *testing.T) {
			t.Setenv(app.EnvTable, "sandman-load-test")
			t.Setenv(app.EnvDynamoEndpoint, "http://127.0.0.1:1") // never reached
			t.Setenv(app.EnvProvider, tc.provider)
			t.Setenv(app.EnvProviders, tc.providers)
			a, err := app.Load(t.Context(), app.Needs{}, app.Deps{Adapters: provider.Lambda()})
			if err == nil {
				_ = a.Close(t.Context())
				t.Fatalf("Load with %s=%s %s=%s succeeded, want an error", app.EnvProvider, tc.provider, app.EnvProviders, tc.providers)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "local stack") {
				t.Errorf("error %q, want it to name %s and say where it runs", err, tc.want)
			}
		})
	}
}
