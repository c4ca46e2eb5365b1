package archivetest

import (
	"os"
	"testing"

	"github.com/sandmanhq/sandman/internal/testenv"
)

// ServerEndpoint returns the value of the environment variable envVar, the
// endpoint of a server a test needs (S3_ENDPOINT: moto's S3, started by
// `make test`). When it is unset the test stops through testenv.Missing:
// it skips with one line naming `make test`, or fails under `make test`
// (testenv.RequireEnv).
func ServerEndpoint(tb testing.TB, envVar, server string) string {
	tb.Helper()
	if v := os.Getenv(envVar); v != "" {
		return v
	}
	testenv.Missing(tb, server+" ("+envVar+" is unset)", "make test")
	return ""
}
