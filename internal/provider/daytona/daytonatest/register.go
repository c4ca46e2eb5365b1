package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
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
		o.Logger, o.BootDelay, o.ToolboxProxyURL = p.Log, p.BootDelay, p.Base+"/toolbox"
		if p.LocalPreviews {
			o.PreviewBaseURL = p.Base
		}
		closeHooks := func() {}
		if p.WebhookURL != "" {
			secret := cmp.Or(p.Getenv(daytona.EnvWebhookSecret), DefaultWebhookSecret)
			o.OnStateChange, closeHooks = newSvixSender(p.WebhookURL, secret, p.Log.With("component", "daytona-fake-webhooks"))
		}
		return NewServer(o).Handler(), closeHooks
	},
	Hint: fmt.Sprintf("DAYTONA_API_URL=<base url> DAYTONA_API_KEY=%s (toolbox at <base url>/toolbox; a request with Host <port>-<id>.%s reaches that port's preview)",
		DefaultAPIKey, DefaultProxyDomain),
	BaseURLEnv: daytona.EnvBaseURL,
	Env:        map[string]string{daytona.EnvAPIKey: DefaultAPIKey, daytona.EnvWebhookSecret: DefaultWebhookSecret},
}

// StandaloneConfig returns Config for serving the fake on its own (for
// Daytona's SDKs, users' tests, or a local stack): the system clock, one
// second per transition (three for a restore from archive; a capture, a
// fork and an activation one each), and a list
// that shows a deleted sandbox for 1.5 s, as Daytona's does.
func StandaloneConfig() Config {
	return Config{
		CreateTime: time.Second, BuildTime: 2 * time.Second, StartTime: time.Second, StopTime: time.Second,
		PauseTime: time.Second, ResumeTime: time.Second, RestoreTime: 3 * time.Second,
		ArchiveTime: time.Second, DeleteTime: time.Second, ListLag: 1500 * time.Millisecond,
		SnapshotTime: time.Second, ForkTime: time.Second, ActivateTime: time.Second,
	}
}

// ProviderConfig returns a daytona.Config aimed at this fake served at
// baseURL: its key and clock, and, on a *lifecycle.ManualClock, a Sleep
// that advances the clock by the wait instead of sleeping
// (fakekit.ClockSleep), so transitions settle and timers fire as the
// adapter polls, and no test sleeps.
func (s *Server) ProviderConfig(baseURL string) daytona.Config {
	return daytona.Config{BaseURL: baseURL, APIKey: s.opts.APIKey, Clock: s.opts.Clock, Sleep: fakekit.ClockSleep(s.opts.Clock)}
}

// newSvixSender returns what posts the fake's state changes to a webhook
// URL as Daytona does through Svix (daytonahook's body and signature), on
// the kit's Sender (in order, a 5xx retried twice, then dropped), and what
// stops it.
func newSvixSender(url, secret string, log *slog.Logger) (send func(StateChange), stop func()) {
	sender := fakekit.NewSender(url, func(msgID string, at time.Time, body []byte) (http.Header, error) {
		return daytonahook.Header(secret, msgID, at, body)
	}, log)
	return func(c StateChange) {
		body := daytonahook.NewStateBody(c.SandboxID, DefaultOrganizationID, c.OldState, c.NewState, c.At)
		if c.OldState == "" {
			at := c.At.UTC().Format(time.RFC3339Nano)
			body = daytonahook.Body{Event: daytonahook.TypeSandboxCreated, Timestamp: at, ID: c.SandboxID,
				OrganizationID: DefaultOrganizationID, State: c.NewState, CreatedAt: at}
		}
		if raw, err := json.Marshal(body); err == nil { // a struct of strings always encodes
			sender.Send(raw, "sandbox_id", c.SandboxID, "new_state", c.NewState)
		}
	}, sender.Close
}
