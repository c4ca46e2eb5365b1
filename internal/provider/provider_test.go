package provider_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider"
)

// TestLambdaLinksOnlyDeployableProviders: the production functions know
// exactly the providers a deployment can run; the in-memory fake and the
// local provider are not among them.
func TestLambdaLinksOnlyDeployableProviders(t *testing.T) {
	got := provider.Lambda()
	if names := strings.Join(got.Names(), ","); names != "e2b,daytona,vercel" {
		t.Errorf("Lambda() = %s, want e2b,daytona,vercel", names)
	}
	for _, a := range got {
		if !a.Deployable {
			t.Errorf("Lambda() holds %s, which a deployment cannot run", a.Name)
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
	// The status function links the registry's declarations (every
	// function's configuration names providers) but no adapter, no
	// provider plumbing.
	for _, line := range strings.Fields(deps("github.com/sandmanhq/sandman/functions/status")) {
		if strings.Contains(line, "/internal/provider") && !strings.HasSuffix(line, "/internal/provider/registry") {
			t.Errorf("the status function links %s", line)
		}
	}
}
