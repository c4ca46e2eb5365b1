package localstack

import (
	"net/http"
	"strings"
)

// ConsoleAPI serves the console's dev routes (internal/webclient package
// doc) by forwarding each to the same route under /v1 on api with the dev
// API key, which stays on the server: the page never sees a key. Only the
// eight routes the console uses are forwarded; anything else under
// /console/api/ is 404. A browser's own Authorization or x-api-key header
// is dropped.
//
//	GET    /console/api/sessions                    → GET    /v1/sessions
//	POST   /console/api/sessions                    → POST   /v1/sessions
//	POST   /console/api/sessions/{id}/client-tokens → POST   /v1/sessions/{id}/client-tokens
//	POST   /console/api/sessions/{id}/snapshot      → POST   /v1/sessions/{id}/snapshot
//	POST   /console/api/sessions/{id}/resume        → POST   /v1/sessions/{id}/resume
//	DELETE /console/api/sessions/{id}               → DELETE /v1/sessions/{id}
//	GET    /console/api/webhook-endpoints           → GET    /v1/webhook-endpoints
//	GET    /console/api/webhook-endpoints/{id}/deliveries → GET /v1/webhook-endpoints/{id}/deliveries
func ConsoleAPI(api http.Handler, devKey string) http.Handler {
	mux := http.NewServeMux()
	forward := func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/v1" + strings.TrimPrefix(r.URL.Path, "/console/api")
		r2.URL.RawPath = ""
		r2.RequestURI = r2.URL.RequestURI()
		r2.Header.Del("Authorization")
		r2.Header.Set("x-api-key", devKey)
		api.ServeHTTP(w, r2)
	}
	for _, p := range []string{
		"GET /console/api/sessions", "POST /console/api/sessions",
		"POST /console/api/sessions/{id}/client-tokens", "POST /console/api/sessions/{id}/snapshot",
		"POST /console/api/sessions/{id}/resume", "DELETE /console/api/sessions/{id}",
		"GET /console/api/webhook-endpoints", "GET /console/api/webhook-endpoints/{id}/deliveries",
	} {
		mux.HandleFunc(p, forward)
	}
	return mux
}
