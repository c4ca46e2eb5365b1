package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// proxyReadHeaderTimeout bounds reading one request's headers at the proxy.
const proxyReadHeaderTimeout = 10 * time.Second

// CountingProxy is a reverse proxy on 127.0.0.1 in front of DynamoDB Local
// that counts every request it carries by operation (the X-Amz-Target
// header) in an OpCounter. It counts the DynamoDB requests of code that
// builds its own client, as app.New does (dynamo.NewClient on the configured
// endpoint): point that code's endpoint at URL. Requests are passed on
// unchanged, Host header included (it is part of the SigV4 signature). The
// proxy adds one loopback hop to each request. Build it with
// NewCountingProxy; Close stops it.
type CountingProxy struct {
	// URL is the proxy's endpoint, e.g. "http://127.0.0.1:41234".
	URL string
	// Ops counts the requests the proxy carried.
	Ops *OpCounter

	srv  *http.Server
	done chan struct{}
}

// NewCountingProxy starts a proxy to endpoint (DynamoDB Local's, e.g.
// "http://127.0.0.1:8000") on a free loopback port, counting into ops;
// transport errors are logged to log at warn level. Errors: an endpoint
// that is not an http(s) URL, or no port to listen on.
func NewCountingProxy(endpoint string, ops *OpCounter, log *slog.Logger) (*CountingProxy, error) {
	return NewObservedProxy(endpoint, ops, nil, log)
}

// ProxyObserver sees the requests a CountingProxy carries and their
// answers, e.g. the capacity model's log of consumed capacity units.
// Its methods are called from the proxy's request goroutines at once.
type ProxyObserver interface {
	// Request is called with each request (op is its DynamoDB operation,
	// e.g. "UpdateItem") before it goes on; it may rewrite r's body and
	// headers. It returns what Response gets for the request's answer,
	// nil when the answer need not be seen.
	Request(op string, r *http.Request) any
	// Response is called with the answer to a request whose Request
	// returned state (not nil), before the answer goes back.
	Response(op string, state any, resp *http.Response)
}

// NewObservedProxy is NewCountingProxy that also shows every request it
// carries, and its answer, to obs (nil: none).
func NewObservedProxy(endpoint string, ops *OpCounter, obs ProxyObserver, log *slog.Logger) (*CountingProxy, error) {
	target, err := url.Parse(endpoint)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("counting proxy: endpoint %q is not an http(s) URL", endpoint)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: listen: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.MaxIdleConnsPerHost = 64 // the clients behind it keep theirs open too
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			op := operation(pr.In.Header)
			ops.Add(op)
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // signed by the SDK
			if obs != nil {
				// DynamoDB Local does not check the signature over the
				// body, so an observer may rewrite it.
				if state := obs.Request(op, pr.Out); state != nil {
					*pr.Out = *pr.Out.WithContext(context.WithValue(pr.Out.Context(), observedKey{}, observed{op, state}))
				}
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if c, ok := resp.Request.Context().Value(observedKey{}).(observed); ok && obs != nil {
				obs.Response(c.op, c.state, resp)
			}
			return nil
		},
		Transport: transport,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	p := &CountingProxy{
		URL:  "http://" + ln.Addr().String(),
		Ops:  ops,
		srv:  &http.Server{Handler: rp, ReadHeaderTimeout: proxyReadHeaderTimeout},
		done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("counting proxy stopped", "err", err)
		}
		transport.CloseIdleConnections()
	}()
	return p, nil
}

// Close stops the proxy: it waits up to ctx for requests in flight, then
// closes every connection. Errors: ctx's, when requests were still in
// flight.
func (p *CountingProxy) Close(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("counting proxy: shutdown: %w", err), p.srv.Close())
	}
	<-p.done
	return err
}

// observedKey carries an observed request's state from Rewrite to
// ModifyResponse.
type observedKey struct{}

type observed struct {
	op    string
	state any
}
