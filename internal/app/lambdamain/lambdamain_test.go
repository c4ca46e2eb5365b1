package lambdamain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

// mustJSONLines decodes every line of out as a JSON object, failing the
// test on any line that is not one (what the ErrorLogs metric filter
// could not match).
func mustJSONLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestColdStartErrorIsLoggedAsJSON: a configuration error before anything
// is loaded (no table) is one JSON line at level ERROR naming the function
// and the variable, so the stack's ErrorLogs metric filter counts it.
func TestColdStartErrorIsLoggedAsJSON(t *testing.T) {
	t.Setenv(app.EnvTable, "")
	var stdout, stderr bytes.Buffer
	built := false
	_, err := lambdamain.Init(t.Context(), lambdamain.Function{Name: routes.Status}, &stdout, &stderr,
		func(context.Context, *app.App, *metrics.Emitter) (any, error) { built = true; return nil, nil })
	if err == nil || built {
		t.Fatalf("Init without a table: err %v, built %v; want an error before building", err, built)
	}
	lines := mustJSONLines(t, stderr.String())
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %s", len(lines), stderr.String())
	}
	l := lines[0]
	if l["level"] != "ERROR" || l["msg"] != "cold start failed" || l["function"] != routes.Status ||
		!strings.Contains(l["err"].(string), app.EnvTable) {
		t.Errorf("log line %v, want level ERROR, msg \"cold start failed\", function %s, err naming %s", l, routes.Status, app.EnvTable)
	}
}

// TestBuildErrorIsLoggedAsJSON: an error of the function's own build (after
// the App loaded) is logged the same way.
func TestBuildErrorIsLoggedAsJSON(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	t.Setenv(app.EnvTable, "sandman-lambdamain-test") // never read: the build fails first
	t.Setenv(app.EnvDynamoEndpoint, endpoint)
	t.Setenv(app.EnvProvider, app.DefaultProvider)
	var stdout, stderr bytes.Buffer
	_, err := lambdamain.Init(t.Context(), lambdamain.Function{Name: routes.Notifier}, &stdout, &stderr,
		func(context.Context, *app.App, *metrics.Emitter) (any, error) {
			return nil, errors.New("no management endpoint")
		})
	if err == nil {
		t.Fatal("Init with a failing build succeeded")
	}
	lines := mustJSONLines(t, stderr.String())
	last := lines[len(lines)-1]
	if last["level"] != "ERROR" || last["function"] != routes.Notifier || last["err"] != "no management endpoint" {
		t.Errorf("last log line %v, want the build's error at level ERROR", last)
	}
}

// TestHTTPBuildsTheRouteHandler: HTTP(name) builds the API handler of the
// named function, and Init returns it ready for lambda.Start.
func TestHTTPBuildsTheRouteHandler(t *testing.T) {
	endpoint := dynamotest.Endpoint(t)
	t.Setenv(app.EnvTable, "sandman-lambdamain-test")
	t.Setenv(app.EnvDynamoEndpoint, endpoint)
	t.Setenv(app.EnvProvider, app.DefaultProvider)
	var stdout, stderr bytes.Buffer
	h, err := lambdamain.Init(t.Context(), lambdamain.Function{Name: routes.Status}, &stdout, &stderr, lambdamain.HTTP(routes.Status))
	if err != nil || h == nil {
		t.Fatalf("Init of the status function: %v, %v (logs: %s)", h, err, stderr.String())
	}
}
