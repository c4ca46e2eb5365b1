package localstack

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
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
