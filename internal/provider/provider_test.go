package provider_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider"
)

// TestLambdaLinksOnlyDeployableProviders: the production functions know
// exactly the providers a deployment can run; the in-memory fake and the
// local provider are not among them.
func TestLambdaLinksOnlyDeployableProviders(t *testing.T) {
	got := provider.Lambda()
	if len(got) != len(app.LambdaProviders) {
		t.Errorf("Lambda() has %d providers, want %v", len(got), app.LambdaProviders)
	}
	for _, name := range app.LambdaProviders {
		if got[name] == nil {
			t.Errorf("Lambda() lacks %s", name)
		}
	}
}

// TestFunctionsDoNotLinkTheFake: no production function links the
// in-memory fake, and the status function (which never calls a provider)
// links no provider package at all.
func TestFunctionsDoNotLinkTheFake(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of every function")
	}
	deps := func(pkgs ...string) string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		return string(out)
	}
	for _, line := range strings.Fields(deps("github.com/sandmanhq/sandman/functions/...")) {
		if strings.Contains(line, "/internal/provider/fake") || strings.Contains(line, "/internal/provider/local") {
			t.Errorf("a production function links %s", line)
		}
	}
	for _, line := range strings.Fields(deps("github.com/sandmanhq/sandman/functions/status")) {
		if strings.Contains(line, "/internal/provider") {
			t.Errorf("the status function links %s", line)
		}
	}
}
