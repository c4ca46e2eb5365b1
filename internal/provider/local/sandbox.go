package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

// listenFD is the descriptor of the web child's inherited listening socket:
// the first of exec.Cmd.ExtraFiles.
const listenFD = 3

// childArgs returns the flags the provider passes to RunSandbox.
func childArgs(id, template string) []string {
	args := []string{"-id", id, "-template", template, "-files", filesName}
	if template == TemplateWeb {
		args = append(args, "-listen-fd", fmt.Sprint(listenFD))
	}
	return args
}

// RunSandbox is the main of a sandbox child, which the sandman binary runs
// as `sandman sandbox <flags>`; args are the flags after "sandbox":
//
//	-id ID            the sandbox id, for logs
//	-template NAME    "base" (idle until signalled) or "web"
//	-files DIR        web: the directory to serve (default "files", relative
//	                  to the working directory, which the provider sets to the
//	                  sandbox's directory)
//	-listen-fd N      web: the inherited listening socket (default 3)
//
// It runs until SIGTERM or SIGINT and then returns nil (the web server
// drains for up to 5 seconds); it ignores SIGHUP. It returns an error for
// bad flags or a server that fails, and errUnsupported off Linux.
func RunSandbox(args []string) error {
	if !supported {
		return errUnsupported
	}
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	id := fs.String("id", "", "sandbox id")
	template := fs.String("template", TemplateBase, "sandbox template: base or web")
	files := fs.String("files", filesName, "web: directory to serve")
	fd := fs.Int("listen-fd", listenFD, "web: inherited listening socket")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if !slices.Contains(Templates, *template) {
		return fmt.Errorf("sandbox: unknown template %q", *template)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("sandbox_id", *id, "template", *template)

	signal.Ignore(syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	if *template == TemplateBase {
		log.Info("sandbox idle")
		<-ctx.Done()
		log.Info("sandbox stopping")
		return nil
	}
	return serveFiles(ctx, log, *fd, *files)
}

// serveFiles serves dir over HTTP on the inherited listener fd until ctx is
// done.
func serveFiles(ctx context.Context, log *slog.Logger, fd int, dir string) error {
	f := os.NewFile(uintptr(fd), "listener")
	if f == nil {
		return fmt.Errorf("sandbox: no listener on descriptor %d", fd)
	}
	ln, err := net.FileListener(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("sandbox: listener on descriptor %d: %w", fd, err)
	}
	files := http.FileServer(http.Dir(dir))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			files.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("sandbox serving", "addr", ln.Addr().String(), "dir", dir)
	select {
	case err := <-served:
		return fmt.Errorf("sandbox: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("sandbox stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("sandbox: shut down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sandbox: serve: %w", err)
	}
	return nil
}

// indexHTML is the index.html that Create writes into a web sandbox.
func indexHTML(id string, created time.Time) []byte {
	id = html.EscapeString(id)
	return fmt.Appendf(nil, `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sandman sandbox %s</title></head>
<body>
<h1>Sandman sandbox %s</h1>
<p>A local <code>web</code> sandbox, created %s. It serves the files in its
<code>files</code> directory at this URL.</p>
</body>
</html>
`, id, id, created.UTC().Format(time.RFC3339))
}
