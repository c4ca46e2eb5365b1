// Package webclienttest is a scripted stand-in for the client channel's
// server side, for testing sandman.js in a real browser before the real
// WebSocket handlers exist (and, later, for apps' own browser tests). A
// Server serves the embedded browser files (webclient.Handler), a test page
// at /test/ that imports /sandman.js, and a WebSocket endpoint at /v1/ws
// that behaves as docs/DESIGN.md's "Client channel" says at the wire:
//
//   - the connect is refused with 401 unless ?token= is one of the valid
//     tokens (SetTokens);
//   - an accepted connection gets {"type":"session","session":<status>}
//     with the current status (SetStatus) in answer to its
//     {"action":"hello"} (nothing before: API Gateway cannot push during
//     $connect), and every later SetStatus pushes the same message to every
//     open connection;
//   - every text message a client sends is recorded (Log).
//
// A small control API lets a script outside the process drive it (the
// browser test in testdata/client.test.mjs does):
//
//	GET  /control/log              → 200 Log as JSON
//	POST /control/status           body: the status JSON → 204, pushed to every connection
//	POST /control/tokens           body: ["tok", …] → 204, the valid tokens
//	POST /control/drop             → 204, every open connection is closed abruptly (no close frame)
//
// It also serves the gallery of the stable link's pages at /pages/
// (pages.go), whose waking pages follow this channel.
//
// The control API is for tests only: serve it on loopback.
package webclienttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/sandmanhq/sandman/internal/webclient"
)

// Connect is one connect attempt: the token it carried, whether it was
// accepted, and when (server time).
type Connect struct {
	Token    string    `json:"token"`
	Accepted bool      `json:"accepted"`
	At       time.Time `json:"at"`
}

// Message is one client → server text message: the index of its connection
// in Log.Connects, the raw JSON, and when it arrived (server time).
type Message struct {
	Conn int             `json:"conn"`
	Data json.RawMessage `json:"data"`
	At   time.Time       `json:"at"`
}

// Log is what the server saw, in order.
type Log struct {
	Connects []Connect `json:"connects"`
	Messages []Message `json:"messages"`
	// Open is the number of connections open now.
	Open int `json:"open"`
}

// Server is the scripted channel. The zero value is not usable; use New.
// Its methods are safe for concurrent use.
type Server struct {
	mu     sync.Mutex
	tokens []string
	status json.RawMessage
	log    Log
	conns  map[int]*websocket.Conn
	mux    *http.ServeMux
	// onMessage, when set, sees every client message after it is logged.
	onMessage func(data []byte)
	// changed is closed and replaced whenever the log or the open
	// connections change (see Wait).
	changed chan struct{}
}

// New returns a Server that accepts tokens and starts with status (a status
// body, e.g. {"state":"running","preview_url":…}).
func New(status json.RawMessage, tokens ...string) *Server {
	s := &Server{tokens: tokens, status: status, conns: map[int]*websocket.Conn{}, mux: http.NewServeMux(), changed: make(chan struct{})}
	files := webclient.Handler()
	s.mux.Handle("GET /sandman.js", files)
	s.mux.Handle("GET /console/", files)
	s.mux.HandleFunc("GET /test/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, testPage)
	})
	s.mux.HandleFunc("GET /v1/ws", s.serveWS)
	handlePages(s.mux)
	s.mux.HandleFunc("GET /control/log", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.Log())
	})
	s.mux.HandleFunc("POST /control/status", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil || !json.Valid(body) {
			http.Error(w, "body must be JSON", http.StatusBadRequest)
			return
		}
		s.SetStatus(r.Context(), body)
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("POST /control/tokens", func(w http.ResponseWriter, r *http.Request) {
		var tokens []string
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&tokens); err != nil {
			http.Error(w, "body must be a JSON array of strings", http.StatusBadRequest)
			return
		}
		s.SetTokens(tokens...)
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("POST /control/drop", func(w http.ResponseWriter, r *http.Request) {
		s.Drop()
		w.WriteHeader(http.StatusNoContent)
	})
	return s
}

// ServeHTTP serves the routes of the package doc.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetTokens replaces the tokens a connect may carry.
func (s *Server) SetTokens(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = slices.Clone(tokens)
}

// SetStatus stores status and pushes {"type":"session","session":status} to
// every open connection (a failed write closes that connection).
func (s *Server) SetStatus(ctx context.Context, status json.RawMessage) {
	s.mu.Lock()
	s.status = slices.Clone(status)
	msg := sessionMessage(s.status)
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			c.CloseNow()
		}
	}
}

// Drop closes every open connection without a close frame, as a lost
// network or a restarted gateway would.
func (s *Server) Drop() {
	s.mu.Lock()
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.CloseNow()
	}
}

// Wait blocks until cond holds for the log (checked now and after every
// change) or ctx ends, whose error it then returns.
func (s *Server) Wait(ctx context.Context, cond func(Log) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s.Log()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for the scripted channel: %w", ctx.Err())
		}
	}
}

// notify wakes Wait; s.mu must be held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Log returns a copy of what the server saw.
func (s *Server) Log() Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Log{
		Connects: append([]Connect{}, s.log.Connects...),
		Messages: append([]Message{}, s.log.Messages...),
		Open:     len(s.conns),
	}
}

func sessionMessage(status json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		Type    string          `json:"type"`
		Session json.RawMessage `json:"session"`
	}{"session", status})
	return b
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	s.mu.Lock()
	ok := token != "" && slices.Contains(s.tokens, token)
	idx := len(s.log.Connects)
	s.log.Connects = append(s.log.Connects, Connect{Token: token, Accepted: ok, At: time.Now().UTC()})
	s.notify()
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"status":"error","error":"the client token is not valid","error_type":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	// Any origin, like API Gateway's WebSocket API: a page embedding the
	// preview is served from its own origin.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns[idx] = c
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, idx)
		s.notify()
		s.mu.Unlock()
		c.CloseNow()
	}()
	ctx := r.Context()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText || !json.Valid(data) {
			c.Close(websocket.StatusUnsupportedData, "messages are JSON text")
			return
		}
		s.mu.Lock()
		s.log.Messages = append(s.log.Messages, Message{Conn: idx, Data: slices.Clone(data), At: time.Now().UTC()})
		s.notify()
		on := s.onMessage
		status := sessionMessage(s.status)
		s.mu.Unlock()
		// Like the real channel (and API Gateway, which cannot push during
		// $connect), the status at connect answers the client's hello.
		var m struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(data, &m) == nil && m.Action == "hello" {
			if err := c.Write(ctx, websocket.MessageText, status); err != nil {
				return
			}
		}
		if on != nil {
			on(data)
		}
	}
}

// testPage loads sandman.js and exposes it as window.sandman; the test
// script calls window.sandman.connect itself.
const testPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sandman.js test</title></head>
<body><p>sandman.js test page</p><input id="field">
<script type="module">
import * as sandman from "/sandman.js";
window.sandman = sandman;
window.sandmanReady = true;
</script></body></html>
`
