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
// Daytona would. Its toolbox is at its own /toolbox; its preview URLs are
// Daytona's (https://3000-<id>.proxy.daytona.test, which do not resolve,
// though a request with that Host reaches the preview), or, with
// LocalPreviews (the local stack; `sandman fake daytona -local-previews`),
// <base>/preview/3000-<id>/ on the fake itself.
var Fake = registry.Fake{
	Name: daytona.Name,
	Serve: func(p registry.FakeParams) (http.Handler, func()) {
		o := StandaloneConfig()
		o.Logger = p.Log
		o.BootDelay = p.BootDelay
		o.ToolboxProxyURL = p.Base + "/toolbox"
		if p.LocalPreviews {
			o.PreviewBaseURL = p.Base
		}
		closeHooks := func() {}
		if p.WebhookURL != "" {
			secret := p.Getenv(daytona.EnvWebhookSecret)
			if secret == "" {
				secret = DefaultWebhookSecret
			}
			o.OnStateChange, closeHooks = newSvixSender(p.WebhookURL, secret, p.Log.With("component", "daytona-fake-webhooks"))
		}
		return NewServer(o).Handler(), closeHooks
	},
	Hint: fmt.Sprintf("DAYTONA_API_URL=<base url> DAYTONA_API_KEY=%s (toolbox at <base url>/toolbox; a request with Host <port>-<id>.%s reaches that port's preview)",
		DefaultAPIKey, DefaultProxyDomain),
	BaseURLEnv: daytona.EnvBaseURL,
	Env:        map[string]string{daytona.EnvAPIKey: DefaultAPIKey, daytona.EnvWebhookSecret: DefaultWebhookSecret},
}
