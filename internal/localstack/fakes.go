package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/vercel/verceltest"
)

// The SANDMAN_PROVIDER values that run the local stack on the Daytona or
// Vercel adapter against its fake (internal/daytona/daytonatest,
// internal/vercel/verceltest), like ProviderE2BFake: sessions are stored as
// provider "daytona" or "vercel", sandboxes live in the fake's memory. The
// fake is started in-process on a loopback port, unless
// SANDMAN_DAYTONA_BASE_URL or SANDMAN_VERCEL_BASE_URL names one already
// running (`sandman fake daytona|vercel`), whose state then outlives a
// restart of the stack. The fakes send no webhooks (the sweep reconciles);
// Daytona's preview URLs (https://3000-<id>.proxy.daytona.test) do not
// resolve, Vercel's point at the fake's own /_preview/ pages, which answer
// 200 while the session runs and 410 once it stopped.
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
func providerFakeEnv(provider string, getenv func(string) string, log *slog.Logger) (func(string) string, func(), error) {
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
		handler = func(string) (http.Handler, func()) {
			o := daytonatest.StandaloneOptions()
			o.Logger = log.With("component", "daytona-fake")
			return daytonatest.NewServer(o).Handler(), func() {}
		}
	case ProviderVercelFake:
		baseEnv = app.EnvVercelBaseURL
		set[app.EnvProvider] = app.ProviderVercel
		def[app.EnvVercelToken] = verceltest.DefaultToken
		def[app.EnvVercelTeamID] = verceltest.DefaultTeamID
		def[app.EnvVercelProjectID] = verceltest.DefaultProjectID
		handler = func(base string) (http.Handler, func()) {
			f := verceltest.NewServer(verceltest.Options{RouteURL: verceltest.PreviewURLs(base)})
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
