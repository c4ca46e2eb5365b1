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

	"github.com/sandmanhq/sandman/internal/e2b/e2btest"
)

// fakeProvider builds a provider's fake as one HTTP handler, logging one
// line per request to log, and says how to aim a client at it (printed
// after the base URL). close releases what the fake holds.
type fakeProvider func(log *slog.Logger) (h http.Handler, hint string, close func())

// fakes is the registry of `sandman fake <provider>`: one line per provider.
var fakes = map[string]fakeProvider{
	"e2b": func(log *slog.Logger) (http.Handler, string, func()) {
		f := e2btest.New(e2btest.Options{Logger: log})
		return f.Handler(), fmt.Sprintf("E2B_API_URL=<base url> E2B_API_KEY=%s (domain %s; envd at <base url>%s/<id>/health)",
			e2btest.APIKey, e2btest.Domain, e2btest.ProxyPrefix), f.Close
	},
}

// fakeCommand serves a provider's fake on its own until ctx ends:
// `sandman fake e2b -addr 127.0.0.1:PORT`. State lives in memory. It prints
// "fake <name> listening on http://<addr>" once it serves.
func fakeCommand(ctx context.Context, args []string, out, logOut io.Writer) error {
	names := slices.Sorted(maps.Keys(fakes))
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: sandman fake <%s> [-addr 127.0.0.1:PORT]", strings.Join(names, "|"))
	}
	name := args[0]
	build, ok := fakes[name]
	if !ok {
		return fmt.Errorf("no fake for provider %q; known: %s", name, strings.Join(names, ", "))
	}
	fs := flag.NewFlagSet("fake "+name, flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	h, hint, closeFake := build(log)
	defer closeFake()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
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
