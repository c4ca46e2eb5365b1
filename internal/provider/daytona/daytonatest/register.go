package daytonatest

import (
	"fmt"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// DefaultWebhookSecret is the Svix endpoint secret the local stack's
// daytona-fake signs its webhooks with, and /v1/webhooks/daytona verifies
// them with, when SANDMAN_DAYTONA_WEBHOOK_SECRET is unset ("whsec_" and
// the base64 of "sandman-daytona-dev-secret"). A development value only.
const DefaultWebhookSecret = "whsec_c2FuZG1hbi1kYXl0b25hLWRldi1zZWNyZXQ="

// Fake is this fake's declaration for the local stack
// (SANDMAN_PROVIDER=daytona-fake) and `sandman fake daytona`. Given a
// webhook URL (the local stack's /v1/webhooks/daytona), it sends
// Svix-signed sandbox.created and sandbox.state.updated webhooks there, as
// Daytona would. Its preview URLs (https://3000-<id>.proxy.daytona.test)
// do not resolve.
var Fake = registry.Fake{
	Name: daytona.Name,
	Serve: func(p registry.FakeParams) (http.Handler, func()) {
		o := StandaloneConfig()
		o.Logger = p.Log
		closeHooks := func() {}
		if p.WebhookURL != "" {
			secret := p.Getenv(daytona.EnvWebhookSecret)
			if secret == "" {
				secret = DefaultWebhookSecret
			}
			hooks := newSvixSender(p.WebhookURL, secret, p.Log.With("component", "daytona-fake-webhooks"))
			o.OnStateChange, closeHooks = hooks.send, hooks.close
		}
		return NewServer(o).Handler(), closeHooks
	},
	Hint:       fmt.Sprintf("DAYTONA_API_URL=<base url> DAYTONA_API_KEY=%s", DefaultAPIKey),
	BaseURLEnv: daytona.EnvBaseURL,
	Env:        map[string]string{daytona.EnvAPIKey: DefaultAPIKey, daytona.EnvWebhookSecret: DefaultWebhookSecret},
}
