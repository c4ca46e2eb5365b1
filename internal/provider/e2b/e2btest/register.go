package e2btest

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Fake is this fake's declaration for the local stack
// (SANDMAN_PROVIDER=e2b-fake) and `sandman fake e2b`. It sends no webhooks,
// and its preview URLs (https://3000-<id>.e2b.test) do not resolve: the
// adapter is aimed at the fake's envd proxy instead (Adapter). E2B's own
// SDK works against it with E2B_API_URL and E2B_SANDBOX_URL set to its
// base URL (Handler routes by the SDK's sandbox headers and by Host).
var Fake = registry.Fake{
	Name: e2b.Name,
	Serve: func(p registry.FakeParams) (http.Handler, func()) {
		f := New(Config{Logger: p.Log, BootDelay: p.BootDelay})
		return f.Handler(), f.Close
	},
	Hint: fmt.Sprintf("E2B_API_URL=<base url> E2B_SANDBOX_URL=<base url> E2B_API_KEY=%s (domain %s: a request with Host <port>-<id>.%s reaches that port's preview; faults: POST <base url>%s/faults)",
		APIKey, Domain, Domain, fakekit.ControlPrefix),
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
