package cli_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/cli"
)

// TestPauseCallsThePauseRoute: `sandman sessions pause` and its former name
// `snapshot` both send POST /v1/sessions/{id}/pause, the route's own name,
// never its alias.
func TestPauseCallsThePauseRoute(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"paused":true,"session":{"id":"ses_aaaaaaaaaaaaaaaaaaaaaaaaaa","state":"paused"}}`))
	}))
	t.Cleanup(srv.Close)

	for _, command := range []string{"pause", "snapshot"} {
		out := mustJSON[cli.PauseResult](t, srv.URL, apigw.DevAPIKey, command, "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa")
		if !out.Paused || out.Session.State != "paused" {
			t.Errorf("%s = %+v, want paused", command, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := "POST /v1/sessions/ses_aaaaaaaaaaaaaaaaaaaaaaaaaa/pause"
	if len(got) != 2 || got[0] != want || got[1] != want {
		t.Errorf("requests = %q, want %q twice", got, want)
	}
}
