package verceltest

import (
	"fmt"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
)

// Fake is this fake's declaration for the local stack
// (SANDMAN_PROVIDER=vercel-fake) and `sandman fake vercel`. Vercel sends no
// webhooks (the sweep reconciles); its preview URLs point at the fake's own
// /_preview/ pages, which answer 200 while the session runs and 410 once
// it stopped. It logs one line per request.
var Fake = registry.Fake{
	Name: vercel.Name,
	Serve: func(p registry.FakeParams) (http.Handler, func()) {
		f := NewServer(Config{RouteURL: PreviewURLs(p.Base), BootDelay: p.BootDelay})
		return logRequests(p, f.Handler()), f.Close
	},
	Hint: fmt.Sprintf("VERCEL_TOKEN=%s teamId=%s project=%s (the SDK has no base URL option: route its fetch to <base url>)",
		DefaultToken, DefaultTeamID, DefaultProjectID),
	BaseURLEnv: vercel.EnvBaseURL,
	Env:        map[string]string{vercel.EnvToken: DefaultToken, vercel.EnvTeamID: DefaultTeamID, vercel.EnvProjectID: DefaultProjectID},
}

// logRequests logs one line per request (method, path, status) to p.Log:
// the fake does not log itself.
func logRequests(p registry.FakeParams, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		p.Log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records code and passes it on.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (to flush a
// command's logs as they come).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
