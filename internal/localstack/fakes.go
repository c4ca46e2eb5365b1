package localstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonahook"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// The SANDMAN_PROVIDER values that run the local stack on the Daytona or
// Vercel adapter against its fake (internal/provider/daytona/daytonatest,
// internal/provider/vercel/verceltest), like ProviderE2BFake: sessions are stored as
// provider "daytona" or "vercel", sandboxes live in the fake's memory. The
// fake is started in-process on a loopback port, unless
// SANDMAN_DAYTONA_BASE_URL or SANDMAN_VERCEL_BASE_URL names one already
// running (`sandman fake daytona|vercel`), whose state then outlives a
// restart of the stack. The in-process Daytona fake sends Svix-signed
// sandbox.created and sandbox.state.updated webhooks to the stack's own
// /v1/webhooks/daytona, as Daytona would; Vercel sends none (the sweep
// reconciles). The in-process Daytona fake serves its toolbox at its own
// /toolbox and its previews at its own /preview/<port>-<id>/, so readiness
// runs an app's command and reaches its preview; a `sandman fake daytona`
// named by SANDMAN_DAYTONA_BASE_URL serves the toolbox there too, but hands
// out Daytona's preview URLs (https://3000-<id>.proxy.daytona.test), which
// do not resolve. Vercel's routes point at the fake's own /_preview/ pages.
// Both previews answer the provider's "nothing listens" until a started
// command listens, and stop answering once the sandbox stopped.
const (
	ProviderDaytonaFake = "daytona-fake"
	ProviderVercelFake  = "vercel-fake"
)

// DefaultDaytonaWebhookSecret is the Svix endpoint secret of
// /v1/webhooks/daytona when the local stack runs daytona-fake and
// SANDMAN_DAYTONA_WEBHOOK_SECRET is unset ("whsec_" and the base64 of
// "sandman-daytona-dev-secret"). A development value only.
const DefaultDaytonaWebhookSecret = "whsec_c2FuZG1hbi1kYXl0b25hLWRldi1zZWNyZXQ="

// providerFakeEnv starts the fake of provider (ProviderDaytonaFake or
// ProviderVercelFake) unless getenv names one already running, and returns
// internal/app's environment on top of getenv: the adapter's name as
// SANDMAN_PROVIDER, aimed at the fake with the fake's credentials (each
// unless set), and a function that stops what it started.
func providerFakeEnv(provider, stackURL string, getenv func(string) string, log *slog.Logger) (func(string) string, func(), error) {
	set := map[string]string{} // always
	def := map[string]string{} // unless getenv has it
	var baseEnv string         // the variable naming a running fake
	var handler func(base string) (http.Handler, func())
	switch provider {
	case ProviderDaytonaFake:
		baseEnv = app.EnvDaytonaBaseURL
		set[app.EnvProvider] = app.ProviderDaytona
		def[app.EnvDaytonaAPIKey] = daytonatest.DefaultAPIKey
		def[app.EnvDaytonaWebhookSecret] = DefaultDaytonaWebhookSecret
		handler = func(base string) (http.Handler, func()) {
			secret := getenv(app.EnvDaytonaWebhookSecret)
			if secret == "" {
				secret = DefaultDaytonaWebhookSecret
			}
			hooks := newSvixSender(stackURL+"/v1/webhooks/daytona", secret, log.With("component", "daytona-fake-webhooks"))
			o := daytonatest.StandaloneConfig()
			o.Logger = log.With("component", "daytona-fake")
			o.OnStateChange = hooks.send
			// The toolbox and the previews on the fake itself, so readiness
			// runs the app and probes its preview without DNS.
			o.ToolboxProxyURL = base + "/toolbox"
			o.PreviewBaseURL = base
			return daytonatest.NewServer(o).Handler(), hooks.close
		}
	case ProviderVercelFake:
		baseEnv = app.EnvVercelBaseURL
		set[app.EnvProvider] = app.ProviderVercel
		def[app.EnvVercelToken] = verceltest.DefaultToken
		def[app.EnvVercelTeamID] = verceltest.DefaultTeamID
		def[app.EnvVercelProjectID] = verceltest.DefaultProjectID
		handler = func(base string) (http.Handler, func()) {
			f := verceltest.NewServer(verceltest.Config{RouteURL: verceltest.PreviewURLs(base)})
			return f.Handler(), f.Close
		}
	default:
		return nil, nil, fmt.Errorf("no local fake for provider %q", provider)
	}
	stop := func() {}
	if base := getenv(baseEnv); base == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("listen for the %s: %w", provider, err)
		}
		base = "http://" + ln.Addr().String()
		h, closeFake := handler(base)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("provider fake stopped", "provider", provider, "err", err)
			}
		}()
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			closeFake()
			_ = srv.Shutdown(ctx)
		}
		set[baseEnv] = base
		log.Info("provider fake started in-process", "provider", provider, "base_url", base)
	}
	return func(k string) string {
		if v, ok := set[k]; ok {
			return v
		}
		if v := getenv(k); v != "" {
			return v
		}
		return def[k]
	}, stop, nil
}

// svixSender posts a Daytona fake's state changes to a webhook URL as
// Daytona does through Svix (daytonahook's body and signature), one at a
// time, in order. A delivery answered 5xx (the session is changing state)
// is retried twice, a second apart; one that still fails is logged and
// dropped (Daytona can lose events too: the sweep reconciles).
type svixSender struct {
	url, secret string
	log         *slog.Logger
	client      *http.Client
	ch          chan daytonatest.StateChange
	done        chan struct{}
	closing     atomic.Bool // no retries once the stack stops
}

func newSvixSender(url, secret string, log *slog.Logger) *svixSender {
	s := &svixSender{url: url, secret: secret, log: log, client: &http.Client{Timeout: 10 * time.Second},
		ch: make(chan daytonatest.StateChange, 256), done: make(chan struct{})}
	go s.run()
	return s
}

// send queues one change; a full queue drops it (logged).
func (s *svixSender) send(c daytonatest.StateChange) {
	select {
	case s.ch <- c:
	default:
		s.log.Warn("webhook queue full; event dropped", "sandbox_id", c.SandboxID, "new_state", c.NewState)
	}
}

// close stops the sender once the queue is delivered.
func (s *svixSender) close() {
	s.closing.Store(true)
	close(s.ch)
	<-s.done
}

func (s *svixSender) run() {
	defer close(s.done)
	for c := range s.ch {
		body := daytonahook.NewStateBody(c.SandboxID, daytonatest.DefaultOrganizationID, c.OldState, c.NewState, c.At)
		if c.OldState == "" {
			at := c.At.UTC().Format(time.RFC3339Nano)
			body = daytonahook.Body{Event: daytonahook.TypeSandboxCreated, Timestamp: at, ID: c.SandboxID,
				OrganizationID: daytonatest.DefaultOrganizationID, State: c.NewState, CreatedAt: at}
		}
		raw, err := json.Marshal(body)
		if err != nil {
			continue // a struct of strings always encodes
		}
		msgID := "msg_" + strings.ToLower(rand.Text())
		for attempt := 0; attempt < 3; attempt++ {
			if attempt > 0 {
				time.Sleep(time.Second)
			}
			status, err := s.post(msgID, raw)
			if (err == nil && status < 500) || s.closing.Load() {
				break
			}
			s.log.Debug("webhook delivery failed", "sandbox_id", c.SandboxID, "status", status, "err", err, "attempt", attempt+1)
		}
	}
}

// post delivers one signed message and returns the answer's status.
func (s *svixSender) post(msgID string, raw []byte) (int, error) {
	h, err := daytonahook.Header(s.secret, msgID, time.Now(), raw)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
