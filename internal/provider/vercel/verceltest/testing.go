package verceltest

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
)

// Epoch is where the clock of MustStart begins.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Test is a fake served on loopback for one test.
type Test struct {
	*Server
	// HTTP is the loopback server; its URL is the API's base URL.
	HTTP *httptest.Server
	// Clock drives the fake (and the Config it hands out).
	Clock *lifecycle.ManualClock
}

// MustStart serves a fake with opts on loopback until tb ends. Unless opts
// names a Clock, the fake runs on a ManualClock set to Epoch; unless it
// names RouteURL, routes point at the fake's own /_preview/ pages.
func MustStart(tb testing.TB, opts Config) *Test {
	tb.Helper()
	clock, ok := opts.Clock.(*lifecycle.ManualClock)
	if opts.Clock == nil {
		clock = lifecycle.NewManualClock(Epoch)
		opts.Clock, ok = clock, true
	}
	if !ok {
		clock = nil
	}
	var srv *Server
	hs := httptest.NewUnstartedServer(nil)
	if opts.RouteURL == nil {
		opts.RouteURL = PreviewURLs("http://" + hs.Listener.Addr().String())
	}
	srv = NewServer(opts)
	hs.Config.Handler = srv.Handler()
	hs.Start()
	tb.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &Test{Server: srv, HTTP: hs, Clock: clock}
}

// Config returns a vercel.Config aimed at the fake: its URL, token, team,
// first project, plan maximum and clock, and a Sleep that returns at once
// (honouring ctx) so retries never sleep in tests.
func (t *Test) Config() vercel.Config {
	o := t.Server.Config()
	return vercel.Config{
		BaseURL:           t.HTTP.URL,
		Token:             o.Token,
		TeamID:            o.TeamID,
		ProjectID:         o.ProjectIDs[0],
		MaxSessionTimeout: o.MaxSessionTimeout,
		Clock:             o.Clock,
		Sleep:             fakekit.NoSleep,
		Logger:            slog.New(slog.DiscardHandler),
	}
}

// MustProvider returns a vercel.Provider for Config with change applied
// (nil for none).
func (t *Test) MustProvider(tb testing.TB, change func(*vercel.Config)) *vercel.Provider {
	tb.Helper()
	cfg := t.Config()
	if change != nil {
		change(&cfg)
	}
	p, err := vercel.New(cfg)
	if err != nil {
		tb.Fatalf("vercel.New: %v", err)
	}
	return p
}
