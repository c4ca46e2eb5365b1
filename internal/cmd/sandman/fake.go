package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// fakeCommand serves a provider's fake (internal/localstack.Fakes) on its
// own until ctx ends:
// `sandman fake e2b -addr 127.0.0.1:PORT -boot-delay 1s`. State lives in
// memory. It prints
// "fake <name> listening on http://<addr>" once it serves.
func fakeCommand(ctx context.Context, args []string, out, logOut io.Writer) error {
	var names []string
	for _, f := range localstack.Fakes() {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: sandman fake <%s> [-addr 127.0.0.1:PORT] [-boot-delay 1s] [-local-previews]", strings.Join(names, "|"))
	}
	name := args[0]
	i := slices.IndexFunc(localstack.Fakes(), func(f registry.Fake) bool { return f.Name == name })
	if i < 0 {
		return fmt.Errorf("no fake for provider %q; known: %s", name, strings.Join(names, ", "))
	}
	fs := flag.NewFlagSet("fake "+name, flag.ContinueOnError)
	fs.SetOutput(logOut)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	bootDelay := fs.Duration("boot-delay", 0, "how long after its start a command listens on its port")
	localPreviews := fs.Bool("local-previews", false, "daytona: preview URLs on the fake's own address (for a local stack)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	base := "http://" + ln.Addr().String()
	f := localstack.Fakes()[i]
	h, closeFake := f.Serve(registry.FakeParams{Log: log, Base: base, Getenv: os.Getenv,
		BootDelay: *bootDelay, LocalPreviews: *localPreviews})
	hint := f.Hint
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
