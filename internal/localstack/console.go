package localstack

import (
	"net/http"
	"strings"
)

// ConsoleAPI serves the console's dev routes (internal/webclient package
// doc; docs/CONSOLE.md) by forwarding each to the same route under /v1 on
// api with the dev API key, which stays on the server: the page never sees
// a key. The console only watches, so only reads are forwarded, each a
// route that is not activity and wakes nothing; the one write is the
// client token of the end user's view (console/preview.html), which is a
// user's page, not the console. Anything else under /console/api/ is 404.
// A browser's own Authorization or x-api-key header is dropped. feed, when
// not nil, serves GET /console/api/feed (ConsoleFeed).
//
//	GET  /console/api/sessions                    → GET  /v1/sessions (with its query: filters, cursor, limit)
//	GET  /console/api/sessions/{id}               → GET  /v1/sessions/{id}
//	GET  /console/api/sessions/{id}/events        → GET  /v1/sessions/{id}/events
//	GET  /console/api/pools                       → GET  /v1/pools
//	GET  /console/api/webhook-endpoints           → GET  /v1/webhook-endpoints
//	GET  /console/api/webhook-endpoints/{id}/deliveries → GET /v1/webhook-endpoints/{id}/deliveries
//	POST /console/api/sessions/{id}/client-tokens → POST /v1/sessions/{id}/client-tokens (preview.html only)
func ConsoleAPI(api http.Handler, devKey string, feed http.Handler) http.Handler {
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
	for _, p := range ConsoleRoutes {
		mux.HandleFunc(p, forward)
	}
	if feed != nil {
		mux.Handle("GET /console/api/feed", feed)
	}
	return mux
}

// ConsoleRoutes are the routes ConsoleAPI forwards, as ServeMux patterns.
var ConsoleRoutes = []string{
	"GET /console/api/sessions", "GET /console/api/sessions/{id}", "GET /console/api/sessions/{id}/events",
	"GET /console/api/pools", "GET /console/api/webhook-endpoints", "GET /console/api/webhook-endpoints/{id}/deliveries",
	"POST /console/api/sessions/{id}/client-tokens",
}
