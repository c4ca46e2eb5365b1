package localstack_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/localstack"
)

// TestNewMux: the console's dev routes reach the API under /v1 with the
// dev key (the browser's own credentials dropped), other console API paths
// are 404, the browser files and /v1/ws are served, the rest goes to the API.
func TestNewMux(t *testing.T) {
	var got []string
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" key="+r.Header.Get("x-api-key")+" authz="+r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusTeapot)
	})
	ws := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	srv := httptest.NewServer(localstack.NewMux(api, ws, "sk_dev"))
	t.Cleanup(srv.Close)
	do := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer sk_browser")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/console/api/sessions", "GET /v1/sessions key=sk_dev authz="},
		{"POST", "/console/api/sessions", "POST /v1/sessions key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/client-tokens", "POST /v1/sessions/ses_x/client-tokens key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/snapshot", "POST /v1/sessions/ses_x/snapshot key=sk_dev authz="},
		{"POST", "/console/api/sessions/ses_x/resume", "POST /v1/sessions/ses_x/resume key=sk_dev authz="},
		{"DELETE", "/console/api/sessions/ses_x", "DELETE /v1/sessions/ses_x key=sk_dev authz="},
		{"GET", "/console/api/webhook-endpoints", "GET /v1/webhook-endpoints key=sk_dev authz="},
		{"GET", "/console/api/webhook-endpoints/we_x/deliveries", "GET /v1/webhook-endpoints/we_x/deliveries key=sk_dev authz="},
		{"GET", "/v1/sessions", "GET /v1/sessions key= authz=Bearer sk_browser"},
	} {
		got = nil
		if status, _ := do(tc.method, tc.path); status != http.StatusTeapot || len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s %s: status %d, API saw %v; want %q", tc.method, tc.path, status, got, tc.want)
		}
	}
	got = nil
	for _, p := range []string{"/console/api/sessions/ses_x/reconnect", "/console/api/keys"} {
		if status, _ := do("GET", p); status != http.StatusNotFound || len(got) != 0 {
			t.Errorf("GET %s: status %d, forwarded %v; want 404 and nothing forwarded", p, status, got)
		}
	}
	if status, _ := do("GET", localstack.WSPath); status != http.StatusAccepted {
		t.Errorf("GET %s: %d, want the channel", localstack.WSPath, status)
	}
	for _, p := range []string{"/sandman.js", "/console/"} {
		if status, body := do("GET", p); status != http.StatusOK || body == "" {
			t.Errorf("GET %s: %d", p, status)
		}
	}
}
