package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// fakeOptions are what `sandman fake` passes every provider's fake.
type fakeOptions struct {
	// BootDelay is how long after its start a command "listens" on its
	// PORT (the fakes run nothing; their previews answer once it has).
	BootDelay time.Duration
	// LocalPreviews (Daytona) hands out preview URLs on the fake's own
	// address (<base>/preview/<port>-<id>/) instead of Daytona's
	// https://<port>-<id>.<proxy domain>, which does not resolve: for a
	// local stack whose readiness probes the preview.
	LocalPreviews bool
}

// fakeProvider builds a provider's fake served at base as one HTTP handler,
// logging one line per request to log, and says how to aim a client at it
// (printed after the base URL). close releases what the fake holds.
type fakeProvider func(log *slog.Logger, base string, o fakeOptions) (h http.Handler, hint string, close func())

// fakes is the registry of `sandman fake <provider>`: one line per provider.
var fakes = map[string]fakeProvider{
	"e2b": func(log *slog.Logger, _ string, fo fakeOptions) (http.Handler, string, func()) {
		f := e2btest.New(e2btest.Config{Logger: log, BootDelay: fo.BootDelay})
		return f.Handler(), fmt.Sprintf("E2B_API_URL=<base url> E2B_SANDBOX_URL=<base url> E2B_API_KEY=%s (domain %s: a request with Host <port>-<id>.%s reaches that port's preview)",
			e2btest.APIKey, e2btest.Domain, e2btest.Domain), f.Close
	},
	"daytona": func(log *slog.Logger, base string, fo fakeOptions) (http.Handler, string, func()) {
		o := daytonatest.StandaloneConfig()
		o.Logger = log
		o.BootDelay = fo.BootDelay
		o.ToolboxProxyURL = base + "/toolbox"
		if fo.LocalPreviews {
			o.PreviewBaseURL = base
		}
		f := daytonatest.NewServer(o)
		return f.Handler(), fmt.Sprintf("DAYTONA_API_URL=<base url> DAYTONA_API_KEY=%s (toolbox at <base url>/toolbox; a request with Host <port>-<id>.%s reaches that port's preview)",
			f.APIKey(), daytonatest.DefaultProxyDomain), func() {}
	},
	"vercel": func(log *slog.Logger, base string, fo fakeOptions) (http.Handler, string, func()) {
		f := verceltest.NewServer(verceltest.Config{RouteURL: verceltest.PreviewURLs(base), BootDelay: fo.BootDelay})
		return logRequests(log, f.Handler()), fmt.Sprintf("VERCEL_TOKEN=%s teamId=%s project=%s (the SDK has no base URL option: route its fetch to <base url>)",
			verceltest.DefaultToken, verceltest.DefaultTeamID, verceltest.DefaultProjectID), f.Close
	},
}

// logRequests logs one line per request (method, path, status) for fakes
// that do not log themselves.
func logRequests(log *slog.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records code and passes it on.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (to flush a
// stream).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// fakeCommand serves a provider's fake on its own until ctx ends:
// `sandman fake e2b -addr 127.0.0.1:PORT -boot-delay 1s`. State lives in memory. It prints
// "fake <name> listening on http://<addr>" once it serves.
func fakeCommand(ctx context.Context, args []string, out, logOut io.Writer) error {
	names := slices.Sorted(maps.Keys(fakes))
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: sandman fake <%s> [-addr 127.0.0.1:PORT] [-boot-delay 1s] [-local-previews]", strings.Join(names, "|"))
	}
	name := args[0]
	build, ok := fakes[name]
	if !ok {
		return fmt.Errorf("no fake for provider %q; known: %s", name, strings.Join(names, ", "))
	}
	fs := flag.NewFlagSet("fake "+name, flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	var fo fakeOptions
	fs.DurationVar(&fo.BootDelay, "boot-delay", 0, "how long after its start a command listens on its PORT")
	fs.BoolVar(&fo.LocalPreviews, "local-previews", false, "daytona: preview URLs on the fake's own address (for a local stack)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	base := "http://" + ln.Addr().String()
	h, hint, closeFake := build(log, base, fo)
	defer closeFake()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(out, "fake %s listening on %s\n  %s\n", name, base, strings.ReplaceAll(hint, "<base url>", base))
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	closeFake()
	_ = srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
