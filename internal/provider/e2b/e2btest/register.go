package e2btest

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Fake is this fake's declaration for the local stack
// (SANDMAN_PROVIDER=e2b-fake) and `sandman fake e2b`. It sends no webhooks,
// and its preview URLs (https://3000-<id>.e2b.test) do not resolve: the
// adapter is aimed at the fake's envd proxy instead (Adapter).
var Fake = registry.Fake{
	Name: e2b.Name,
	Serve: func(p registry.FakeParams) (http.Handler, func()) {
		f := New(Config{Logger: p.Log})
		return f.Handler(), f.Close
	},
	Hint: fmt.Sprintf("E2B_API_URL=<base url> E2B_API_KEY=%s (domain %s; envd at <base url>%s/<id>/health)",
		APIKey, Domain, ProxyPrefix),
	BaseURLEnv: e2b.EnvBaseURL,
	Env:        map[string]string{e2b.EnvAPIKey: APIKey, e2b.EnvDomain: Domain},
	Adapter: func(base string, log *slog.Logger) (lifecycle.Provider, error) {
		return e2b.New(e2b.Config{
			BaseURL: base, APIKey: APIKey, Domain: Domain, Logger: log,
			EnvdURL: func(sandboxID, _ string) string { return base + ProxyPrefix + "/" + sandboxID },
			PortURL: func(sandboxID, _ string, port int) string {
				return base + ProxyPrefix + "/" + sandboxID + "/port/" + strconv.Itoa(port) + "/"
			},
		})
	},
}
