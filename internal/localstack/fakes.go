package localstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// FakeSuffix makes a SANDMAN_PROVIDER value that runs the local stack on a
// provider's real adapter against its fake (Fakes): "e2b-fake",
// "daytona-fake", "vercel-fake". Sessions are stored as the provider's
// ("e2b", ...), sandboxes live in the fake's memory. The fake is started
// in-process on a loopback port, unless the adapter's base URL variable
// (registry.Fake.BaseURLEnv, e.g. SANDMAN_DAYTONA_BASE_URL) names one
// already running (`sandman fake <provider>`), whose state then outlives a
// restart of the stack. An in-process fake of a provider that sends
// webhooks sends them to the stack's own /v1/webhooks/<format>.
const FakeSuffix = "-fake"

// fakeRun is a fake the local stack runs on.
type fakeRun struct {
	getenv   func(string) string // internal/app's environment, aimed at the fake
	provider lifecycle.Provider  // the adapter aimed at it, when the fake builds it (registry.Fake.Adapter)
	stop     func()              // stops what startFake started
}

// startFake starts the fake SANDMAN_PROVIDER=<name>-fake names, unless
// getenv names one already running, and returns internal/app's environment
// on top of getenv: the provider's name as SANDMAN_PROVIDER, its base URL
// aimed at the fake and the fake's credentials (each unless set).
// Errors: no fake of that provider, no free port, the adapter's.
func startFake(name, stackURL string, getenv func(string) string, log *slog.Logger) (fakeRun, error) {
	f, ok := findFake(name)
	if !ok {
		return fakeRun{}, fmt.Errorf("no local fake for provider %q", name)
	}
	set := map[string]string{app.EnvProvider: f.Name}
	env := func(k string) string {
		if v, ok := set[k]; ok {
			return v
		}
		if v := getenv(k); v != "" {
			return v
		}
		return f.Env[k]
	}
	run := fakeRun{getenv: env, stop: func() {}}
	base := getenv(f.BaseURLEnv)
	if base == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fakeRun{}, fmt.Errorf("listen for the %s fake: %w", name, err)
		}
		base = "http://" + ln.Addr().String()
		// LocalPreviews: the stack's readiness probes the previews, so they
		// must resolve (Daytona's own preview hosts do not).
		p := registry.FakeParams{Log: log.With("component", name+FakeSuffix), Base: base, Getenv: env, LocalPreviews: true}
		if a, ok := Adapters().Find(name); ok && a.Webhook != nil {
			p.WebhookURL = stackURL + "/v1/webhooks/" + a.Webhook.Format
		}
		h, closeFake := f.Serve(p)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("provider fake stopped", "provider", name, "err", err)
			}
		}()
		run.stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			closeFake()
			_ = srv.Shutdown(ctx)
		}
		set[f.BaseURLEnv] = base
		log.Info("provider fake started in-process", "provider", name, "base_url", base)
	}
	if f.Adapter != nil {
		p, err := f.Adapter(base, log)
		if err != nil {
			run.stop()
			return fakeRun{}, fmt.Errorf("%s provider on the fake: %w", name, err)
		}
		run.provider = p
	}
	return run, nil
}

// findFake returns the fake of provider name.
func findFake(name string) (registry.Fake, bool) {
	for _, f := range Fakes() {
		if f.Name == name {
			return f, true
		}
	}
	return registry.Fake{}, false
}

// fakeOf returns the provider a SANDMAN_PROVIDER value runs against its
// fake ("daytona" for "daytona-fake").
func fakeOf(provider string) (string, bool) { return strings.CutSuffix(provider, FakeSuffix) }
