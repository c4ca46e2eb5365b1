package infra

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBootstrapNeedsNoBuiltFunctions: `scripts/cdk.sh bootstrap` runs the
// CLI outside the app, so it never synthesizes the stack and needs no
// built functions on a fresh clone.
func TestBootstrapNeedsNoBuiltFunctions(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "cdk")
	seen := filepath.Join(dir, "seen")
	script := "#!/bin/sh\n{ echo \"$@\"; pwd; ls; } > " + seen + "\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "cdk.sh"), "bootstrap", "aws://123456789012/eu-west-1")
	cmd.Env = append(os.Environ(), "CDK_CLI="+stub)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cdk.sh bootstrap: %v\n%s", err, out)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the CLI was not run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "bootstrap aws://123456789012/eu-west-1" {
		t.Errorf("CLI arguments %q, want the bootstrap arguments", lines[0])
	}
	if slices.Contains(lines[2:], "cdk.json") {
		t.Errorf("bootstrap ran in %s, next to cdk.json: it would synthesize the app (and need `make build`)", lines[1])
	}
}
