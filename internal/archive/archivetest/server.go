package archivetest

import (
	"os"
	"testing"
)

// RequireServersVar is the variable that turns a missing test server into
// a failure: `make test` sets it to 1, so CI never passes by skipping.
const RequireServersVar = "SANDMAN_TEST_REQUIRE_SERVERS"

// ServerEndpoint returns the value of the environment variable envVar, the
// endpoint of a server a test needs (S3_ENDPOINT: moto's S3, started by
// `make test`). When it is unset the test is skipped with one line naming
// `make test`, or fails when RequireServersVar is "1".
func ServerEndpoint(tb testing.TB, envVar, server string) string {
	tb.Helper()
	if v := os.Getenv(envVar); v != "" {
		return v
	}
	msg := envVar + " is unset: run `make test`, which starts " + server + " and sets it"
	if os.Getenv(RequireServersVar) == "1" {
		tb.Fatal(msg + " (" + RequireServersVar + "=1 makes this a failure)")
	}
	tb.Skip(msg)
	return ""
}
