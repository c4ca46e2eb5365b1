package webclienttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/sandmanhq/sandman/internal/webclient"
)

// Console is a fake of the local stack's console routes (the contract in
// package webclient's doc) with one scripted channel per session, so the
// console page can be driven in a browser before the real stack serves it.
// Sessions live in memory: a create is running at once with a preview at
// /preview/{id}; snapshot pauses, resume (HTTP or {"action":"resume"} on the
// channel) resumes, DELETE kills; every change is pushed on the session's
// channel. The client token of session X is "tok-X". Every request is
// recorded (Requests) so a test can prove the page does not poll.
//
// Routes: webclient.Handler's files, /console/api/… (the contract),
// GET /v1/ws?token=, GET /preview/{id}, GET /control/requests.
type Console struct {
	mu       sync.Mutex
	sessions []*fakeSession // oldest first
	requests []string
	mux      *http.ServeMux
}

type fakeSession struct {
	ID         string            `json:"id"`
	State      string            `json:"state"`
	PreviewURL *string           `json:"preview_url"`
	Metadata   map[string]string `json:"metadata"`
	channel    *Server
}

// NewConsole returns an empty Console.
func NewConsole() *Console {
	c := &Console{mux: http.NewServeMux()}
	files := webclient.Handler()
	c.mux.Handle("GET /sandman.js", files)
	c.mux.Handle("GET /console/", files)
	c.mux.HandleFunc("GET /console/api/sessions", c.list)
	c.mux.HandleFunc("POST /console/api/sessions", c.create)
	c.mux.HandleFunc("POST /console/api/sessions/{id}/client-tokens", c.token)
	c.mux.HandleFunc("POST /console/api/sessions/{id}/snapshot", c.transition("paused"))
	c.mux.HandleFunc("POST /console/api/sessions/{id}/resume", c.transition("running"))
	c.mux.HandleFunc("DELETE /console/api/sessions/{id}", c.transition("killed"))
	// No webhook endpoints: the console's webhook section shows its empty note.
	c.mux.HandleFunc("GET /console/api/webhook-endpoints", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"webhook_endpoints":[]}`))
	})
	c.mux.HandleFunc("GET /v1/ws", func(w http.ResponseWriter, r *http.Request) {
		s := c.find(strings.TrimPrefix(r.URL.Query().Get("token"), "tok-"))
		if s == nil {
			http.Error(w, `{"status":"error","error":"the client token is not valid","error_type":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		s.channel.serveWS(w, r)
	})
	c.mux.HandleFunc("GET /preview/{id}", func(w http.ResponseWriter, r *http.Request) {
		s := c.find(r.PathValue("id"))
		if s == nil || c.snapshot(s).State != "running" {
			http.Error(w, "sandbox is not running", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>preview</title><h1 id=\"preview\">preview of %s</h1>", s.ID)
	})
	c.mux.HandleFunc("GET /control/requests", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c.Requests())
	})
	return c
}

// ServeHTTP records "METHOD /path" and serves the routes of the type doc.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/control/") {
		c.mu.Lock()
		c.requests = append(c.requests, r.Method+" "+r.URL.Path)
		c.mu.Unlock()
	}
	c.mux.ServeHTTP(w, r)
}

// Requests returns every request served so far as "METHOD /path", in order
// (control routes excluded).
func (c *Console) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{}, c.requests...)
}

func (c *Console) find(id string) *fakeSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (c *Console) list(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	out := make([]fakeSession, 0, len(c.sessions))
	for _, s := range slices.Backward(c.sessions) {
		out = append(out, *s)
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out, "next_cursor": nil})
}

func (c *Console) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Metadata map[string]string `json:"metadata"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s := &fakeSession{Metadata: body.Metadata, channel: New(nil)}
	s.channel.onMessage = func(data []byte) {
		var m struct{ Action string }
		if json.Unmarshal(data, &m) == nil && m.Action == "resume" {
			c.set(context.Background(), s, "running")
		}
	}
	c.mu.Lock()
	s.ID = fmt.Sprintf("ses_%d", len(c.sessions)+1)
	c.sessions = append(c.sessions, s)
	c.mu.Unlock()
	c.set(r.Context(), s, "running")
	writeJSON(w, http.StatusCreated, c.snapshot(s))
}

func (c *Console) snapshot(s *fakeSession) fakeSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *s
}

// set moves s to state and pushes the status body on its channel.
func (c *Console) set(ctx context.Context, s *fakeSession, state string) {
	c.mu.Lock()
	s.State = state
	s.PreviewURL = nil
	if state == "running" {
		u := "/preview/" + s.ID
		s.PreviewURL = &u
	}
	status, _ := json.Marshal(map[string]any{
		"state": s.State, "sandbox_paused": state == "paused", "preview_url": s.PreviewURL,
	})
	c.mu.Unlock()
	s.channel.SetStatus(ctx, status)
}

func (c *Console) token(w http.ResponseWriter, r *http.Request) {
	s := c.find(r.PathValue("id"))
	if s == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"status": "error", "error": "no such session", "error_type": "not_found"})
		return
	}
	s.channel.SetTokens("tok-" + s.ID)
	writeJSON(w, http.StatusOK, map[string]any{
		"token": "tok-" + s.ID, "expires_at": "2099-01-01T00:00:00Z", "ws_url": "ws://" + r.Host + "/v1/ws",
	})
}

func (c *Console) transition(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.find(r.PathValue("id"))
		if s == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"status": "error", "error": "no such session", "error_type": "not_found"})
			return
		}
		c.set(r.Context(), s, to)
		snap := c.snapshot(s)
		switch to {
		case "paused":
			writeJSON(w, http.StatusOK, map[string]any{"paused": true, "session": snap})
		case "running":
			writeJSON(w, http.StatusOK, map[string]any{"preview_url": snap.PreviewURL, "session": snap})
		default:
			writeJSON(w, http.StatusOK, snap)
		}
	}
}
