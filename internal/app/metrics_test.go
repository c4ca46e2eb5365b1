package app_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestWiringMetrics wires two functions as their Lambda mains do (an
// internal/metrics Emitter in app.Deps, the handler wrapped by
// metrics.Handler) over one table and the fake provider: the create writes
// no metrics line, the snapshot's invocation writes one line, with Pauses 1
// for its function and reason request, before it returns.
func TestWiringMetrics(t *testing.T) {
	cfg := baseConfig(t, fake.DefaultName)
	fake := fake.New(fake.Config{}) // one provider behind both functions
	function := func(name string) (func(t *testing.T, event, id string) (int, string), *bytes.Buffer) {
		var out bytes.Buffer
		m := metrics.New(metrics.Config{Writer: &out, Function: name})
		a := MustApp(t, cfg, app.Needs{Provider: true}, app.Deps{Metrics: m, Provider: fake})
		h, err := a.HTTPHandler(name)
		if err != nil {
			t.Fatal(err)
		}
		handle := metrics.Handler(m, h.Handle)
		return func(t *testing.T, event, id string) (int, string) {
			ev := mustEvent(t, event)
			if id != "" {
				ev.PathParameters["id"] = id
			}
			resp, err := handle(t.Context(), ev)
			if err != nil {
				t.Fatalf("%s: %v", event, err)
			}
			return resp.StatusCode, resp.Body
		}, &out
	}
	sessions, sessionsOut := function(routes.Sessions)
	snapshot, snapshotOut := function(routes.Pause)
	a := MustApp(t, cfg, app.Needs{}, app.Deps{})
	if err := a.Store.PutAPIKey(t.Context(), lifecycle.APIKey{
		Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC(),
	}); err != nil {
		t.Fatal(err)
	}

	code, body := sessions(t, "sessions-create.json", "")
	if code != 201 {
		t.Fatalf("create: %d %s, want 201", code, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(body), &created); err != nil {
		t.Fatal(err)
	}
	if sessionsOut.Len() != 0 {
		t.Errorf("the create wrote metrics: %s", sessionsOut)
	}
	if code, body := snapshot(t, "snapshot.json", created.ID); code != 200 {
		t.Fatalf("snapshot: %d %s, want 200", code, body)
	}
	lines := strings.Split(strings.TrimSuffix(snapshotOut.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("snapshot wrote %d lines, want 1: %s", len(lines), snapshotOut)
	}
	var line struct {
		Function, Reason string
		Pauses           float64
		AWS              struct{ CloudWatchMetrics []struct{ Namespace string } } `json:"_aws"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line.Function != routes.Pause || line.Reason != lifecycle.ReasonRequest || line.Pauses != 1 ||
		len(line.AWS.CloudWatchMetrics) == 0 || line.AWS.CloudWatchMetrics[0].Namespace != metrics.Namespace {
		t.Errorf("line %s, want Pauses 1 for snapshot/request in %s", lines[0], metrics.Namespace)
	}
}
