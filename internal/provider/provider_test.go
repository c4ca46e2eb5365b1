package provider_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// TestLambdaLinksOnlyDeployableProviders: the production functions know
// exactly the providers a deployment can run; the in-memory fake and the
// local provider are not among them.
func TestLambdaLinksOnlyDeployableProviders(t *testing.T) {
	got := provider.Lambda()
	for _, want := range []string{"e2b", "daytona", "vercel"} {
		if _, ok := got.Find(want); !ok {
			t.Errorf("Lambda() lacks %s", want)
		}
	}
	for _, a := range got {
		if !a.Deployable {
			t.Errorf("Lambda() holds %s, which a deployment cannot run", a.Name)
		}
	}
	for _, localOnly := range []string{local.ProviderName, fake.DefaultName} {
		if _, ok := got.Find(localOnly); ok {
			t.Errorf("Lambda() holds %s", localOnly)
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
