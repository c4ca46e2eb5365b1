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
)

// TestDaytonaFakeRunsTheAppAndServesItsPreview: the local stack's
// in-process Daytona fake serves its toolbox and previews on itself, so the
// adapter started on it (what `make run` with daytona-fake does) runs an
// app's command and reaches its preview: 502 while nothing listens, 200
// once the command listens.
func TestDaytonaFakeRunsTheAppAndServesItsPreview(t *testing.T) {
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hooks.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env, stop, err := providerFakeEnv(ProviderDaytonaFake, hooks.URL, func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	p, err := daytona.New(daytona.Config{BaseURL: env(app.EnvDaytonaBaseURL), APIKey: env(app.EnvDaytonaAPIKey)})
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
