package lifecycle_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestHTTPPreviewProber: the default preview probe reports the status of a
// GET, and an error when nothing answers.
func TestHTTPPreviewProber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	probe := lifecycle.HTTPPreviewProber(srv.Client())
	if code, err := probe(t.Context(), srv.URL+"/"); err != nil || code != 200 {
		t.Errorf("probe of a serving preview = %d, %v; want 200", code, err)
	}
	if code, err := probe(t.Context(), srv.URL+"/broken"); err != nil || code != 502 {
		t.Errorf("probe of a broken preview = %d, %v; want 502", code, err)
	}
	url := srv.URL
	srv.Close()
	if _, err := probe(t.Context(), url); err == nil {
		t.Errorf("probe of a closed server answered")
	}
}
