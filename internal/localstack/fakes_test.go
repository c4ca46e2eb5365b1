package localstack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// TestStartFake: <name>-fake starts the provider's fake and aims the
// adapter's environment at it (its name, its base URL, the fake's
// credentials unless set); a fake already running at the adapter's base
// URL is used as is; E2B's adapter comes built by its fake; an unknown
// provider has no fake.
func TestStartFake(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	none := func(string) string { return "" }

	run, err := startFake(vercel.Name, "http://127.0.0.1:1", none, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stop()
	base := run.getenv(vercel.EnvBaseURL)
	if run.getenv(app.EnvProvider) != vercel.Name || base == "" || run.getenv(vercel.EnvToken) != verceltest.DefaultToken || run.provider != nil {
		t.Fatalf("environment: provider %q, base %q, token %q, provider built %v", run.getenv(app.EnvProvider), base,
			run.getenv(vercel.EnvToken), run.provider != nil)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v2/sandboxes?teamId="+verceltest.DefaultTeamID+"&project="+verceltest.DefaultProjectID, nil)
	req.Header.Set("Authorization", "Bearer "+verceltest.DefaultToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the fake answered %d to an authorised list, want 200", resp.StatusCode)
	}

	running := func(k string) string {
		if k == e2b.EnvBaseURL {
			return "http://127.0.0.1:9"
		}
		return ""
	}
	e, err := startFake(e2b.Name, "http://127.0.0.1:1", running, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	if e.getenv(e2b.EnvBaseURL) != "http://127.0.0.1:9" || e.provider == nil || e.provider.Name() != e2b.Name {
		t.Errorf("e2b-fake on a running fake: base %q, provider %v", e.getenv(e2b.EnvBaseURL), e.provider)
	}
	if _, err := startFake("modal", "", none, quiet); err == nil {
		t.Error("a provider without a fake started one")
	}
}

// TestDaytonaFakeSendsSignedWebhooksToTheStack: the in-process Daytona
// fake sends its state changes to the stack's /v1/webhooks/daytona, signed
// with the development secret the stack verifies with, and the adapter
// built from the environment startFake returns reaches the fake.
func TestDaytonaFakeSendsSignedWebhooksToTheStack(t *testing.T) {
	verifier, err := daytonahook.NewVerifier(daytonatest.DefaultWebhookSecret, lifecycle.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan lifecycle.ProviderEvent, 8)
	stack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := verifier.VerifyAndParse(r.Header, body)
		if r.URL.Path != "/v1/webhooks/daytona" || err != nil {
			t.Errorf("webhook to %s: %v", r.URL.Path, err)
		}
		got <- ev
	}))
	defer stack.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	run, err := startFake(daytona.Name, stack.URL, func(string) string { return "" }, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stop()
	settings, err := daytona.Adapter.Read(run.getenv)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := daytona.Adapter.New(registry.Params{Settings: settings, APIKey: run.getenv(daytona.EnvAPIKey),
		Clock: lifecycle.SystemClock{}, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "default", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("create on the fake: %v", err)
	}
	select {
	case ev := <-got:
		if ev.SandboxID != sb.ID {
			t.Errorf("webhook names sandbox %q, want %q", ev.SandboxID, sb.ID)
		}
	case <-ctx.Done():
		t.Fatal("no webhook reached the stack")
	}
}

// TestDaytonaFakeRunsTheAppAndServesItsPreview: the local stack's
// in-process Daytona fake serves its toolbox and previews on itself, so the
// adapter started on it (what `make run` with daytona-fake does) runs an
// app's command and reaches its preview: 502 while nothing listens, 200
// once the command listens.
func TestDaytonaFakeRunsTheAppAndServesItsPreview(t *testing.T) {
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hooks.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run, err := startFake(daytona.Name, hooks.URL, func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	defer run.stop()
	p, err := daytona.New(daytona.Config{BaseURL: run.getenv(daytona.EnvBaseURL), APIKey: run.getenv(daytona.EnvAPIKey)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Hour})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	preview, err := p.PortURL(ctx, sb.ID, 3000)
	if err != nil {
		t.Fatalf("port url: %v", err)
	}
	get := func() int {
		resp, err := http.Get(preview)
		if err != nil {
			t.Fatalf("GET the preview %s: %v (it must be served by the fake itself)", preview, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := get(); st != http.StatusBadGateway {
		t.Errorf("preview before the app = %d, want Daytona's empty 502", st)
	}
	if _, err := p.StartCommand(ctx, sb.ID, lifecycle.Command{Name: lifecycle.AppCommandName,
		Line: "python3 -m http.server $PORT", Port: 3000}); err != nil {
		t.Fatalf("start the app through the toolbox: %v", err)
	}
	if st := get(); st != http.StatusOK {
		t.Errorf("preview once the app listens = %d, want 200", st)
	}
}
