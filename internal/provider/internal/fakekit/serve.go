package fakekit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"time"
)

// Logged logs one line per request to log: msg with attrs, then the
// method, path, status, query and milliseconds taken; a nil log logs
// nothing.
func Logged(log *slog.Logger, msg string, next http.Handler, attrs ...any) http.Handler {
	if log == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		log.Info(msg, append(attrs, "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"query", r.URL.RawQuery, "ms", time.Since(start).Milliseconds())...)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection (to flush a
// stream, or drop the connection).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// InProcess returns a RoundTripper that serves every request with h in
// process, so a test reaches a fake's hosts (a preview's
// https://{port}-{id}.<domain>) without DNS. A request without Host takes
// its URL's.
func InProcess(h http.Handler) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		if r.Host == "" {
			r = r.Clone(r.Context())
			r.Host = r.URL.Host
		}
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// ListenAndServe serves a fake on addr (e.g. "127.0.0.1:0") until ctx
// ends: build makes its handler, and the function that closes the fake,
// from its base URL ("http://<addr>"); ready, when non-nil, is called with
// the base URL once it listens. It returns nil after ctx ends, or the
// listen or serve error (name names the fake in it).
func ListenAndServe(ctx context.Context, addr, name string, build func(base string) (http.Handler, func()), ready func(base string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	base := "http://" + ln.Addr().String()
	h, closeFake := build(base)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(base)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve the fake %s: %w", name, err)
	case <-ctx.Done():
	}
	closeFake()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut the fake %s down: %w", name, err)
	}
	return nil
}
