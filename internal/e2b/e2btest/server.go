// Package e2btest is a fake E2B for tests: a loopback control API and a
// loopback sandbox proxy that behave as shared/providers/e2b.md describes,
// over real state (running and paused sandboxes, timeouts that pause or kill
// on the injected clock, paging by token), with faults injected on demand.
//
// The control API checks X-API-Key (401 otherwise) and decodes request
// bodies strictly (field names compared exactly), so a misspelt field name
// is a 400. The proxy serves
// envd's GET /<sandboxID>/health: 204 for a running sandbox (401 without the
// right X-Access-Token for a secure one), 502 for an absent one or a paused
// one, except that a paused sandbox with auto-resume is woken by the request,
// as E2B's proxy does. Every proxy request is counted, so a test can prove
// that a probe of a paused sandbox never went near the sandbox.
package e2btest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/e2b"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of a new Server.
const (
	// APIKey is the only key the fake control API accepts.
	APIKey = "e2b_test_key"
	// Domain is the sandbox domain the fake reports.
	Domain = "e2b.test"
	// MaxTimeout is the plan's maximum run length (E2B Hobby: 1 h); a larger
	// timeout is answered 400.
	MaxTimeout = time.Hour
	// DefaultTimeout applies when create names no timeout (ours: E2B's API
	// default, 15 s).
	DefaultTimeout = 15 * time.Second
)

// Op names one kind of request, for counting and fault injection.
type Op string

// The operations the fake serves.
const (
	OpCreate  Op = "create"  // POST /sandboxes
	OpGet     Op = "get"     // GET /sandboxes/{id}
	OpList    Op = "list"    // GET /v2/sandboxes
	OpPause   Op = "pause"   // POST /sandboxes/{id}/pause
	OpConnect Op = "connect" // POST /sandboxes/{id}/connect
	OpTimeout Op = "timeout" // POST /sandboxes/{id}/timeout
	OpKill    Op = "kill"    // DELETE /sandboxes/{id}
	OpHealth  Op = "health"  // GET <proxy>/{id}/health (envd)
)

// Fault replaces the answer to one request. The zero Status with neither
// Hang nor Drop is not a fault.
type Fault struct {
	// Status is answered with E2B's error body {"code","message"}.
	Status int
	// Message is the error body's message (default: the status text).
	Message string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Hang blocks the request until the client gives up (or the server
	// closes); Server.Hanging reports that it arrived.
	Hang bool
	// Drop closes the connection without an answer.
	Drop bool
}

// Sandbox is the fake's record of one sandbox.
type Sandbox struct {
	ID         string
	TemplateID string
	State      lifecycle.SandboxState // running or paused
	StartedAt  time.Time
	// EndAt is E2B's endAt: when the timeout fires while running, when it
	// paused while paused.
	EndAt       time.Time
	Timeout     time.Duration // the last timeout asked for
	AutoPause   bool
	AutoResume  bool
	Secure      bool
	AccessToken string // envd token of a secure sandbox
	Metadata    map[string]string
	EnvVars     map[string]string
}

func (sb *Sandbox) clone() Sandbox {
	c := *sb
	c.Metadata = cloneMap(sb.Metadata)
	c.EnvVars = cloneMap(sb.EnvVars)
	return c
}

// Server is the fake E2B. Its methods are safe for concurrent use.
type Server struct {
	// API is the control API; point Config.BaseURL at API.URL.
	API *httptest.Server
	// Proxy is the sandbox proxy serving envd; see EnvdURL.
	Proxy *httptest.Server
	// Clock drives timeouts and the times the API reports.
	Clock *lifecycle.ManualClock

	mu        sync.Mutex
	seq       int
	sandboxes map[string]*Sandbox
	seqOf     map[string]int
	faults    map[Op][]Fault
	counts    map[Op]int
	proxyHits int
	keyLeaks  int
	refused   int
	hanging   chan Op
	closing   chan struct{}
}

// NewServer starts a fake E2B on loopback and stops it when tb ends. Its
// clock starts at 2026-01-02T03:04:05Z.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{
		Clock:     lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		sandboxes: map[string]*Sandbox{},
		seqOf:     map[string]int{},
		faults:    map[Op][]Fault{},
		counts:    map[Op]int{},
		hanging:   make(chan Op, 64),
		closing:   make(chan struct{}),
	}
	api := http.NewServeMux()
	api.Handle("POST /sandboxes", s.api(OpCreate, s.create))
	api.Handle("GET /sandboxes/{id}", s.api(OpGet, s.get))
	api.Handle("GET /v2/sandboxes", s.api(OpList, s.list))
	api.Handle("POST /sandboxes/{id}/pause", s.api(OpPause, s.pause))
	api.Handle("POST /sandboxes/{id}/connect", s.api(OpConnect, s.connect))
	api.Handle("POST /sandboxes/{id}/timeout", s.api(OpTimeout, s.setTimeout))
	api.Handle("DELETE /sandboxes/{id}", s.api(OpKill, s.kill))
	proxy := http.NewServeMux()
	proxy.Handle("GET /{id}/health", s.faulty(OpHealth, http.HandlerFunc(s.health)))
	s.API = httptest.NewServer(api)
	s.Proxy = httptest.NewServer(s.countProxy(proxy))
	tb.Cleanup(func() {
		close(s.closing)
		s.API.Close()
		s.Proxy.Close()
	})
	return s
}

// Config returns an e2b.Config aimed at this server: its URLs, key, domain
// and clock, and a Sleep that returns at once (honouring ctx) so retries
// never sleep in tests.
func (s *Server) Config() e2b.Config {
	return e2b.Config{
		BaseURL: s.API.URL,
		APIKey:  APIKey,
		Domain:  Domain,
		EnvdURL: s.EnvdURL,
		Clock:   s.Clock,
		Sleep:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}
}

// EnvdURL returns the proxy URL standing in for https://49983-<id>.<domain>.
func (s *Server) EnvdURL(sandboxID, _ string) string { return s.Proxy.URL + "/" + sandboxID }

// Put stores sb as if E2B had created it, replacing any sandbox of that id.
func (s *Server) Put(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := sb.clone()
	s.store(&c)
}

// Sandbox returns the sandbox of id as the fake now holds it, after
// applying timeouts due by the clock.
func (s *Server) Sandbox(id string) (Sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	sb, ok := s.sandboxes[id]
	if !ok {
		return Sandbox{}, false
	}
	return sb.clone(), true
}

// Fail queues faults for the next requests of op, one request each.
func (s *Server) Fail(op Op, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = append(s.faults[op], faults...)
}

// Requests returns how many requests of op arrived, faulted ones included.
func (s *Server) Requests(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// ProxyRequests returns how many requests of any kind reached the proxy.
func (s *Server) ProxyRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proxyHits
}

// ProxyKeyLeaks returns how many proxy requests carried an X-API-Key header:
// the team's key must never be sent to a sandbox.
func (s *Server) ProxyKeyLeaks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyLeaks
}

// RefusedTokens returns how many health checks of a secure sandbox were
// refused for a missing or wrong X-Access-Token.
func (s *Server) RefusedTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Hanging reports the op of each request that a Hang fault is holding.
func (s *Server) Hanging() <-chan Op { return s.hanging }

// api wraps a control API handler: count, fault, key check.
func (s *Server) api(op Op, h http.HandlerFunc) http.Handler {
	return s.faulty(op, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != APIKey {
			writeError(w, http.StatusUnauthorized, "Invalid API key, it must start with 'e2b_' prefix")
			return
		}
		h(w, r)
	}))
}

// faulty counts requests of op and serves the next queued fault, if any.
func (s *Server) faulty(op Op, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[op]++
		var f Fault
		if q := s.faults[op]; len(q) > 0 {
			f, s.faults[op] = q[0], q[1:]
		}
		s.mu.Unlock()
		switch {
		case f.Hang:
			select {
			case s.hanging <- op:
			default:
			}
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
		case f.Drop:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		case f.Status != 0:
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			msg := f.Message
			if msg == "" {
				msg = http.StatusText(f.Status)
			}
			writeError(w, f.Status, msg)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// countProxy counts every proxy request and any API key sent to it.
func (s *Server) countProxy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.proxyHits++
		if r.Header.Get("X-API-Key") != "" {
			s.keyLeaks++
		}
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// store records sb, keeping its creation order for paging. Callers hold mu.
func (s *Server) store(sb *Sandbox) {
	if _, ok := s.seqOf[sb.ID]; !ok {
		s.seq++
		s.seqOf[sb.ID] = s.seq
	}
	s.sandboxes[sb.ID] = sb
}

// expire applies every timeout due by the clock: a running sandbox past its
// endAt pauses (autoPause, endAt becomes the pause time, which is the same
// instant) or is killed. Callers hold mu.
func (s *Server) expire() {
	now := s.Clock.Now()
	for id, sb := range s.sandboxes {
		if sb.State != lifecycle.SandboxRunning || sb.EndAt.After(now) {
			continue
		}
		if sb.AutoPause {
			sb.State = lifecycle.SandboxPaused
			continue
		}
		delete(s.sandboxes, id)
	}
}

// lookup returns the sandbox of the request's {id} after expiry, or answers
// 404 and returns nil. Callers hold mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *Sandbox {
	s.expire()
	id := r.PathValue("id")
	sb, ok := s.sandboxes[id]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", id))
		return nil
	}
	return sb
}

// The wire shapes, written from providers/e2b.md independently of the
// adapter's own.

type createBody struct {
	TemplateID string `json:"templateID"`
	Timeout    *int64 `json:"timeout"`
	AutoPause  bool   `json:"autoPause"`
	AutoResume *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	Metadata map[string]string `json:"metadata"`
	EnvVars  map[string]string `json:"envVars"`
	Secure   bool              `json:"secure"`
}

type createdBody struct {
	SandboxID       string  `json:"sandboxID"`
	TemplateID      string  `json:"templateID"`
	EnvdVersion     string  `json:"envdVersion"`
	EnvdAccessToken *string `json:"envdAccessToken"`
	Domain          string  `json:"domain"`
}

type detailBody struct {
	SandboxID  string            `json:"sandboxID"`
	TemplateID string            `json:"templateID"`
	State      string            `json:"state"`
	StartedAt  string            `json:"startedAt"`
	EndAt      string            `json:"endAt"`
	Metadata   map[string]string `json:"metadata"`
	Domain     string            `json:"domain"`
}

type timeoutReq struct {
	Timeout *int64 `json:"timeout"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in createBody
	if !decode(w, r, &in, "templateID", "timeout", "autoPause", "autoResume", "metadata", "envVars", "secure") {
		return
	}
	if in.TemplateID == "" {
		writeError(w, http.StatusBadRequest, "templateID is required")
		return
	}
	timeout := DefaultTimeout
	if in.Timeout != nil {
		var ok bool
		if timeout, ok = checkTimeout(w, *in.Timeout); !ok {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	sb := &Sandbox{
		ID:         fmt.Sprintf("isbx%016d", s.seq+1),
		TemplateID: in.TemplateID,
		State:      lifecycle.SandboxRunning,
		StartedAt:  now,
		EndAt:      now.Add(timeout),
		Timeout:    timeout,
		AutoPause:  in.AutoPause,
		AutoResume: in.AutoResume != nil && in.AutoResume.Enabled,
		Secure:     in.Secure,
		Metadata:   cloneMap(in.Metadata),
		EnvVars:    cloneMap(in.EnvVars),
	}
	if sb.Secure {
		sb.AccessToken = "envd-token-" + sb.ID
	}
	s.store(sb)
	writeJSON(w, http.StatusCreated, created(sb))
}

func created(sb *Sandbox) createdBody {
	out := createdBody{SandboxID: sb.ID, TemplateID: sb.TemplateID, EnvdVersion: "0.2.0", Domain: Domain}
	if sb.Secure {
		tok := sb.AccessToken
		out.EnvdAccessToken = &tok
	}
	return out
}

func detail(sb *Sandbox) detailBody {
	return detailBody{
		SandboxID: sb.ID, TemplateID: sb.TemplateID, State: string(sb.State),
		StartedAt: sb.StartedAt.Format(time.RFC3339Nano), EndAt: sb.EndAt.Format(time.RFC3339Nano),
		Metadata: cloneMap(sb.Metadata), Domain: Domain,
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.lookup(w, r); sb != nil {
		writeJSON(w, http.StatusOK, detail(sb))
	}
}

// list serves GET /v2/sandboxes: state (comma-separated), metadata (one
// url-encoded query of key=value pairs, all of which must match), limit
// (1..100, default 100) and nextToken (a token this server issued: the
// creation sequence number of the next sandbox).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains([]string{"state", "metadata", "limit", "nextToken"}, k) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown query parameter %q", k))
			return
		}
	}
	states := map[lifecycle.SandboxState]bool{lifecycle.SandboxRunning: true, lifecycle.SandboxPaused: true}
	if v := q.Get("state"); v != "" {
		states = map[lifecycle.SandboxState]bool{}
		for _, name := range strings.Split(v, ",") {
			st := lifecycle.SandboxState(name)
			if st != lifecycle.SandboxRunning && st != lifecycle.SandboxPaused {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid state %q", name))
				return
			}
			states[st] = true
		}
	}
	md, err := url.ParseQuery(q.Get("metadata"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid metadata query")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 100 {
			writeError(w, http.StatusBadRequest, "limit must be between 1 and 100")
			return
		}
	}
	from := 0
	if v := q.Get("nextToken"); v != "" {
		if from, err = strconv.Atoi(strings.TrimPrefix(v, "tok-")); err != nil || !strings.HasPrefix(v, "tok-") {
			writeError(w, http.StatusBadRequest, "invalid next token")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	var match []*Sandbox
	for _, sb := range s.sandboxes {
		if s.seqOf[sb.ID] >= from && states[sb.State] && hasMetadata(sb, md) {
			match = append(match, sb)
		}
	}
	slices.SortFunc(match, func(a, b *Sandbox) int { return s.seqOf[a.ID] - s.seqOf[b.ID] })
	if len(match) > limit {
		w.Header().Set("X-Next-Token", "tok-"+strconv.Itoa(s.seqOf[match[limit].ID]))
		match = match[:limit]
	}
	out := make([]detailBody, 0, len(match))
	for _, sb := range match {
		out = append(out, detail(sb))
	}
	writeJSON(w, http.StatusOK, out)
}

func hasMetadata(sb *Sandbox, md url.Values) bool {
	for k := range md {
		if sb.Metadata[k] != md.Get(k) {
			return false
		}
	}
	return true
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	if sb.State == lifecycle.SandboxPaused {
		writeError(w, http.StatusConflict, fmt.Sprintf("sandbox %q is already paused", sb.ID))
		return
	}
	sb.State, sb.EndAt = lifecycle.SandboxPaused, s.Clock.Now()
	w.WriteHeader(http.StatusNoContent)
}

// connect resumes a paused sandbox (201) or extends a running one's timeout
// to at least now+timeout (200).
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	var in timeoutReq
	if !decode(w, r, &in, "timeout") {
		return
	}
	if in.Timeout == nil {
		writeError(w, http.StatusBadRequest, "timeout is required")
		return
	}
	timeout, ok := checkTimeout(w, *in.Timeout)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	now := s.Clock.Now()
	sb.Timeout = timeout
	if sb.State == lifecycle.SandboxPaused {
		sb.State, sb.StartedAt, sb.EndAt = lifecycle.SandboxRunning, now, now.Add(timeout)
		writeJSON(w, http.StatusCreated, created(sb))
		return
	}
	if end := now.Add(timeout); end.After(sb.EndAt) {
		sb.EndAt = end
	}
	writeJSON(w, http.StatusOK, created(sb))
}

// setTimeout sets a running sandbox's endAt to now+timeout. A paused sandbox
// answers 404: E2B keeps timers only for running sandboxes (an assumption
// from its API's source, not from its documentation).
func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request) {
	var in timeoutReq
	if !decode(w, r, &in, "timeout") {
		return
	}
	if in.Timeout == nil {
		writeError(w, http.StatusBadRequest, "timeout is required")
		return
	}
	timeout, ok := checkTimeout(w, *in.Timeout)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	if sb.State != lifecycle.SandboxRunning {
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q is not running", sb.ID))
		return
	}
	sb.Timeout, sb.EndAt = timeout, s.Clock.Now().Add(timeout)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.lookup(w, r); sb != nil {
		delete(s.sandboxes, sb.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

// health is envd's /health behind E2B's proxy.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	sb, ok := s.sandboxes[r.PathValue("id")]
	switch {
	case !ok:
		http.Error(w, "sandbox not found", http.StatusBadGateway)
		return
	case sb.State == lifecycle.SandboxPaused && !sb.AutoResume:
		http.Error(w, "sandbox is not running", http.StatusBadGateway)
		return
	case sb.State == lifecycle.SandboxPaused:
		now := s.Clock.Now()
		sb.State, sb.StartedAt, sb.EndAt = lifecycle.SandboxRunning, now, now.Add(sb.Timeout)
	}
	if sb.Secure && r.Header.Get("X-Access-Token") != sb.AccessToken {
		s.refused++
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkTimeout validates a timeout in seconds against the plan maximum.
func checkTimeout(w http.ResponseWriter, secs int64) (time.Duration, bool) {
	if secs < 0 || secs > int64(MaxTimeout/time.Second) {
		writeError(w, http.StatusBadRequest,
			fmt.Sprintf("Timeout cannot be greater than %d hours", int64(MaxTimeout/time.Hour)))
		return 0, false
	}
	if secs == 0 {
		return DefaultTimeout, true
	}
	return time.Duration(secs) * time.Second, true
}

// decode reads a JSON object body strictly: a key that is not exactly one
// of keys (E2B's field names are case-sensitive; encoding/json is not) is a
// 400, as is a body that does not decode into v.
func decode(w http.ResponseWriter, r *http.Request, v any, keys ...string) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		writeError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return false
	}
	for k := range fields {
		if !slices.Contains(keys, k) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid body: unknown field %q", k))
			return false
		}
	}
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": status, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
