package verceltest

import (
	"fmt"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
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
		return fakekit.Logged(p.Log, "request", f.Handler()), f.Close
	},
	Hint: fmt.Sprintf("VERCEL_TOKEN=%s teamId=%s project=%s (the SDK has no base URL option: route its fetch to <base url>)",
		DefaultToken, DefaultTeamID, DefaultProjectID),
	BaseURLEnv: vercel.EnvBaseURL,
	Env:        map[string]string{vercel.EnvToken: DefaultToken, vercel.EnvTeamID: DefaultTeamID, vercel.EnvProjectID: DefaultProjectID},
}
