package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/testenv"
)

// childEnv makes the re-executed test binary run the child test's body.
const childEnv = "SANDMAN_TESTENV_CHILD"

// TestMissingChild is the body the rule tests run in a child process: a
// test whose server is missing.
func TestMissingChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	testenv.Missing(t, "a server (SERVER is unset)", "make test")
	t.Error("Missing returned: the test went on without its server")
}

// runChild runs TestMissingChild in a child process with require as
// RequireEnv's value (unset when empty) and returns its output and whether
// it passed.
func runChild(t *testing.T, require string) (string, bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingChild$", "-test.v")
	env := []string{childEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, testenv.RequireEnv+"=") {
			env = append(env, kv)
		}
	}
	if require != "" {
		env = append(env, testenv.RequireEnv+"="+require)
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run the child test: %v", err)
	}
	return string(out), err == nil
}

// reasonLines returns the lines the child test logged (its skip or failure
// reason), without go test's own framing.
func reasonLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") ||
			l == "PASS" || l == "FAIL" || strings.HasPrefix(l, "exit status") {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

func TestMissingSkipsWithOneLineNamingTheCommand(t *testing.T) {
	out, passed := runChild(t, "")
	if !passed {
		t.Fatalf("the child failed without %s; want a skip:\n%s", testenv.RequireEnv, out)
	}
	if !strings.Contains(out, "--- SKIP: TestMissingChild") {
		t.Fatalf("the child did not skip:\n%s", out)
	}
	lines := reasonLines(out)
	if len(lines) != 1 {
		t.Fatalf("the skip says %d lines, want 1:\n%s", len(lines), out)
	}
	for _, want := range []string{"SERVER is unset", "`make test`"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the skip line %q does not name %q", lines[0], want)
		}
	}
}

func TestMissingFailsWhenRequired(t *testing.T) {
	out, passed := runChild(t, "1")
	if passed {
		t.Fatalf("the child passed with %s=1; want a failure:\n%s", testenv.RequireEnv, out)
	}
	if !strings.Contains(out, "--- FAIL: TestMissingChild") {
		t.Fatalf("the child did not fail its test:\n%s", out)
	}
	if strings.Contains(out, "Missing returned") {
		t.Errorf("the test went on after Missing:\n%s", out)
	}
	lines := reasonLines(out)
	if len(lines) != 1 || !strings.Contains(lines[0], testenv.RequireEnv) || !strings.Contains(lines[0], "`make test`") {
		t.Errorf("the failure says %q, want one line naming %s and `make test`", lines, testenv.RequireEnv)
	}
}

func TestMissingSkipsWhenRequireIsZero(t *testing.T) {
	if out, passed := runChild(t, "0"); !passed || !strings.Contains(out, "--- SKIP: TestMissingChild") {
		t.Fatalf("%s=0 should not require; the child:\n%s", testenv.RequireEnv, out)
	}
}
