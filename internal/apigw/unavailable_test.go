package apigw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestStoreStallIsUnavailable: a session store that stops answering (as
// DynamoDB Local SIGSTOPped mid-burst) is a 503 `unavailable` with
// Retry-After for every route, never a 500, and a create
// it cut short writes nothing at the provider.
func TestStoreStallIsUnavailable(t *testing.T) {
	t.Parallel()
	h := MustHarness(t) // healthy API keys
	done := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers while the test runs
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(stalled.Close)
	t.Cleanup(func() { close(done) }) // runs first
	client, err := dynamo.NewClient(t.Context(), stalled.URL)
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(dynamo.Config{Client: client, Table: "stalled"})
	prov := fake.New(fake.Config{Clock: h.clock})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: h.clock, Policy: lifecycle.DefaultPolicy(), Log: apigwLogger(h.logs)})
	for _, tc := range []struct{ fn, event string }{
		{routes.Sessions, "sessions-create.json"},
		{routes.Sessions, "sessions-get.json"},
		{routes.Sessions, "sessions-delete.json"},
		{routes.Sessions, "sessions-list.json"},
		{routes.Status, "status.json"},
		{routes.Pause, "snapshot.json"},
	} {
		t.Run(tc.event, func(t *testing.T) {
			hd, err := apigw.New(apigw.Config{Function: tc.fn, Service: svc, Keys: h.store, Log: apigwLogger(h.logs)})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the Lambda deadline
			defer cancel()
			resp, err := hd.Handle(ctx, MustEvent(t, tc.event))
			if err != nil {
				t.Fatal(err)
			}
			r := result{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}
			wantError(t, r, 503, "unavailable")
			if got, want := r.headers["Retry-After"], "2"; got != want {
				t.Errorf("Retry-After = %q, want %q", got, want)
			}
		})
	}
	if got := prov.Calls(fake.OpCreate); got != 0 {
		t.Errorf("provider creates = %d, want 0 (nothing half-done)", got)
	}
}
