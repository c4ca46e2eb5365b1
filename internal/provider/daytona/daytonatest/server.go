// Package daytonatest is a fake Daytona control API and toolbox for tests
// and local runs: a stateful, in-memory net/http server that behaves as
// docs/providers/daytona.md describes, on an injected clock. Transitional
// states (creating, starting, stopping, restoring, destroying...) settle
// after configurable times and answer 409 meanwhile (state !=
// desiredState); auto-stop, auto-pause, auto-archive, auto-delete and TTL
// fire from lastActivityAt; lists filter by labels with cursors, and can
// lag behind deletes as Daytona's do; preview tokens change on every start
// from stopped or archived; rate limits answer with Daytona's suffixed
// headers (X-RateLimit-*-<bucket>, Retry-After-<bucket> on 429), and
// errors with Daytona's body.
//
// It serves the paths at its root and under /api (Daytona's SDK appends
// /sandbox/... to its apiUrl). Its Kit counts every request, and every
// start that woke a sandbox (Wakes: a probe of a stopped sandbox must never
// start it), and injects faults per operation (Fail, FailUntil). NewServer
// and Handler serve it standalone (StandaloneConfig); Start serves it for a
// test, and ProviderConfig aims the adapter at it. Server is safe for
// concurrent use.
package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
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
	// or fork (Daytona: only linux-vm and windows can, others answer 422).
	DefaultClass = "container"
	// DefaultDeactivation is Daytona's snapshotDeactivationTimeoutMinutes,
	// 20160: 14 days.
	DefaultDeactivation = 14 * 24 * time.Hour
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

// bucketOf is the rate-limit bucket of the operations not in
// BucketAuthenticated.
var bucketOf = map[Op]string{OpCreate: BucketCreate, OpFork: BucketCreate, OpStart: BucketLifecycle, OpStop: BucketLifecycle,
	OpPause: BucketLifecycle, OpArchive: BucketLifecycle, OpDelete: BucketLifecycle, OpRecover: BucketLifecycle}

// Config configures a Server. The zero value is a fake whose transitions
// settle at once, whose list is consistent, with tier-1 rate limits.
type Config struct {
	APIKey string // the accepted bearer key; default DefaultAPIKey
	// Clock drives transitions, timers and reported times. Default the
	// system clock; tests pass a *lifecycle.ManualClock.
	Clock          lifecycle.Clock
	ProxyDomain    string // the preview domain; default DefaultProxyDomain
	OrganizationID string // every sandbox's organizationId; default DefaultOrganizationID
	// Class is the sandboxClass of new sandboxes. Default DefaultClass;
	// "linux-vm" makes them pause-capable.
	Class string
	// ToolboxProxyURL is every sandbox's toolboxProxyUrl; the fake serves
	// the toolbox at its own /toolbox. Default
	// "https://toolbox.<ProxyDomain>" (Start: the test server's /toolbox).
	ToolboxProxyURL string
	// PreviewBaseURL, when set, is where the fake itself is reached: its
	// preview URLs are then <PreviewBaseURL>/preview/{port}-{id}/ (served
	// by the fake) instead of https://{port}-{id}.<ProxyDomain>, so a
	// local stack reaches them without DNS.
	PreviewBaseURL string
	// BootDelay is how long after its exec a toolbox command listens on
	// its port (the preview answers 502 until then). Default 0: at once.
	BootDelay time.Duration
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
	// Checkpoints: a capture (snapshotting → back, the snapshot written), a
	// fork (the child creating → started, the source forking → started),
	// an activation (pending → active).
	SnapshotTime, ForkTime, ActivateTime time.Duration
	// Deactivation is how long an active snapshot stays so unused
	// (lastUsedAt, else createdAt) before Daytona deactivates it. Default
	// DefaultDeactivation.
	Deactivation time.Duration

	// ListLag keeps a destroyed sandbox in list answers, as started, this
	// long after it was destroyed (daytona.md "REST API": a deleted
	// sandbox reappeared for 1-2 s). Default 0: a consistent list.
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
	SandboxID, OldState, NewState string
	At                            time.Time
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
func (f Fault) Effect() fakekit.Effect { return fakekit.Fault{Status: f.Status, Drop: f.Drop}.Effect() }

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
	window     fakekit.Window // requests per bucket in the current minute
	changes    fakekit.Outbox[StateChange]
	procs      map[string]map[string]*toolSession // sandbox ID → toolbox session ID → session
	cmdSeq     int
	snapshots  fakekit.Table[Snapshot]
	switches   fakekit.Switches
	removed    map[string]bool // the names and ids of deleted snapshots
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
	opts.Deactivation = cmp.Or(opts.Deactivation, DefaultDeactivation)
	s := &Server{opts: opts, procs: map[string]map[string]*toolSession{}, removed: map[string]bool{}}
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
// {port}-{id}.<ProxyDomain> (or whose path is /preview/{port}-{id}/…) as
// that port's preview.
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
		s.snapshotRoutes(route)
	}
	s.toolboxRoutes(mux)
	mux.Handle(fakekit.ControlPrefix+"/faults", fakekit.Control(&s.Kit))
	fakekit.ControlSandboxes(mux, s)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot %s %s", r.Method, r.URL.Path))
	})
	return fakekit.Logged(s.opts.Logger, "fake daytona", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if port, id, ok := fakekit.PreviewOf(r, s.opts.ProxyDomain); ok {
			s.preview(w, r, port, id)
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// wrap counts, applies faults, checks the key, then, holding mu, the rate
// limits, and serves; then it delivers the state changes the request made
// (OnStateChange).
func (s *Server) wrap(op Op, h func(http.ResponseWriter, *http.Request)) http.Handler {
	bucket := cmp.Or(bucketOf[op], BucketAuthenticated)
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
		msg := cmp.Or(f.Message, http.StatusText(f.Status))
		if f.Status == http.StatusTooManyRequests {
			header := "Retry-After-" + bucket
			if f.PlainRetryAfter {
				header = "Retry-After"
			}
			w.Header().Set(header, strconv.Itoa(max(f.RetryAfter, 1)))
			msg = cmp.Or(f.Message, "ThrottlerException: Too Many Requests")
		}
		s.writeError(w, r, f.Status, msg)
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
	limit := s.opts.RateLimits[bucket]
	if limit <= 0 {
		limit = map[string]int{BucketAuthenticated: 10000, BucketCreate: 300, BucketLifecycle: 10000}[bucket]
	}
	used, reset := s.window.Take(bucket, s.opts.Clock.Now())
	for k, v := range map[string]int{"Limit": limit, "Remaining": max(limit-used, 0), "Reset": reset} {
		w.Header().Set("X-RateLimit-"+k+"-"+bucket, strconv.Itoa(v))
	}
	return used > limit, reset
}

// lookup returns the sandbox named by the request's {id} (its ID, or with
// byName its name too) after applying what is due, or answers 404 and
// returns nil. Callers hold mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, byName bool) *Sandbox {
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

// decode reads the request's body into v (nil: read and ignored), or
// answers 413 or 400 and reports false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := fakekit.ReadBody(w, r)
	switch {
	case err != nil:
		s.writeError(w, r, http.StatusRequestEntityTooLarge, "request entity too large")
	case v != nil && json.Unmarshal(b, v) != nil:
		s.writeError(w, r, http.StatusBadRequest, "invalid request body")
	default:
		return true
	}
	return false
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
