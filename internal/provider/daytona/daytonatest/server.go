// Package daytonatest is a fake Daytona control API for tests and for local
// runs: a stateful, in-memory net/http server that behaves as
// docs/providers/daytona.md describes. It keeps real sandbox state on an
// injected clock: transitional states (creating, starting, stopping,
// restoring, destroying...) that settle after configurable times, 409 while a
// change is in flight (state != desiredState), auto-stop, auto-pause,
// auto-archive, auto-delete and TTL timers counted from lastActivityAt,
// label filters with cursors, preview URLs whose token changes on every
// start from stopped or archived, suffixed rate-limit headers
// (X-RateLimit-*-<bucket>, Retry-After-<bucket> on 429), Daytona's error
// body, and optionally an eventually consistent list.
//
// It serves the paths at its root and under /api (Daytona's SDK appends
// /sandbox/... to its apiUrl). Faults (429, 5xx, dropped connections) are
// injected per operation with Fail; every request is counted, as is every
// start that woke a sandbox, so a test can prove that a probe of a stopped
// sandbox never started it.
//
// NewServer and Handler serve it standalone (StandaloneConfig); Start
// serves it for a test, and ProviderConfig aims the adapter at it with a
// Sleep that advances a manual clock. Server is safe for concurrent use.
package daytonatest

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Defaults of Config.
const (
	// DefaultAPIKey is the only key the fake accepts unless Config.APIKey
	// says otherwise.
	DefaultAPIKey = "dtn_test_key"
	// DefaultProxyDomain is the preview proxy domain of preview URLs.
	DefaultProxyDomain = "proxy.daytona.test"
	// DefaultOrganizationID is the organizationId of every sandbox.
	DefaultOrganizationID = "org-test"
	// DefaultTarget is the region of sandboxes created without target.
	DefaultTarget = "us"
	// DefaultClass is the sandboxClass of new sandboxes; it cannot pause
	// (Daytona: only linux-vm and windows can, others answer 422).
	DefaultClass = "container"
)

// The sandbox states of daytona.md "State machine".
const (
	StateCreating         = "creating"
	StateRestoring        = "restoring"
	StateDestroyed        = "destroyed"
	StateDestroying       = "destroying"
	StateStarted          = "started"
	StateStopped          = "stopped"
	StateStarting         = "starting"
	StateStopping         = "stopping"
	StateError            = "error"
	StateBuildFailed      = "build_failed"
	StatePendingBuild     = "pending_build"
	StateBuildingSnapshot = "building_snapshot"
	StateUnknown          = "unknown"
	StatePullingSnapshot  = "pulling_snapshot"
	StateArchived         = "archived"
	StateArchiving        = "archiving"
	StateResizing         = "resizing"
	StateSnapshotting     = "snapshotting"
	StateForking          = "forking"
	StatePausing          = "pausing"
	StatePaused           = "paused"
	StateResuming         = "resuming"
)

// The rate-limit buckets of daytona.md "REST API".
const (
	BucketAuthenticated = "authenticated"
	BucketCreate        = "sandbox-create"
	BucketLifecycle     = "sandbox-lifecycle"
)

// Op names one kind of request, for counting and fault injection.
type Op string

// The operations the fake serves. OpAny in Fail matches every operation.
const (
	OpAny          Op = ""
	OpCreate       Op = "create"        // POST /sandbox
	OpGet          Op = "get"           // GET /sandbox/{id}
	OpList         Op = "list"          // GET /sandbox
	OpStart        Op = "start"         // POST /sandbox/{id}/start
	OpStop         Op = "stop"          // POST /sandbox/{id}/stop
	OpPause        Op = "pause"         // POST /sandbox/{id}/pause
	OpArchive      Op = "archive"       // POST /sandbox/{id}/archive
	OpRecover      Op = "recover"       // POST /sandbox/{id}/recover
	OpDelete       Op = "delete"        // DELETE /sandbox/{id}
	OpActivity     Op = "last-activity" // POST /sandbox/{id}/last-activity
	OpTimer        Op = "timer"         // POST /sandbox/{id}/{autostop,autopause,autoarchive,autodelete,ttl}/{min}
	OpLabels       Op = "labels"        // PUT /sandbox/{id}/labels
	OpPreview      Op = "preview-url"   // GET /sandbox/{id}/ports/{port}/preview-url
	OpSigned       Op = "signed-preview-url"
	OpToolboxProxy Op = "toolbox-proxy-url" // GET /sandbox/{id}/toolbox-proxy-url
)

// bucketOf is the rate-limit bucket of each operation.
func bucketOf(op Op) string {
	switch op {
	case OpCreate:
		return BucketCreate
	case OpStart, OpStop, OpPause, OpArchive, OpDelete, OpRecover:
		return BucketLifecycle
	default:
		return BucketAuthenticated
	}
}

// Config configures a Server. The zero value is a fake whose transitions
// settle at once, whose list is consistent, with tier-1 rate limits.
type Config struct {
	// APIKey is the accepted bearer key. Default DefaultAPIKey.
	APIKey string
	// Clock drives transitions, timers and reported times. Default the
	// system clock; tests pass a *lifecycle.ManualClock.
	Clock lifecycle.Clock
	// ProxyDomain is the preview domain. Default DefaultProxyDomain.
	ProxyDomain string
	// ToolboxProxyURL is every sandbox's toolboxProxyUrl; the fake serves
	// the toolbox at its own /toolbox. Default "https://toolbox.<ProxyDomain>"
	// (Start: the test server's /toolbox).
	ToolboxProxyURL string
	// PreviewBaseURL, when set, is where the fake itself is reached: the
	// preview URLs it hands out are <PreviewBaseURL>/preview/{port}-{id}/
	// (served by the fake) instead of https://{port}-{id}.<ProxyDomain>,
	// so a local stack reaches them without DNS. Default "".
	PreviewBaseURL string
	// BootDelay is how long after its exec a toolbox command listens on
	// the port of its PORT=<n> (the preview answers 502 until then).
	// Default 0: at once.
	BootDelay time.Duration
	// OrganizationID is every sandbox's organizationId.
	// Default DefaultOrganizationID.
	OrganizationID string
	// Class is the sandboxClass of new sandboxes. Default DefaultClass;
	// "linux-vm" makes them pause-capable.
	Class string
	// Snapshots, when non-nil, are the snapshot names create accepts (400
	// otherwise); nil accepts any name.
	Snapshots []string

	// How long each transitional state lasts before it settles, on Clock.
	// Zero settles at once (the answer already carries the settled state),
	// except that Create and Build always answer creating/pending_build
	// when non-zero.
	CreateTime  time.Duration // creating → started (snapshot path)
	BuildTime   time.Duration // pending_build → started (buildInfo path)
	StartTime   time.Duration // starting → started
	StopTime    time.Duration // stopping → stopped
	PauseTime   time.Duration // pausing → paused
	ResumeTime  time.Duration // resuming → started
	RestoreTime time.Duration // restoring → started (from archived)
	ArchiveTime time.Duration // archiving → archived
	DeleteTime  time.Duration // destroying → destroyed (then GET is 404)

	// ListLag keeps a destroyed sandbox in list answers, with the state it
	// had before the delete, this long after it was destroyed
	// (docs/providers/daytona.md "REST API": the list is eventually
	// consistent, a deleted sandbox reappeared for 1-2 s). Default 0: a
	// consistent list.
	ListLag time.Duration

	// RateLimits are requests per minute per bucket (BucketAuthenticated,
	// BucketCreate, BucketLifecycle); a missing bucket takes Daytona's
	// tier-1 limit (10000, 300, 10000). Windows are whole minutes of Clock.
	RateLimits map[string]int

	// Logger, when set, gets one line per request: method, path, status.
	Logger *slog.Logger

	// OnStateChange, when set, is called (outside the server's lock, in
	// order) with every state change: the fields of Daytona's
	// sandbox.state.updated webhook.
	OnStateChange func(StateChange)
}

// StateChange is one sandbox state change, as Daytona's
// sandbox.state.updated webhook reports it. A new sandbox's first change
// has OldState "" (Daytona sends sandbox.created for it).
type StateChange struct {
	SandboxID string
	OldState  string
	NewState  string
	At        time.Time
}

// Fault replaces the answer to one request. The zero Fault is no fault.
type Fault struct {
	// Status is answered with Daytona's error body. A 429 also carries
	// Retry-After-<bucket> (the operation's bucket) of RetryAfter seconds,
	// and the 429 message "ThrottlerException: Too Many Requests".
	Status int
	// Message overrides the error body's message.
	Message string
	// RetryAfter is the 429's Retry-After-<bucket> in seconds (default 1).
	RetryAfter int
	// PlainRetryAfter sends the unsuffixed Retry-After header instead (as
	// Daytona does only when throttling failed authentications).
	PlainRetryAfter bool
	// Drop closes the connection without an answer.
	Drop bool
}

// Effect says what f does (fakekit.Kit.Handle).
func (f Fault) Effect() fakekit.Effect {
	switch {
	case f.Drop:
		return fakekit.Drop
	case f.Status != 0:
		return fakekit.Answer
	}
	return fakekit.Serve
}

// Sandbox is the fake's record of one sandbox.
type Sandbox struct {
	ID             string
	Name           string
	State          string
	DesiredState   string
	ErrorReason    string
	Recoverable    bool
	Snapshot       string
	Labels         map[string]string
	Env            map[string]string
	Public         bool
	Target         string
	Class          string
	CPU, GPU       int
	Memory, Disk   int
	AutoStop       int // minutes, 0 = off
	AutoPause      int // minutes, 0 = off
	AutoArchive    int // minutes, 0 = the maximum (30 days)
	AutoDelete     int // minutes, -1 = off, 0 = when it stops
	AutoDestroyAt  time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	LastActivityAt time.Time
	// Token is the current preview token; it changes on every start from
	// stopped or archived.
	Token string
	// Stuck, when true, keeps the sandbox in its transitional state
	// (daytona.md: sandboxes stuck for hours in starting or destroying).
	Stuck bool

	settleAt time.Time // when a transitional state settles
	next     string    // the state it settles to
}

func (sb *Sandbox) clone() Sandbox {
	c := *sb
	c.Labels = maps.Clone(sb.Labels)
	c.Env = maps.Clone(sb.Env)
	return c
}

// tombstone is a destroyed sandbox still seen by an eventually consistent
// list.
type tombstone struct {
	sb    Sandbox
	until time.Time
}

// Server is the fake Daytona. Its Kit counts requests (Requests), injects
// faults (Fail, FailUntil), records the unknown create fields
// (UnknownFields) and sets the boot delay (SetBootDelay).
type Server struct {
	fakekit.Kit[Op, Fault]
	opts Config

	mu         sync.Mutex
	tokenSeq   int
	sandboxes  fakekit.Table[Sandbox]
	tombstones []tombstone
	window     map[string]int // requests per bucket in the current minute
	windowAt   time.Time
	pending    []StateChange
	notify     sync.Mutex                         // serializes OnStateChange calls
	procs      map[string]map[string]*toolSession // sandbox ID → toolbox session ID → session
	cmdSeq     int
}

// NewServer returns a fake Daytona with opts' defaults filled in. Serve it
// with Handler (e.g. httptest.NewServer(s.Handler()) or http.Server).
func NewServer(opts Config) *Server {
	if opts.Clock == nil {
		opts.Clock = lifecycle.SystemClock{}
	}
	opts.APIKey, opts.ProxyDomain = cmp.Or(opts.APIKey, DefaultAPIKey), cmp.Or(opts.ProxyDomain, DefaultProxyDomain)
	opts.ToolboxProxyURL = cmp.Or(opts.ToolboxProxyURL, "https://toolbox."+opts.ProxyDomain)
	opts.OrganizationID, opts.Class = cmp.Or(opts.OrganizationID, DefaultOrganizationID), cmp.Or(opts.Class, DefaultClass)
	s := &Server{opts: opts, window: map[string]int{}, procs: map[string]map[string]*toolSession{}}
	s.SetBootDelay(opts.BootDelay)
	return s
}

// Start serves a new fake with opts on a loopback httptest server that is
// closed when tb ends, and returns both.
func Start(tb testing.TB, opts Config) (*Server, *httptest.Server) {
	tb.Helper()
	s := NewServer(opts)
	hs := httptest.NewServer(s.Handler())
	tb.Cleanup(hs.Close)
	if opts.ToolboxProxyURL == "" {
		s.mu.Lock()
		s.opts.ToolboxProxyURL = hs.URL + "/toolbox"
		s.mu.Unlock()
	}
	return s, hs
}

// APIKey returns the bearer key the fake accepts.
func (s *Server) APIKey() string { return s.opts.APIKey }

// Handler returns the fake's HTTP handler: the routes at the root and
// under /api, the toolbox under /toolbox/{id}, and a request whose Host is
// {port}-{id}.<ProxyDomain> as that port's preview.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/api"} {
		route := func(pattern string, op Op, h func(http.ResponseWriter, *http.Request)) {
			method, path, _ := strings.Cut(pattern, " ")
			mux.Handle(method+" "+prefix+path, s.wrap(op, h))
		}
		route("POST /sandbox", OpCreate, s.create)
		route("GET /sandbox", OpList, s.list)
		route("GET /sandbox/{id}", OpGet, s.get)
		route("DELETE /sandbox/{id}", OpDelete, s.transition(OpDelete))
		route("POST /sandbox/{id}/start", OpStart, s.transition(OpStart))
		route("POST /sandbox/{id}/stop", OpStop, s.transition(OpStop))
		route("POST /sandbox/{id}/pause", OpPause, s.transition(OpPause))
		route("POST /sandbox/{id}/archive", OpArchive, s.transition(OpArchive))
		route("POST /sandbox/{id}/recover", OpRecover, s.recover)
		route("POST /sandbox/{id}/last-activity", OpActivity, s.lastActivity)
		route("POST /sandbox/{id}/{timer}/{min}", OpTimer, s.timer)
		route("PUT /sandbox/{id}/labels", OpLabels, s.labels)
		route("GET /sandbox/{id}/ports/{port}/preview-url", OpPreview, s.previewURL)
		route("GET /sandbox/{id}/ports/{port}/signed-preview-url", OpSigned, s.signedPreviewURL)
		route("GET /sandbox/{id}/toolbox-proxy-url", OpToolboxProxy, s.toolboxProxy)
	}
	s.toolboxRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot %s %s", r.Method, r.URL.Path))
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if port, id, ok := fakekit.PortHost(r.Host, s.opts.ProxyDomain); ok {
			s.preview(w, r, port, id)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/preview/"); ok {
			label, _, _ := strings.Cut(rest, "/")
			if port, id, ok := fakekit.PortHost(label+"."+s.opts.ProxyDomain, s.opts.ProxyDomain); ok {
				s.preview(w, r, port, id)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
	return fakekit.Logged(s.opts.Logger, "fake daytona", h)
}

// Put stores sb as if Daytona held it, replacing a sandbox of that id.
// Empty fields get defaults: DesiredState the one State implies, Class,
// Target, Token, and the times from the clock. The timers are taken as
// given: AutoDelete 0 makes an ephemeral sandbox, so pass -1 for "off". A
// transitional State put here stays until Edit changes it.
func (s *Server) Put(sb Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := sb.clone()
	now := s.opts.Clock.Now().UTC()
	c.DesiredState, c.Class, c.Target = cmp.Or(c.DesiredState, desiredOf(c.State)), cmp.Or(c.Class, s.opts.Class), cmp.Or(c.Target, DefaultTarget)
	for _, t := range []*time.Time{&c.CreatedAt, &c.UpdatedAt, &c.LastActivityAt} {
		if t.IsZero() {
			*t = now
		}
	}
	if c.Token == "" {
		c.Token = s.newToken()
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	s.sandboxes.Put(c.ID, &c)
}

// Sandbox returns the sandbox of id after applying everything due by the
// clock; false when it is destroyed (GET would be 404).
func (s *Server) Sandbox(id string) (Sandbox, bool) {
	s.mu.Lock()
	s.tick()
	sb, ok := s.sandboxes.Get(id)
	var c Sandbox
	if ok {
		c = sb.clone()
	}
	s.mu.Unlock()
	s.flush()
	return c, ok
}

// Edit applies f to the stored sandbox of id (for tests that need a state
// the API cannot reach, such as error). It reports whether id exists.
func (s *Server) Edit(id string, f func(*Sandbox)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes.Get(id)
	if ok {
		f(sb)
	}
	return ok
}

// Wakes returns how many times the sandbox of id ("": of every sandbox)
// was started from stopped, paused, archived or error (a start, resume,
// restore or recover); a probe must never add to it.
func (s *Server) Wakes(id string) int { return s.Tally(strings.TrimSpace("wakes " + id)) }

// wrap counts, applies faults, checks the key, then, holding mu, the rate
// limits, and serves; then it delivers the state changes the request made
// (OnStateChange).
func (s *Server) wrap(op Op, h func(http.ResponseWriter, *http.Request)) http.Handler {
	bucket := bucketOf(op)
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			s.writeError(w, r, http.StatusUnauthorized, "Invalid credentials")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if limited, retry := s.rate(w, bucket); limited {
			w.Header().Set("Retry-After-"+bucket, strconv.Itoa(retry))
			s.writeError(w, r, http.StatusTooManyRequests, "ThrottlerException: Too Many Requests")
			return
		}
		h(w, r)
	})
	faulty := s.Handle(op, checked, func(w http.ResponseWriter, r *http.Request, f Fault) {
		if f.Status != http.StatusTooManyRequests {
			s.writeError(w, r, f.Status, cmp.Or(f.Message, http.StatusText(f.Status)))
			return
		}
		secs := strconv.Itoa(max(f.RetryAfter, 1))
		if f.PlainRetryAfter {
			w.Header().Set("Retry-After", secs)
		} else {
			w.Header().Set("Retry-After-"+bucket, secs)
		}
		s.writeError(w, r, f.Status, cmp.Or(f.Message, "ThrottlerException: Too Many Requests"))
	}, op, OpAny)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		faulty.ServeHTTP(w, r)
		s.flush()
	})
}

// rate counts a request in bucket's current minute, sets the suffixed
// X-RateLimit-* headers, and reports whether the request is over the limit
// and the seconds until the window resets. Callers hold mu.
func (s *Server) rate(w http.ResponseWriter, bucket string) (bool, int) {
	now := s.opts.Clock.Now()
	start := now.Truncate(time.Minute)
	if !start.Equal(s.windowAt) {
		s.windowAt, s.window = start, map[string]int{}
	}
	limit := s.opts.RateLimits[bucket]
	if limit <= 0 {
		limit = map[string]int{BucketAuthenticated: 10000, BucketCreate: 300, BucketLifecycle: 10000}[bucket]
	}
	s.window[bucket]++
	used := s.window[bucket]
	reset := max(int(start.Add(time.Minute).Sub(now).Seconds()+0.999), 1)
	h := w.Header()
	h.Set("X-RateLimit-Limit-"+bucket, strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining-"+bucket, strconv.Itoa(max(limit-used, 0)))
	h.Set("X-RateLimit-Reset-"+bucket, strconv.Itoa(reset))
	return used > limit, reset
}

func (s *Server) port(w http.ResponseWriter, r *http.Request) (int, bool) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		s.writeError(w, r, http.StatusBadRequest, "Invalid port")
		return 0, false
	}
	return port, true
}

func (s *Server) previewURL(w http.ResponseWriter, r *http.Request) {
	port, ok := s.port(w, r)
	if !ok {
		return
	}
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	u := fmt.Sprintf("https://%d-%s.%s", port, sb.ID, s.opts.ProxyDomain)
	if s.opts.PreviewBaseURL != "" {
		u = fmt.Sprintf("%s/preview/%d-%s/", strings.TrimSuffix(s.opts.PreviewBaseURL, "/"), port, sb.ID)
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"sandboxId": sb.ID, "url": u, "token": sb.Token})
}

func (s *Server) signedPreviewURL(w http.ResponseWriter, r *http.Request) {
	port, ok := s.port(w, r)
	if !ok {
		return
	}
	if _, ok := fakekit.Limit(r.URL.Query().Get("expiresInSeconds"), 0, 1, 86400); !ok {
		s.writeError(w, r, http.StatusBadRequest, "expiresInSeconds must be between 1 and 86400")
		return
	}
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	tok := s.newToken()
	s.writeJSON(w, http.StatusOK, map[string]any{
		"sandboxId": sb.ID, "port": port, "token": tok,
		"url": fmt.Sprintf("https://%d-%s.%s", port, tok, s.opts.ProxyDomain),
	})
}

func (s *Server) toolboxProxy(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		s.writeJSON(w, http.StatusOK, map[string]string{"url": s.opts.ToolboxProxyURL})
	}
}

// lookup returns the sandbox named by the request's {id} (its ID or its
// name) after applying what is due, or answers 404 and returns nil.
// Callers hold mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *Sandbox { return s.find(w, r, true) }

// lookupByID is lookup for the routes that take the ID only.
func (s *Server) lookupByID(w http.ResponseWriter, r *http.Request) *Sandbox {
	return s.find(w, r, false)
}

func (s *Server) find(w http.ResponseWriter, r *http.Request, byName bool) *Sandbox {
	s.tick()
	id := r.PathValue("id")
	if sb, ok := s.sandboxes.Get(id); ok {
		return sb
	}
	for _, sb := range s.sandboxes.All() {
		if byName && sb.Name == id {
			return sb
		}
	}
	s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID %s%s not found", map[bool]string{true: "or name "}[byName], id))
	return nil
}

func (s *Server) newToken() string {
	s.tokenSeq++
	return fmt.Sprintf("dtn-preview-%06d", s.tokenSeq)
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := fakekit.ReadBody(w, r)
	if err != nil {
		s.writeError(w, r, http.StatusRequestEntityTooLarge, "request entity too large")
		return nil, false
	}
	return b, true
}

// writeError answers Daytona's error body (daytona.md "REST API").
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.writeJSON(w, status, map[string]any{
		"path": r.URL.Path, "timestamp": iso(s.opts.Clock.Now()), "statusCode": status,
		"error": http.StatusText(status), "message": msg, "code": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")),
		"source": "DAYTONA_API",
	})
}

// writeJSON answers v with Daytona's Content-Type.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fakekit.WriteJSON(w, status, v)
}
