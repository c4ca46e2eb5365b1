package local

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// FrontHeader marks an answer of the provider's own preview front, never
// the app's, with why: FrontPaused, FrontGone or FrontPortClosed.
const FrontHeader = "X-Sandman-Local-Front"

// The values of FrontHeader.
const (
	// FrontPaused: the sandbox is paused; nothing inside can answer.
	FrontPaused = "paused"
	// FrontGone: the sandbox is gone (killed, or its process exited).
	FrontGone = "gone"
	// FrontPortClosed: the sandbox runs but nothing listens on the port.
	FrontPortClosed = "port-closed"
)

// frontWatchInterval is how often a request forwarded to a sandbox checks
// that the sandbox still runs: a pause during the request ends it within
// this long, as a stopped process would otherwise hold it forever.
const frontWatchInterval = 50 * time.Millisecond

// opPreview is the Op of the errors a front logs.
const opPreview = "preview"

// A front is the provider's listener on one public preview port of a
// sandbox (a web sandbox's preview, a command's mapped port). While the
// sandbox runs it forwards each request to the loopback port the sandbox's
// process listens on; while it is paused or gone it answers at once with a
// 502 of its own, as E2B's proxy answers for a sandbox that is not running
// (docs/providers/e2b.md "Preview and probe"). Without it, a paused
// sandbox's listening socket, owned by a stopped process, would accept
// connections that are never answered.
type front struct {
	id     string // the sandbox
	public int
	inner  int
	srv    *http.Server
}

// frontJSON is the body of a front's own answer: E2B's proxy's shape.
type frontJSON struct {
	SandboxID string `json:"sandboxId"`
	Message   string `json:"message"`
	Port      int    `json:"port,omitempty"`
	Code      int    `json:"code"`
}

// openFront serves sandbox id's public port on ln, forwarding to inner, and
// registers it until closeFronts(id) or Close. A Provider that is closed
// closes ln instead.
func (p *Provider) openFront(id string, ln net.Listener, inner int) {
	f := &front{id: id, public: ln.Addr().(*net.TCPAddr).Port, inner: inner}
	f.srv = &http.Server{Handler: p.frontHandler(f), ReadHeaderTimeout: 10 * time.Second}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = ln.Close()
		return
	}
	p.fronts[f.public] = f
	p.mu.Unlock()
	go func() {
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Warn("preview front stopped", "sandbox_id", id, "port", f.public, "err", err)
		}
	}()
}

// closeFronts closes every front of sandbox id.
func (p *Provider) closeFronts(id string) {
	p.mu.Lock()
	var fs []*front
	for port, f := range p.fronts {
		if f.id == id {
			fs = append(fs, f)
			delete(p.fronts, port)
		}
	}
	p.mu.Unlock()
	for _, f := range fs {
		_ = f.srv.Close()
	}
}

// closeAllFronts closes every front and refuses new ones (Close).
func (p *Provider) closeAllFronts() {
	p.mu.Lock()
	p.closed = true
	fs := p.fronts
	p.fronts = map[int]*front{}
	p.mu.Unlock()
	for _, f := range fs {
		_ = f.srv.Close()
	}
}

// adoptFronts opens a front for every public port of every sandbox in the
// state folder that has none in this Provider: sandboxes a previous control
// plane (or another process) created. A port another process holds (a
// second Provider over the same folder) is left to it and tried again on
// the next call.
func (p *Provider) adoptFronts() {
	ids, err := p.listIDs()
	if err != nil {
		return
	}
	for _, id := range ids {
		rec, err := p.readRecord(id)
		if err != nil {
			continue
		}
		for pub, inner := range rec.Upstreams {
			public, err := strconv.Atoi(pub)
			if err != nil {
				continue
			}
			p.mu.Lock()
			_, open := p.fronts[public]
			p.mu.Unlock()
			if open {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", pub))
			if err != nil {
				p.log.Debug("preview front: port held elsewhere", "sandbox_id", id, "port", public, "err", err)
				continue
			}
			p.openFront(id, ln, inner)
		}
	}
}

// frontHandler answers f's requests: its own 502 while the sandbox is
// paused or gone, the sandbox's answer while it runs (a 502 of its own when
// nothing listens there, or the sandbox pauses during the request).
func (p *Provider) frontHandler(f *front) http.Handler {
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(f.inner))}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if _, state, lerr := p.load(opPreview, f.id); lerr != nil {
				writeFront(w, f, FrontGone)
			} else if state == lifecycle.SandboxPaused {
				writeFront(w, f, FrontPaused)
			} else {
				writeFront(w, f, FrontPortClosed)
			}
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, state, err := p.load(opPreview, f.id)
		switch {
		case err != nil:
			writeFront(w, f, FrontGone)
			return
		case state == lifecycle.SandboxPaused:
			writeFront(w, f, FrontPaused)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go p.watchRunning(ctx, f.id, cancel)
		proxy.ServeHTTP(w, r.WithContext(ctx))
	})
}

// watchRunning calls cancel once sandbox id is no longer running, checking
// every frontWatchInterval until ctx is done.
func (p *Provider) watchRunning(ctx context.Context, id string, cancel func()) {
	t := time.NewTicker(frontWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, state, err := p.load(opPreview, id); err != nil || state != lifecycle.SandboxRunning {
				cancel()
				return
			}
		}
	}
}

// writeFront writes a front's own 502 for why (a FrontHeader value).
func writeFront(w http.ResponseWriter, f *front, why string) {
	body := frontJSON{SandboxID: f.id, Code: http.StatusBadGateway}
	switch why {
	case FrontPaused:
		body.Message = "The sandbox is paused"
	case FrontGone:
		body.Message = "The sandbox was not found"
	default:
		body.Message, body.Port = "The sandbox is running but port is not open", f.public
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set(FrontHeader, why)
	w.WriteHeader(http.StatusBadGateway)
	_ = json.NewEncoder(w).Encode(body)
}

// upstreamOf returns the port the sandbox's process listens on behind the
// public port public of rec: the front's target, or public itself for a
// record from before fronts (the process listens there directly).
func upstreamOf(rec record, public int) int {
	if inner, ok := rec.Upstreams[strconv.Itoa(public)]; ok {
		return inner
	}
	return public
}
