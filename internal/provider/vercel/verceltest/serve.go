package verceltest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ListenAndServe serves a fake with opts on addr (e.g. "127.0.0.1:0") until
// ctx ends, for running it standalone (`sandman fake vercel`). Unless opts
// names RouteURL, routes point at the fake's own /_preview/ pages. ready,
// when non-nil, is called with the base URL and the server once it
// listens. It returns nil after ctx ends, or the listen/serve error.
func ListenAndServe(ctx context.Context, addr string, opts Config, ready func(baseURL string, s *Server)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	base := "http://" + ln.Addr().String()
	if opts.RouteURL == nil {
		opts.RouteURL = PreviewURLs(base)
	}
	s := NewServer(opts)
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(base, s)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve the fake vercel: %w", err)
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut the fake vercel down: %w", err)
	}
	return nil
}
