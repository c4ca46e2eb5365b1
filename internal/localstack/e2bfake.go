package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// ProviderE2BFake is the SANDMAN_PROVIDER value that runs the local stack on
// the E2B adapter against the fake E2B (internal/provider/e2b/e2btest): sessions are
// stored as provider "e2b", sandboxes live in the fake's memory. The fake
// is started in-process on a loopback port, unless SANDMAN_E2B_BASE_URL
// names one already running (`sandman fake e2b`), whose state then outlives
// a restart of the stack. The fake sends no webhooks and its preview URLs
// (https://3000-<id>.e2b.test) do not resolve.
const ProviderE2BFake = "e2b-fake"

// startE2BFake returns the E2B provider aimed at the fake, starting the fake
// unless baseURL is set, and a function that stops what it started.
func startE2BFake(baseURL string, log *slog.Logger) (lifecycle.Provider, func(), error) {
	stop := func() {}
	if baseURL == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("listen for the fake e2b: %w", err)
		}
		fake := e2btest.New(e2btest.Config{Logger: log.With("component", "e2b-fake")})
		srv := &http.Server{Handler: fake.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("fake e2b stopped", "err", err)
			}
		}()
		baseURL = "http://" + ln.Addr().String()
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			fake.Close()
			_ = srv.Shutdown(ctx)
		}
		log.Info("fake e2b started in-process", "base_url", baseURL)
	}
	p, err := e2b.New(e2b.Config{
		BaseURL: baseURL, APIKey: e2btest.APIKey, Domain: e2btest.Domain, Logger: log,
		EnvdURL: func(sandboxID, _ string) string { return baseURL + e2btest.ProxyPrefix + "/" + sandboxID },
		PortURL: func(sandboxID, _ string, port int) string {
			return baseURL + e2btest.ProxyPrefix + "/" + sandboxID + "/port/" + strconv.Itoa(port) + "/"
		},
	})
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("e2b provider on the fake: %w", err)
	}
	return p, stop, nil
}

// e2bFakeEnv maps SANDMAN_PROVIDER=e2b-fake to "e2b" for internal/app.
func e2bFakeEnv(get func(string) string) func(string) string {
	return func(k string) string {
		if k == app.EnvProvider {
			return e2b.Name
		}
		return get(k)
	}
}
