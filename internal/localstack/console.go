package localstack

import (
	"encoding/json"
	"net/http"
	"strings"

	wire "github.com/sandmanhq/sandman/internal/openapi/api"
)

// ConsoleAPI serves the console's dev routes (internal/webclient package
// doc; docs/CONSOLE.md) by forwarding each to the same route under /v1 on
// api with the dev API key, which stays on the server: the page never sees
// a key. Watching is reads only, each a route that is not activity and
// wakes nothing. The writes are two deliberate operator actions on a
// session's checkpoints, restore and fork (each asked for with a
// confirmation in the page), and the client token of the end user's view
// (console/preview.html), which is a user's page, not the console.
// Anything else under /console/api/ is 404. A browser's own Authorization
// or x-api-key header is dropped. feed, when not nil, serves GET
// /console/api/feed (ConsoleFeed).
//
// Restore and fork are refused (403 forbidden) without an Idempotency-Key
// header or with an Origin other than the stack's own: a page of another
// origin cannot send the header without a CORS preflight, which these
// routes never allow, so it cannot act with the dev key.
//
//	GET  /console/api/sessions                    → GET  /v1/sessions (with its query: filters, order, cursor, limit)
//	GET  /console/api/sessions/{id}               → GET  /v1/sessions/{id}
//	GET  /console/api/sessions/{id}/events        → GET  /v1/sessions/{id}/events
//	GET  /console/api/sessions/{id}/checkpoints   → GET  /v1/sessions/{id}/checkpoints (?limit=&cursor=)
//	POST /console/api/sessions/{id}/restore       → POST /v1/sessions/{id}/restore (Idempotency-Key required)
//	POST /console/api/sessions/{id}/fork          → POST /v1/sessions/{id}/fork (Idempotency-Key required)
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
	for _, p := range ConsoleActions {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			if msg := consoleActionRefusal(r); msg != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(wire.Error{Status: "error", Error: msg, ErrorType: "forbidden"})
				return
			}
			forward(w, r)
		})
	}
	if feed != nil {
		mux.Handle("GET /console/api/feed", feed)
	}
	return mux
}

// ConsoleRoutes are the routes ConsoleAPI forwards as they come, as
// ServeMux patterns: the reads, and the user view's client token.
var ConsoleRoutes = []string{
	"GET /console/api/sessions", "GET /console/api/sessions/{id}", "GET /console/api/sessions/{id}/events",
	"GET /console/api/sessions/{id}/checkpoints",
	"GET /console/api/pools", "GET /console/api/webhook-endpoints", "GET /console/api/webhook-endpoints/{id}/deliveries",
	"POST /console/api/sessions/{id}/client-tokens",
}

// ConsoleActions are the operator's actions ConsoleAPI forwards once the
// request shows it came from the console's own page (consoleActionRefusal).
var ConsoleActions = []string{"POST /console/api/sessions/{id}/restore", "POST /console/api/sessions/{id}/fork"}

// consoleActionRefusal says why an action is refused ("" when it is not):
// it must carry an Idempotency-Key, and an Origin, when sent, must be the
// stack's own.
func consoleActionRefusal(r *http.Request) string {
	if strings.TrimSpace(r.Header.Get("Idempotency-Key")) == "" {
		return "a console action needs an Idempotency-Key header"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return "a console action must come from the console's own page"
	}
	return ""
}
