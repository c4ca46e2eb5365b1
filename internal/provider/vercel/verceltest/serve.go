package verceltest

import (
	"context"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// ListenAndServe serves a fake with opts on addr (e.g. "127.0.0.1:0") until
// ctx ends, for running it standalone (`sandman fake vercel`). Unless opts
// names RouteURL, routes point at the fake's own /_preview/ pages. ready,
// when non-nil, is called with the base URL and the server once it
// listens. It returns nil after ctx ends, or the listen/serve error.
func ListenAndServe(ctx context.Context, addr string, opts Config, ready func(baseURL string, s *Server)) error {
	var s *Server
	return fakekit.ListenAndServe(ctx, addr, "vercel", func(base string) (http.Handler, func()) {
		if opts.RouteURL == nil {
			opts.RouteURL = PreviewURLs(base)
		}
		s = NewServer(opts)
		return s.Handler(), s.Close
	}, func(base string) {
		if ready != nil {
			ready(base, s)
		}
	})
}
