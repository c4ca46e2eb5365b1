// Package e2btest is a fake E2B: a control API and a sandbox proxy that
// behave as docs/providers/e2b.md's section "Checked against the real
// spec" describes, over real state (running, paused, pausing and killing
// sandboxes, timeouts that pause or kill on the clock, paging by token),
// with faults injected on demand. NewServer runs it on loopback for a test
// on a manual clock; New builds one on any clock for `sandman fake e2b`.
//
// As real E2B does, the control API:
//   - serves create and connect on the v2 routes (POST /v2/sandboxes,
//     POST /v2/sandboxes/{id}/connect) and still on the deprecated
//     /sandboxes forms; get, pause, set timeout and kill on /sandboxes/{id};
//     list on GET /v2/sandboxes;
//   - checks X-API-Key (401 otherwise);
//   - ignores unknown JSON fields and unknown query parameters (each is
//     recorded, see UnknownFields, so a test can still catch a misspelling);
//   - answers create and connect with clientID, envdVersion, a string
//     envdAccessToken (v2 create is always secure) and domain; get with
//     cpuCount, memoryMB, diskSizeMB and envdVersion too; list items carry
//     no domain;
//   - takes connect without a body (timeout 300 s) and reports get's
//     lifecycle {autoResume, onTimeout};
//   - refuses timeout 0 on create (400); v2 create defaults it to 300 s, the
//     deprecated route to 15 s; a timeout above the plan's maximum run
//     length on create is a 400;
//   - caps connect and set timeout silently at the last start + MaxRunLength
//     (200/204); set timeout once that limit has passed is a 400, and set
//     timeout 0 expires the sandbox now;
//   - answers 409 to pause, connect and set timeout of a sandbox that is
//     being killed, and to set timeout and connect of one that is pausing;
//     a pausing sandbox reads as paused, a killing one as 404; pause of a
//     paused one is 409 "already paused";
//   - lists newest first, clamps limit above 100 to 100, and decodes the
//     metadata filter three times (query, then the value, then each pair),
//     as E2B's server does.
//
// The proxy serves envd's GET /<sandboxID>/health: 204 for a running
// sandbox, with or without an access token (a wrong token is still counted,
// see RefusedTokens), 502 for an absent or paused one, except that a paused
// sandbox with auto-resume is woken by the request, as E2B's proxy does.
// Every proxy request is counted, so a test can prove that a probe of a
// paused sandbox never went near the sandbox.
//
// Snapshots, create from a snapshot and forks (snapshots.go), and the
// sandboxes' files that sandboxfs's command lines read and write through
// envd (process.go), follow docs/providers/e2b.md "Checkpoints".
package e2btest

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// Defaults of a new Server.
const (
	// APIKey is the only key the fake control API accepts by default.
	APIKey = "e2b_test_key"
	// Domain is the sandbox domain the fake reports.
	Domain = "e2b.test"
	// MaxRunLength is the plan's maximum run length since the last start
	// (E2B Hobby: 1 h).
	MaxRunLength = time.Hour
	// MaxTimeout is kept for older tests: the plan maximum, MaxRunLength.
	MaxTimeout = MaxRunLength
	// DefaultTimeout applies when a v2 create names no timeout (E2B: 300 s).
	DefaultTimeout = 300 * time.Second
	// DefaultTimeoutV1 applies when a deprecated create names none (15 s).
	DefaultTimeoutV1 = 15 * time.Second
	// ClientID is the clientID every answer carries.
	ClientID = "6532622b"
	// EnvdVersion is the envdVersion of a sandbox that names none: E2B
	// snapshots and forks only sandboxes of envd 0.5.0 or later.
	EnvdVersion = "0.5.0"
	// TeamSlug is the team's namespace in the snapshots' names.
	TeamSlug = "sandman-test"
)

// Op names one kind of request, for counting and fault injection.
type Op string

// The operations the fake serves.
const (
	OpCreate  Op = "create"  // POST /v2/sandboxes (or deprecated POST /sandboxes)
	OpGet     Op = "get"     // GET /sandboxes/{id}
	OpList    Op = "list"    // GET /v2/sandboxes
	OpPause   Op = "pause"   // POST /sandboxes/{id}/pause
	OpConnect Op = "connect" // POST /v2/sandboxes/{id}/connect (or deprecated /sandboxes/{id}/connect)
	OpTimeout Op = "timeout" // POST /sandboxes/{id}/timeout
	OpKill    Op = "kill"    // DELETE /sandboxes/{id}
	OpHealth  Op = "health"  // GET <proxy>/{id}/health (envd)

	// The checkpoint operations (snapshots.go). A 500 fault with no
	// Message on OpSnapshot or OpFork answers E2B's message for a
	// checkpoint that failed midway, and kills the source as E2B does; one
	// with a Message of its own leaves it running.
	OpSnapshot       Op = "snapshot"        // POST /sandboxes/{id}/snapshots
	OpListSnapshots  Op = "list_snapshots"  // GET /snapshots
	OpDeleteSnapshot Op = "delete_snapshot" // DELETE /templates/{id}
	OpFork           Op = "fork"            // POST /sandboxes/{id}/fork
)

// ForSandbox is op for one sandbox: faults queued under it (Fail, FailAll)
// serve only the requests of op about that sandbox, before op's own.
func ForSandbox(op Op, sandboxID string) Op { return op + Op(":"+sandboxID) }

// Transition is a state a sandbox passes through.
type Transition string

// The transitions a test can hold a sandbox in (Sandbox.Transition).
const (
	Pausing Transition = "pausing" // reads as paused; set timeout and connect answer 409
	Killing Transition = "killing" // reads as 404; pause, connect and set timeout answer 409
	// Snapshotting reads as running: pause, connect, set timeout, a
	// snapshot and a fork answer 409 (a slow snapshot under way).
	Snapshotting Transition = "snapshotting"
)

// Fault replaces the answer to one request: a Status answered with E2B's
// error body {"code","message"} (the code is the status; Code is ignored)
// and its RetryAfter, a Hang (Server.Hanging reports that it arrived), a
// Drop or a Lose. The zero Fault is not a fault.
type Fault = fakekit.Fault

// Sandbox is the fake's record of one sandbox.
type Sandbox struct {
	ID         string
	TemplateID string
	State      lifecycle.SandboxState // running or paused
	// Transition, when set, is a pause or kill in progress (see Pausing and
	// Killing).
	Transition Transition
	// StartedAt is the last start (create or resume): the run-length cap
	// counts from it.
	StartedAt time.Time
	// EndAt is E2B's endAt: when the timeout fires while running, when it
	// paused while paused.
	EndAt       time.Time
	Timeout     time.Duration // the last timeout asked for
	AutoPause   bool
	AutoResume  bool
	Secure      bool
	AccessToken string // envd token
	Metadata    map[string]string
	EnvVars     map[string]string
	// Processes are the background processes envd runs (process.go).
	Processes []Process
	// Files are its files, which sandboxfs's command lines read and write
	// (nil: none yet); a snapshot or a fork copies them.
	Files *sandboxfs.Mem
	// EnvdVersion is its envd's version; "": EnvdVersion.
	EnvdVersion string
	// FromSnapshot is the snapshotID it was created from, "" for none.
	FromSnapshot string
}

func (sb *Sandbox) clone() Sandbox {
	c := *sb
	c.Metadata = maps.Clone(sb.Metadata)
	c.EnvVars = maps.Clone(sb.EnvVars)
	c.Processes = slices.Clone(sb.Processes)
	return c
}

// Config configures New. Every field is optional.
type Config struct {
	// Now tells the time. Default time.Now.
	Now func() time.Time
	// APIKey is the key the control API accepts. Default APIKey.
	APIKey string
	// MaxRunLength is the plan's maximum run length. Default MaxRunLength.
	MaxRunLength time.Duration
	// Logger, when set, receives one line per request.
	Logger *slog.Logger
	// BootDelay is how long after its start a process listens on its PORT
	// (process.go). Default 0: at once.
	BootDelay time.Duration
}

// Server is the fake E2B, safe for concurrent use. Its Kit counts requests,
// injects faults (also FailAll) and records the unknown fields and
// parameters it ignored ("<op> <name>", UnknownFields).
type Server struct {
	fakekit.Kit[Op, Fault]

	// API is the control API of NewServer; point Config.BaseURL at API.URL.
	API *httptest.Server
	// Proxy is the sandbox proxy of NewServer, serving envd; see EnvdURL.
	Proxy *httptest.Server
	// Clock drives timeouts and the times the API reports (NewServer only).
	Clock *lifecycle.ManualClock

	opts      Config
	mu        sync.Mutex
	sandboxes fakekit.Table[Sandbox]
	snapshots fakekit.Table[Snapshot]
	switches  fakekit.Switches
	pid       int
	api       http.Handler
	proxy     http.Handler
}

// New returns a fake E2B with no listener: serve Handler (or APIHandler and
// ProxyHandler) yourself, and call Close when done to release hanging
// requests.
func New(opts Config) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.APIKey, opts.MaxRunLength = cmp.Or(opts.APIKey, APIKey), cmp.Or(opts.MaxRunLength, MaxRunLength)
	s := &Server{opts: opts}
	s.SetBootDelay(opts.BootDelay)
	api := http.NewServeMux()
	api.Handle("POST /v2/sandboxes", s.handle(OpCreate, s.createV2))
	api.Handle("POST /sandboxes", s.handle(OpCreate, s.deprecated(s.createV1)))
	api.Handle("GET /sandboxes/{id}", s.handle(OpGet, s.get))
	api.Handle("GET /v2/sandboxes", s.handle(OpList, s.list))
	api.Handle("POST /sandboxes/{id}/pause", s.handle(OpPause, s.pause))
	api.Handle("POST /v2/sandboxes/{id}/connect", s.handle(OpConnect, s.connect))
	api.Handle("POST /sandboxes/{id}/connect", s.handle(OpConnect, s.deprecated(s.connect)))
	api.Handle("POST /sandboxes/{id}/timeout", s.handle(OpTimeout, s.setTimeout))
	api.Handle("DELETE /sandboxes/{id}", s.handle(OpKill, s.kill))
	s.snapshotRoutes(api)
	proxy := http.NewServeMux()
	proxy.Handle("GET /{id}/health", s.faulty(OpHealth, http.HandlerFunc(s.health)))
	s.processRoutes(proxy)
	s.api = fakekit.Logged(opts.Logger, "e2b fake", api, "part", "api")
	s.proxy = fakekit.Logged(opts.Logger, "e2b fake", s.countProxy(proxy), "part", "proxy")
	return s
}

// NewServer starts a fake E2B on loopback, on a manual clock starting at
// 2026-01-02T03:04:05Z, and stops it when tb ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := New(Config{Now: clock.Now})
	s.Clock = clock
	s.API = httptest.NewServer(s.api)
	s.Proxy = httptest.NewServer(s.proxy)
	tb.Cleanup(func() {
		s.Close()
		s.API.Close()
		s.Proxy.Close()
	})
	return s
}

// ProxyPrefix is where Handler serves the proxy: <base>/_proxy/<id>/health.
const ProxyPrefix = "/_proxy"

// Handler serves the control API and, under ProxyPrefix, the proxy, on one
// address (for `sandman fake e2b`), and under fakekit.ControlPrefix the
// fault plan (fakekit.Control: {"op": "snapshot:<id>", "fault": {"status":
// 500}} fails that sandbox's next snapshot, see ForSandbox; and the sandbox
// faults, fakekit.ControlSandboxes and Inject). A request that
// names a sandbox the way E2B's proxy reads it (a Host <port>-<id>.<Domain>,
// or the SDK's E2b-Sandbox-Id and E2b-Sandbox-Port headers on a localhost or
// IP host) goes to the proxy too, so E2B's own SDK works against it with
// E2B_API_URL and E2B_SANDBOX_URL set to the base URL.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ProxyPrefix+"/", http.StripPrefix(ProxyPrefix, s.proxy))
	control := http.NewServeMux()
	control.Handle(fakekit.ControlPrefix+"/", fakekit.Control(&s.Kit))
	fakekit.ControlSandboxes(control, s)
	mux.Handle(fakekit.ControlPrefix+"/", control)
	mux.Handle("/", s.api)
	return s.routed(mux)
}

// Config returns an e2b.Config aimed at this NewServer: its URLs, key,
// domain and clock, and a Sleep that returns at once (honouring ctx) so
// retries never sleep in tests.
func (s *Server) Config() e2b.Config {
	return e2b.Config{BaseURL: s.API.URL, APIKey: s.opts.APIKey, Domain: Domain,
		EnvdURL: s.EnvdURL, PortURL: s.PortURL, Clock: s.Clock, Sleep: fakekit.NoSleep}
}

// EnvdURL returns the proxy URL standing in for https://49983-<id>.<domain>.
func (s *Server) EnvdURL(sandboxID, _ string) string { return s.Proxy.URL + "/" + sandboxID }

// Put stores sb as if E2B had created it, replacing any sandbox of that id.
func (s *Server) Put(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := sb.clone()
	s.sandboxes.Put(c.ID, &c)
}

// Sandbox returns the sandbox of id as the fake now holds it, after
// applying timeouts due by the clock.
func (s *Server) Sandbox(id string) (Sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if sb, ok := s.sandboxes.Get(id); ok {
		return sb.clone(), true
	}
	return Sandbox{}, false
}

// FailAll answers every request of op with f (after queued Fail faults)
// until the returned function is called.
func (s *Server) FailAll(op Op, f Fault) (stop func()) { return s.FailUntil(op, f) }

// DeprecatedRequests returns how many requests used a deprecated route
// (POST /sandboxes, POST /sandboxes/{id}/connect).
func (s *Server) DeprecatedRequests() int { return s.Tally("deprecated") }

// deprecated counts a request to a deprecated route before serving it.
func (s *Server) deprecated(h func(Op, http.ResponseWriter, *http.Request)) func(Op, http.ResponseWriter, *http.Request) {
	return func(op Op, w http.ResponseWriter, r *http.Request) {
		s.Add("deprecated")
		h(op, w, r)
	}
}

// ProxyRequests returns how many requests of any kind reached the proxy.
func (s *Server) ProxyRequests() int { return s.Tally("proxy") }

// ProxyKeyLeaks returns how many proxy requests carried an X-API-Key header:
// the team's key must never be sent to a sandbox.
func (s *Server) ProxyKeyLeaks() int { return s.Tally("key leaks") }

// RefusedTokens returns how many health checks carried an X-Access-Token
// that is not the sandbox's (envd's /health answers 204 anyway).
func (s *Server) RefusedTokens() int { return s.Tally("refused tokens") }

func (s *Server) now() time.Time { return s.opts.Now().UTC() }

// handle wraps a control API handler: count, fault, key check, then it
// serves holding mu.
func (s *Server) handle(op Op, h func(Op, http.ResponseWriter, *http.Request)) http.Handler {
	return s.faulty(op, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != s.opts.APIKey {
			writeError(w, http.StatusUnauthorized, "Invalid API key, it must start with 'e2b_' prefix")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		h(op, w, r)
	}))
}

// faulty counts requests of op and serves the next queued fault, if any
// (ForSandbox's for the request's sandbox first), as E2B's error body with
// its Retry-After.
func (s *Server) faulty(op Op, next http.Handler) http.Handler {
	answer := func(w http.ResponseWriter, r *http.Request, f Fault) {
		msg := f.Prepare(w)
		if m, ok := checkpointFailure[op]; ok && f.Status == http.StatusInternalServerError && f.Message == "" {
			msg = m
			s.mu.Lock()
			s.sandboxes.Delete(r.PathValue("id"))
			s.mu.Unlock()
		}
		writeError(w, f.Status, msg)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.held(op, s.Handle(op, next, answer, ForSandbox(op, r.PathValue("id")), op)).ServeHTTP(w, r)
	})
}

// countProxy counts every proxy request and any API key sent to it.
func (s *Server) countProxy(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Add("proxy")
		if r.Header.Get("X-API-Key") != "" {
			s.Add("key leaks")
		}
		next.ServeHTTP(w, r)
	})
}

// expire applies every timeout due by the clock: a running sandbox's
// processes past their Deadline are killed, and a running sandbox past its
// endAt pauses (autoPause, endAt becomes the pause time, which is the same
// instant) or is killed. Callers hold mu.
func (s *Server) expire() {
	now := s.now()
	for _, sb := range s.sandboxes.All() {
		if sb.State == lifecycle.SandboxRunning {
			sb.Processes = slices.DeleteFunc(sb.Processes, func(p Process) bool {
				return !p.Deadline.IsZero() && !now.Before(p.Deadline)
			})
		}
		if sb.State != lifecycle.SandboxRunning || sb.Transition != "" || sb.EndAt.After(now) {
			continue
		}
		if sb.AutoPause {
			sb.State = lifecycle.SandboxPaused
			continue
		}
		s.sandboxes.Delete(sb.ID)
	}
}

// lookup returns the sandbox of the request's {id} after expiry, or answers
// 404 (also for one being killed, as E2B does) and returns nil. Callers hold
// mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *Sandbox { return s.find(w, r, false) }

// lookupAny is lookup that also returns a sandbox being killed.
func (s *Server) lookupAny(w http.ResponseWriter, r *http.Request) *Sandbox {
	return s.find(w, r, true)
}

func (s *Server) find(w http.ResponseWriter, r *http.Request, killing bool) *Sandbox {
	s.expire()
	if sb, ok := s.sandboxes.Get(r.PathValue("id")); ok && (killing || sb.Transition != Killing) {
		return sb
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q not found", r.PathValue("id")))
	return nil
}

// readsPaused reports whether sb reads as paused: paused, or pausing.
func readsPaused(sb *Sandbox) bool {
	return sb.State == lifecycle.SandboxPaused || sb.Transition == Pausing
}

// The wire shapes, written from docs/providers/e2b.md independently of the
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

var createFields = []string{"templateID", "timeout", "autoPause", "autoResume", "metadata", "envVars", "secure"}

// createdBody answers create and connect (E2B's Sandbox schema).
type createdBody struct {
	SandboxID       string `json:"sandboxID"`
	TemplateID      string `json:"templateID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	Domain          string `json:"domain"`
}

// detailBody answers get (E2B's SandboxDetail): a listed sandbox's fields,
// and its token, domain and lifecycle.
type detailBody struct {
	listedBody
	EnvdAccessToken string        `json:"envdAccessToken,omitempty"`
	Domain          string        `json:"domain"`
	Lifecycle       lifecycleBody `json:"lifecycle"`
}

// lifecycleBody is get's lifecycle (E2B's SandboxLifecycle).
type lifecycleBody struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"` // "pause" or "kill"
}

// listedBody is one item of list (E2B's ListedSandbox): no domain.
type listedBody struct {
	SandboxID   string            `json:"sandboxID"`
	TemplateID  string            `json:"templateID"`
	ClientID    string            `json:"clientID"`
	State       string            `json:"state"`
	StartedAt   string            `json:"startedAt"`
	EndAt       string            `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	EnvdVersion string            `json:"envdVersion"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

type timeoutReq struct {
	Timeout *int64 `json:"timeout"`
}

func (s *Server) createV2(op Op, w http.ResponseWriter, r *http.Request) { s.create(op, w, r, true) }
func (s *Server) createV1(op Op, w http.ResponseWriter, r *http.Request) { s.create(op, w, r, false) }

// create serves both create routes; v2 is always secure and defaults the
// timeout to 300 s, the deprecated one to 15 s.
func (s *Server) create(op Op, w http.ResponseWriter, r *http.Request, v2 bool) {
	var in createBody
	if !s.decode(op, w, r, &in, createFields...) {
		return
	}
	s.noteQuery(op, r)
	if in.TemplateID == "" {
		writeError(w, http.StatusBadRequest, "templateID is required")
		return
	}
	timeout := DefaultTimeoutV1
	if v2 {
		timeout = DefaultTimeout
	}
	if in.Timeout != nil {
		switch secs := *in.Timeout; {
		case secs <= 0:
			writeError(w, http.StatusBadRequest, "Timeout must be greater than 0")
			return
		case secs > int64(s.opts.MaxRunLength/time.Second):
			writeError(w, http.StatusBadRequest,
				fmt.Sprintf("Timeout cannot be greater than %d hours", int64(s.opts.MaxRunLength/time.Hour)))
			return
		default:
			timeout = time.Duration(secs) * time.Second
		}
	}
	now := s.now()
	snap := s.resolve(in.TemplateID)
	if snap == nil && strings.ContainsAny(in.TemplateID, "/:") { // a snapshot's id, not a template's
		writeError(w, http.StatusNotFound, fmt.Sprintf("template '%s' not found", in.TemplateID))
		return
	}
	sb := &Sandbox{
		ID:         s.newID(),
		TemplateID: in.TemplateID,
		State:      lifecycle.SandboxRunning,
		StartedAt:  now,
		EndAt:      now.Add(timeout),
		Timeout:    timeout,
		AutoPause:  in.AutoPause,
		AutoResume: in.AutoResume != nil && in.AutoResume.Enabled,
		Secure:     in.Secure || v2,
		Metadata:   maps.Clone(in.Metadata),
		EnvVars:    maps.Clone(in.EnvVars),
	}
	if sb.Secure {
		sb.AccessToken = "envd-token-" + sb.ID
	}
	if snap != nil {
		sb.TemplateID, sb.FromSnapshot, sb.Files = snap.TemplateID, snap.ID, snap.Files.Clone()
		sb.Processes = slices.Clone(snap.Processes)
	}
	s.sandboxes.Put(sb.ID, sb)
	fakekit.WriteJSON(w, http.StatusCreated, created(sb))
}

func created(sb *Sandbox) createdBody {
	return createdBody{SandboxID: sb.ID, TemplateID: sb.TemplateID, ClientID: ClientID,
		EnvdVersion: cmp.Or(sb.EnvdVersion, EnvdVersion), EnvdAccessToken: sb.AccessToken, Domain: Domain}
}

func stateOf(sb *Sandbox) string {
	if readsPaused(sb) {
		return string(lifecycle.SandboxPaused)
	}
	return string(sb.State)
}

func detail(sb *Sandbox) detailBody {
	return detailBody{listedBody: listed(sb), EnvdAccessToken: sb.AccessToken, Domain: Domain,
		Lifecycle: lifecycleBody{AutoResume: sb.AutoResume, OnTimeout: map[bool]string{true: "pause", false: "kill"}[sb.AutoPause]}}
}

func listed(sb *Sandbox) listedBody {
	return listedBody{
		SandboxID: sb.ID, TemplateID: sb.TemplateID, ClientID: ClientID, State: stateOf(sb),
		StartedAt: sb.StartedAt.Format(time.RFC3339Nano), EndAt: sb.EndAt.Format(time.RFC3339Nano),
		CPUCount: 2, MemoryMB: 512, DiskSizeMB: 1024, EnvdVersion: cmp.Or(sb.EnvdVersion, EnvdVersion), Metadata: maps.Clone(sb.Metadata),
	}
}

func (s *Server) get(op Op, w http.ResponseWriter, r *http.Request) {
	s.noteQuery(op, r)
	if sb := s.lookup(w, r); sb != nil {
		fakekit.WriteJSON(w, http.StatusOK, detail(sb))
	}
}

// note records an ignored field or parameter (UnknownFields).
func (s *Server) note(op Op, name string) { s.Note(string(op) + " " + name) }

// noteQuery records every query parameter of a route that is not one of
// known.
func (s *Server) noteQuery(op Op, r *http.Request, known ...string) {
	for k := range r.URL.Query() {
		if !slices.Contains(known, k) {
			s.note(op, k)
		}
	}
}

// decode reads a JSON object body: a key that is not exactly one of keys
// (E2B's field names are case-sensitive; encoding/json is not) is ignored,
// as E2B ignores it, and recorded (UnknownFields); a body that is not a
// JSON object, or a known field of the wrong type, is a 400. An empty body
// is an empty object.
func (s *Server) decode(op Op, w http.ResponseWriter, r *http.Request, v any, keys ...string) bool {
	unknown, err := fakekit.ReadObject(w, r, v, true, keys...)
	for _, k := range unknown {
		s.note(op, k)
	}
	switch {
	case errors.Is(err, fakekit.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid body: "+err.Error())
	default:
		return true
	}
	return false
}

func writeError(w http.ResponseWriter, status int, msg string) {
	fakekit.WriteJSON(w, status, map[string]any{"code": status, "message": msg})
}
