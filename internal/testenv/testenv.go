// Package testenv is the one rule for tests that need something outside Go:
// a server (DynamoDB Local) or a tool (node, bash). Without it such a test
// skips with one line naming the command that provides it, so `go test
// ./...` on a fresh machine passes; with RequireEnv set, as `make test`
// (scripts/test.sh) sets it, the same test fails instead, so a run that
// should have everything never passes by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// RequireEnv names the environment variable that turns every skip of this
// package into a failure: any non-empty value but "0". scripts/test.sh sets
// it to 1.
const RequireEnv = "SANDMAN_TEST_REQUIRE"

// Required reports whether RequireEnv is set: a missing server or tool
// fails the test instead of skipping it.
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}

// Missing stops the test because what it needs is missing: what names it
// ("DynamoDB Local (DYNAMODB_ENDPOINT is unset)"), how names the command
// that provides it ("make test"). It skips with one line, or fails with the
// same line when RequireEnv is set.
func Missing(tb testing.TB, what, how string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("needs %s: run `%s` (%s is set: a missing server or tool fails the test)", what, how, RequireEnv)
	}
	tb.Skipf("needs %s: run `%s`", what, how)
}

// Tool returns the path of the named program on $PATH, or stops the test
// through Missing (how names the command that provides the program).
func Tool(tb testing.TB, name, how string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, name+" (not on $PATH)", how)
	}
	return path
}
