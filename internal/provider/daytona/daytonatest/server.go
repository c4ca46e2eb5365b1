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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
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
	order      fakekit.Order
	tokenSeq   int
	sandboxes  map[string]*Sandbox
	tombstones []tombstone
	wakes      map[string]int
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
	if opts.APIKey == "" {
		opts.APIKey = DefaultAPIKey
	}
	if opts.Clock == nil {
		opts.Clock = lifecycle.SystemClock{}
	}
	if opts.ProxyDomain == "" {
		opts.ProxyDomain = DefaultProxyDomain
	}
	if opts.ToolboxProxyURL == "" {
		opts.ToolboxProxyURL = "https://toolbox." + opts.ProxyDomain
	}
	if opts.OrganizationID == "" {
		opts.OrganizationID = DefaultOrganizationID
	}
	if opts.Class == "" {
		opts.Class = DefaultClass
	}
	s := &Server{
		opts:      opts,
		sandboxes: map[string]*Sandbox{},
		wakes:     map[string]int{},
		window:    map[string]int{},
		procs:     map[string]map[string]*toolSession{},
	}
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
		route("DELETE /sandbox/{id}", OpDelete, s.delete)
		route("POST /sandbox/{id}/start", OpStart, s.start)
		route("POST /sandbox/{id}/stop", OpStop, s.stop)
		route("POST /sandbox/{id}/pause", OpPause, s.pause)
		route("POST /sandbox/{id}/archive", OpArchive, s.archive)
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
		if port, id, ok := s.previewOf(r.Host); ok {
			s.preview(w, r, port, id)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/preview/"); ok {
			label, _, _ := strings.Cut(rest, "/")
			if port, id, ok := s.previewOf(label + "." + s.opts.ProxyDomain); ok {
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
	if c.DesiredState == "" {
		c.DesiredState = desiredOf(c.State)
	}
	if c.Class == "" {
		c.Class = s.opts.Class
	}
	if c.Target == "" {
		c.Target = DefaultTarget
	}
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
	s.store(&c)
}

// Sandbox returns the sandbox of id after applying everything due by the
// clock; false when it is destroyed (GET would be 404).
func (s *Server) Sandbox(id string) (Sandbox, bool) {
	s.mu.Lock()
	s.tick()
	sb, ok := s.sandboxes[id]
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
	sb, ok := s.sandboxes[id]
	if ok {
		f(sb)
	}
	return ok
}

// Wakes returns how many times the sandbox of id ("": of every sandbox)
// was started from stopped, paused, archived or error (a start, resume,
// restore or recover); a probe must never add to it.
func (s *Server) Wakes(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		n := 0
		for _, c := range s.wakes {
			n += c
		}
		return n
	}
	return s.wakes[id]
}

// wrap counts, applies faults, checks the key and rate limits, serves,
// then delivers the state changes the request made (OnStateChange).
func (s *Server) wrap(op Op, h func(http.ResponseWriter, *http.Request)) http.Handler {
	bucket := bucketOf(op)
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			s.writeError(w, r, http.StatusUnauthorized, "Invalid credentials")
			return
		}
		s.mu.Lock()
		limited, retry := s.rate(w, bucket)
		s.mu.Unlock()
		if limited {
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
	reset := int(start.Add(time.Minute).Sub(now).Seconds() + 0.999)
	if reset < 1 {
		reset = 1
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit-"+bucket, strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining-"+bucket, strconv.Itoa(max(limit-used, 0)))
	h.Set("X-RateLimit-Reset-"+bucket, strconv.Itoa(reset))
	return used > limit, reset
}

// The JSON shapes, field names exactly as in daytona.md.

type buildInfo struct {
	DockerfileContent string   `json:"dockerfileContent"`
	ContextHashes     []string `json:"contextHashes"`
}

type createBody struct {
	Snapshot            *string           `json:"snapshot"`
	BuildInfo           *buildInfo        `json:"buildInfo"`
	Name                string            `json:"name"`
	User                string            `json:"user"`
	Env                 map[string]string `json:"env"`
	Labels              map[string]string `json:"labels"`
	Public              bool              `json:"public"`
	Target              string            `json:"target"`
	CPU                 *int              `json:"cpu"`
	GPU                 *int              `json:"gpu"`
	Memory              *int              `json:"memory"`
	Disk                *int              `json:"disk"`
	AutoStopInterval    *int              `json:"autoStopInterval"`
	AutoPauseInterval   *int              `json:"autoPauseInterval"`
	AutoArchiveInterval *int              `json:"autoArchiveInterval"`
	AutoDeleteInterval  *int              `json:"autoDeleteInterval"`
	TTLMinutes          *int              `json:"ttlMinutes"`
	Volumes             []struct {
		VolumeID  string `json:"volumeId"`
		MountPath string `json:"mountPath"`
		Subpath   string `json:"subpath"`
	} `json:"volumes"`
	NetworkBlockAll  *bool   `json:"networkBlockAll"`
	NetworkAllowList *string `json:"networkAllowList"`
	DomainAllowList  any     `json:"domainAllowList"`
}

var createFields = []string{"snapshot", "buildInfo", "name", "user", "env", "labels", "public", "target",
	"cpu", "gpu", "memory", "disk", "autoStopInterval", "autoPauseInterval", "autoArchiveInterval",
	"autoDeleteInterval", "ttlMinutes", "volumes", "networkBlockAll", "networkAllowList", "domainAllowList"}

// sandboxJSON is the Sandbox object of get, create, start, stop, delete and
// (without env) list items.
type sandboxJSON struct {
	ID                  string             `json:"id"`
	OrganizationID      string             `json:"organizationId"`
	Name                string             `json:"name"`
	State               string             `json:"state"`
	DesiredState        string             `json:"desiredState"`
	ErrorReason         *string            `json:"errorReason,omitempty"`
	Recoverable         bool               `json:"recoverable"`
	Snapshot            *string            `json:"snapshot"`
	Labels              map[string]string  `json:"labels"`
	Env                 *map[string]string `json:"env,omitempty"`
	Public              bool               `json:"public"`
	Target              string             `json:"target"`
	CPU                 int                `json:"cpu"`
	GPU                 int                `json:"gpu"`
	Memory              int                `json:"memory"`
	Disk                int                `json:"disk"`
	AutoStopInterval    int                `json:"autoStopInterval"`
	AutoPauseInterval   int                `json:"autoPauseInterval"`
	AutoArchiveInterval int                `json:"autoArchiveInterval"`
	AutoDeleteInterval  int                `json:"autoDeleteInterval"`
	AutoDestroyAt       *string            `json:"autoDestroyAt"`
	CreatedAt           string             `json:"createdAt"`
	UpdatedAt           string             `json:"updatedAt"`
	LastActivityAt      string             `json:"lastActivityAt"`
	SandboxClass        string             `json:"sandboxClass"`
	RunnerID            string             `json:"runnerId"`
	ToolboxProxyURL     string             `json:"toolboxProxyUrl"`
}

func (s *Server) toJSON(sb *Sandbox, withEnv bool) sandboxJSON {
	out := sandboxJSON{
		ID: sb.ID, OrganizationID: s.opts.OrganizationID, Name: sb.Name, State: sb.State,
		DesiredState: sb.DesiredState, Recoverable: sb.Recoverable, Labels: maps.Clone(sb.Labels),
		Public: sb.Public, Target: sb.Target, CPU: sb.CPU, GPU: sb.GPU, Memory: sb.Memory, Disk: sb.Disk,
		AutoStopInterval: sb.AutoStop, AutoPauseInterval: sb.AutoPause,
		AutoArchiveInterval: sb.AutoArchive, AutoDeleteInterval: sb.AutoDelete,
		CreatedAt: iso(sb.CreatedAt), UpdatedAt: iso(sb.UpdatedAt), LastActivityAt: iso(sb.LastActivityAt),
		SandboxClass: sb.Class, RunnerID: "runner-1", ToolboxProxyURL: s.opts.ToolboxProxyURL,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if sb.ErrorReason != "" {
		r := sb.ErrorReason
		out.ErrorReason = &r
	}
	if sb.Snapshot != "" {
		snap := sb.Snapshot
		out.Snapshot = &snap
	}
	if withEnv {
		env := maps.Clone(sb.Env)
		if env == nil {
			env = map[string]string{}
		}
		out.Env = &env
	}
	if !sb.AutoDestroyAt.IsZero() {
		t := iso(sb.AutoDestroyAt)
		out.AutoDestroyAt = &t
	}
	return out
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var in createBody
	var fields map[string]json.RawMessage
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "body must be a JSON object")
		return
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	var bad []string
	switch {
	case in.Snapshot != nil && in.BuildInfo != nil:
		bad = append(bad, "cannot specify both snapshot and buildInfo")
	case in.Snapshot != nil && (in.CPU != nil || in.GPU != nil || in.Memory != nil || in.Disk != nil):
		bad = append(bad, "cannot specify sandbox resources when using a snapshot")
	case in.AutoStopInterval != nil && in.AutoPauseInterval != nil && *in.AutoStopInterval != 0 && *in.AutoPauseInterval != 0:
		bad = append(bad, "autoStopInterval and autoPauseInterval cannot both be set")
	}
	for _, p := range []struct {
		name string
		v    *int
		min  int
	}{{"autoStopInterval", in.AutoStopInterval, 0}, {"autoPauseInterval", in.AutoPauseInterval, 0},
		{"autoArchiveInterval", in.AutoArchiveInterval, 0}, {"autoDeleteInterval", in.AutoDeleteInterval, -1},
		{"ttlMinutes", in.TTLMinutes, 0}} {
		if p.v != nil && *p.v < p.min {
			bad = append(bad, fmt.Sprintf("%s must not be less than %d", p.name, p.min))
		}
	}
	if in.BuildInfo != nil && !strings.HasPrefix(strings.TrimSpace(in.BuildInfo.DockerfileContent), "FROM ") {
		bad = append(bad, "buildInfo.dockerfileContent must be a Dockerfile")
	}
	if len(bad) > 0 {
		s.writeError(w, r, http.StatusBadRequest, strings.Join(bad, ", "))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range fields {
		if !slices.Contains(createFields, k) {
			s.NoteOnce(k) // daytona.md does not list it (Daytona's SDK sends a few)
		}
	}
	snapshot := ""
	if in.Snapshot != nil {
		snapshot = *in.Snapshot
		if s.opts.Snapshots != nil && !slices.Contains(s.opts.Snapshots, snapshot) {
			s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Snapshot %s not found. Did you add it through the Daytona Dashboard?", snapshot))
			return
		}
	}
	s.tick()
	if in.Name != "" {
		for _, o := range s.sandboxes {
			if o.Name == in.Name {
				s.writeError(w, r, http.StatusConflict, fmt.Sprintf("Sandbox with name %s already exists", in.Name))
				return
			}
		}
	}
	now := s.opts.Clock.Now().UTC()
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", s.order.Next(), s.order.Next())
	sb := &Sandbox{
		ID: id, Name: cmp.Or(in.Name, id), Snapshot: snapshot, Labels: maps.Clone(in.Labels),
		Env: maps.Clone(in.Env), Public: in.Public, Target: cmp.Or(in.Target, DefaultTarget),
		Class: s.opts.Class, CPU: 1, Memory: 1, Disk: 3, AutoStop: 15, AutoArchive: 10080, AutoDelete: -1,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now, Token: s.newToken(),
	}
	if sb.Labels == nil {
		sb.Labels = map[string]string{}
	}
	pauseCapable := sb.Class == "linux-vm" || sb.Class == "windows"
	if pauseCapable && in.AutoStopInterval == nil && in.AutoPauseInterval == nil {
		sb.AutoStop, sb.AutoPause = 0, 60
	}
	setInt(&sb.AutoStop, in.AutoStopInterval)
	setInt(&sb.AutoPause, in.AutoPauseInterval)
	setInt(&sb.AutoArchive, in.AutoArchiveInterval)
	setInt(&sb.AutoDelete, in.AutoDeleteInterval)
	if in.TTLMinutes != nil && *in.TTLMinutes > 0 {
		sb.AutoDestroyAt = now.Add(time.Duration(*in.TTLMinutes) * time.Minute)
	}
	for _, p := range []struct {
		dst *int
		v   *int
	}{{&sb.CPU, in.CPU}, {&sb.GPU, in.GPU}, {&sb.Memory, in.Memory}, {&sb.Disk, in.Disk}} {
		setInt(p.dst, p.v)
	}
	sb.DesiredState = StateStarted
	s.store(sb)
	switch {
	case in.BuildInfo != nil:
		// Answered at once as pending_build, even with BuildTime 0 (it then
		// settles on the next read).
		s.set(sb, StatePendingBuild, now)
		sb.next, sb.settleAt = StateStarted, now.Add(s.opts.BuildTime)
	default:
		s.begin(sb, StateCreating, StateStarted, s.opts.CreateTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func setInt(dst, v *int) {
	if v != nil {
		*dst = *v
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.lookup(w, r); sb != nil {
		s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
	}
}

// list serves GET /sandbox: labels (URL-encoded JSON object, all pairs
// must match), states (repeated; destroyed refused), name and id
// prefixes, limit (1-200, default 100), cursor (opaque, issued here),
// sort and order (createdAt by default, ascending).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var labels map[string]string
	if v := q.Get("labels"); v != "" {
		if err := json.Unmarshal([]byte(v), &labels); err != nil {
			s.writeError(w, r, http.StatusBadRequest, "Invalid labels JSON format")
			return
		}
	}
	states := map[string]bool{}
	for _, v := range q["states"] {
		for _, st := range strings.Split(v, ",") {
			if st == StateDestroyed || !knownState(st) {
				s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("each value in states must be one of the non-destroyed states, got %q", st))
				return
			}
			states[st] = true
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			s.writeError(w, r, http.StatusBadRequest, "limit must not be less than 1, limit must not be greater than 200")
			return
		}
		limit = n
	}
	sortBy, order := cmp.Or(q.Get("sort"), "createdAt"), cmp.Or(q.Get("order"), "asc")
	if !slices.Contains([]string{"createdAt", "lastActivityAt", "name", "cpu", "memoryGib", "diskGib"}, sortBy) ||
		(order != "asc" && order != "desc") {
		s.writeError(w, r, http.StatusBadRequest, "sort or order is not valid")
		return
	}
	from := 0
	if v := q.Get("cursor"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		n, aerr := strconv.Atoi(strings.TrimPrefix(string(b), "c:"))
		if err != nil || aerr != nil || !strings.HasPrefix(string(b), "c:") || n < 0 {
			s.writeError(w, r, http.StatusBadRequest, "Invalid cursor")
			return
		}
		from = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	now := s.opts.Clock.Now()
	var all []*Sandbox
	for _, sb := range s.sandboxes {
		all = append(all, sb)
	}
	for _, t := range s.tombstones {
		if now.Before(t.until) {
			c := t.sb.clone()
			all = append(all, &c)
		}
	}
	var match []*Sandbox
	for _, sb := range all {
		if (len(states) == 0 || states[sb.State]) && hasLabels(sb.Labels, labels) &&
			strings.HasPrefix(sb.Name, q.Get("name")) && strings.HasPrefix(sb.ID, q.Get("id")) {
			match = append(match, sb)
		}
	}
	less := func(a, b *Sandbox) bool {
		switch sortBy {
		case "lastActivityAt":
			if !a.LastActivityAt.Equal(b.LastActivityAt) {
				return a.LastActivityAt.Before(b.LastActivityAt)
			}
		case "name":
			if a.Name != b.Name {
				return a.Name < b.Name
			}
		}
		return s.order.Of(a.ID) < s.order.Of(b.ID)
	}
	sort.SliceStable(match, func(i, j int) bool {
		if order == "desc" {
			return less(match[j], match[i])
		}
		return less(match[i], match[j])
	})
	if from > len(match) {
		from = len(match)
	}
	match = match[from:]
	var next *string
	if len(match) > limit {
		c := base64.RawURLEncoding.EncodeToString([]byte("c:" + strconv.Itoa(from+limit)))
		next = &c
		match = match[:limit]
	}
	items := make([]sandboxJSON, 0, len(match))
	for _, sb := range match {
		items = append(items, s.toJSON(sb, false))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "nextCursor": next})
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// inFlight answers 409 when a change is in progress: state !=
// desiredState while the state is transitional (an errored sandbox is not
// changing and can be deleted).
func (s *Server) inFlight(w http.ResponseWriter, r *http.Request, sb *Sandbox) bool {
	if sb.State != sb.DesiredState && Transitional(sb.State) {
		s.writeError(w, r, http.StatusConflict, "Sandbox state change in progress")
		return true
	}
	return false
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	now := s.opts.Clock.Now().UTC()
	switch sb.State {
	case StateStarted:
	case StateStopped:
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateStarting, StateStarted, s.opts.StartTime, now)
	case StateArchived:
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateRestoring, StateStarted, s.opts.RestoreTime, now)
	case StatePaused:
		s.wakes[sb.ID]++
		s.begin(sb, StateResuming, StateStarted, s.opts.ResumeTime, now)
	case StateError:
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is in an errored state")
		return
	default:
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Sandbox is not in a startable state (%s)", sb.State))
		return
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.State != StateStarted && sb.State != StatePaused {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in a stoppable state")
		return
	}
	now := s.opts.Clock.Now().UTC()
	if sb.AutoDelete == 0 {
		s.destroy(sb, now)
	} else {
		s.begin(sb, StateStopping, StateStopped, s.opts.StopTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.Class != "linux-vm" && sb.Class != "windows" {
		s.writeError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("Pause is not supported for sandbox class %s", sb.Class))
		return
	}
	if sb.State != StateStarted {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in a pausable state")
		return
	}
	s.begin(sb, StatePausing, StatePaused, s.opts.PauseTime, s.opts.Clock.Now().UTC())
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.State != StateStopped || sb.AutoDelete == 0 {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in an archivable state")
		return
	}
	s.begin(sb, StateArchiving, StateArchived, s.opts.ArchiveTime, s.opts.Clock.Now().UTC())
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) recover(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	if sb.State != StateError || !sb.Recoverable {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not recoverable")
		return
	}
	now := s.opts.Clock.Now().UTC()
	sb.ErrorReason, sb.Recoverable = "", false
	if r.URL.Query().Get("skipStart") == "true" {
		s.set(sb, StateStopped, now)
		sb.DesiredState = StateStopped
	} else {
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateStarting, StateStarted, s.opts.StartTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	out := s.toJSON(sb, true)
	s.destroy(sb, s.opts.Clock.Now().UTC())
	out.State, out.DesiredState = sb.State, sb.DesiredState
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) lastActivity(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.readBody(w, r); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookupByID(w, r)
	if sb == nil {
		return
	}
	sb.LastActivityAt = s.opts.Clock.Now().UTC()
	w.WriteHeader(http.StatusCreated)
}

// timer serves POST /sandbox/{id}/{autostop,autopause,autoarchive,autodelete,ttl}/{min},
// answering 201 with the Sandbox as Daytona's v0.190 source does.
func (s *Server) timer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("timer")
	if !slices.Contains([]string{"autostop", "autopause", "autoarchive", "autodelete", "ttl"}, name) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot POST %s", r.URL.Path))
		return
	}
	min, err := strconv.Atoi(r.PathValue("min"))
	lowest := 0
	if name == "autodelete" {
		lowest = -1
	}
	if err != nil || min < lowest {
		s.writeError(w, r, http.StatusBadRequest, "Interval must be a non-negative integer")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	now := s.opts.Clock.Now().UTC()
	switch name {
	case "autostop":
		if min != 0 && sb.AutoPause != 0 {
			s.writeError(w, r, http.StatusBadRequest, "autoStopInterval and autoPauseInterval cannot both be set")
			return
		}
		sb.AutoStop = min
	case "autopause":
		if min != 0 && sb.AutoStop != 0 {
			s.writeError(w, r, http.StatusBadRequest, "autoStopInterval and autoPauseInterval cannot both be set")
			return
		}
		sb.AutoPause = min
	case "autoarchive":
		sb.AutoArchive = min
	case "autodelete":
		sb.AutoDelete = min
	case "ttl":
		sb.AutoDestroyAt = time.Time{}
		if min > 0 {
			sb.AutoDestroyAt = now.Add(time.Duration(min) * time.Minute)
		}
	}
	sb.UpdatedAt = now
	s.writeJSON(w, http.StatusCreated, s.toJSON(sb, true))
}

func (s *Server) labels(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Labels == nil {
		s.writeError(w, r, http.StatusBadRequest, "labels must be an object of strings")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	sb.Labels = maps.Clone(in.Labels)
	s.writeJSON(w, http.StatusOK, map[string]any{"labels": sb.Labels})
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if v := r.URL.Query().Get("expiresInSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 86400 {
			s.writeError(w, r, http.StatusBadRequest, "expiresInSeconds must be between 1 and 86400")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.lookup(w, r); sb != nil {
		s.writeJSON(w, http.StatusOK, map[string]string{"url": s.opts.ToolboxProxyURL})
	}
}

// lookup returns the sandbox named by the request's {id} (its ID or its
// name) after applying what is due, or answers 404 and returns nil.
// Callers hold mu.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *Sandbox {
	s.tick()
	id := r.PathValue("id")
	if sb, ok := s.sandboxes[id]; ok {
		return sb
	}
	for _, sb := range s.sandboxes {
		if sb.Name == id {
			return sb
		}
	}
	s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID or name %s not found", id))
	return nil
}

// lookupByID is lookup for the routes that take the ID only.
func (s *Server) lookupByID(w http.ResponseWriter, r *http.Request) *Sandbox {
	s.tick()
	id := r.PathValue("id")
	if sb, ok := s.sandboxes[id]; ok {
		return sb
	}
	s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID %s not found", id))
	return nil
}

// store records sb, keeping its creation order. Callers hold mu.
func (s *Server) store(sb *Sandbox) {
	s.order.Add(sb.ID)
	s.sandboxes[sb.ID] = sb
}

func (s *Server) newToken() string {
	s.tokenSeq++
	return fmt.Sprintf("dtn-preview-%06d", s.tokenSeq)
}

// set changes sb's state at t, queueing the change for OnStateChange. A
// state change is activity (docs/providers/daytona.md "Idle and auto-stop
// semantics").
// Callers hold mu.
func (s *Server) set(sb *Sandbox, state string, t time.Time) {
	if sb.State != state {
		s.pending = append(s.pending, StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: state, At: t})
	}
	sb.State, sb.UpdatedAt, sb.LastActivityAt = state, t, t
	s.loseProcesses(sb, state)
}

// begin moves sb into transitional state via toward final, settling after
// d (at once when d is 0). Callers hold mu.
func (s *Server) begin(sb *Sandbox, via, final string, d time.Duration, t time.Time) {
	sb.DesiredState = desiredOf(final)
	s.set(sb, via, t)
	sb.next, sb.settleAt = final, t.Add(d)
	if d == 0 && !sb.Stuck {
		s.settle(sb)
	}
}

// destroy starts deleting sb at t. Callers hold mu.
func (s *Server) destroy(sb *Sandbox, t time.Time) {
	s.begin(sb, StateDestroying, StateDestroyed, s.opts.DeleteTime, t)
}

// settle ends sb's transition. A destroyed sandbox leaves the store (and,
// with ListLag, leaves a tombstone carrying its state before the delete).
// Callers hold mu.
func (s *Server) settle(sb *Sandbox) {
	at := sb.settleAt
	final := sb.next
	sb.next, sb.settleAt = "", time.Time{}
	if final == StateDestroyed {
		s.pending = append(s.pending, StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: StateDestroyed, At: at})
		delete(s.sandboxes, sb.ID)
		if s.opts.ListLag > 0 {
			c := sb.clone()
			c.State, c.DesiredState = StateStarted, StateStarted
			s.tombstones = append(s.tombstones, tombstone{sb: c, until: at.Add(s.opts.ListLag)})
		}
		return
	}
	s.set(sb, final, at)
}

// tick applies everything due by the clock to every sandbox, in time
// order per sandbox: settling transitions, then the timers (auto-stop,
// auto-pause, auto-archive, auto-delete, TTL). Callers hold mu.
func (s *Server) tick() {
	now := s.opts.Clock.Now().UTC()
	ids := make([]string, 0, len(s.sandboxes))
	for id := range s.sandboxes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return s.order.Of(ids[i]) < s.order.Of(ids[j]) })
	for _, id := range ids {
		for range 16 {
			sb, ok := s.sandboxes[id]
			if !ok || !s.step(sb, now) {
				break
			}
		}
	}
	live := s.tombstones[:0]
	for _, t := range s.tombstones {
		if now.Before(t.until) {
			live = append(live, t)
		}
	}
	s.tombstones = live
}

// step applies sb's earliest event due by now and reports whether there
// was one. Callers hold mu.
func (s *Server) step(sb *Sandbox, now time.Time) bool {
	if sb.next != "" {
		if sb.Stuck || sb.settleAt.After(now) {
			return false
		}
		s.settle(sb)
		return true
	}
	if !sb.AutoDestroyAt.IsZero() && !sb.AutoDestroyAt.After(now) {
		s.destroy(sb, sb.AutoDestroyAt)
		return true
	}
	minutes := func(m int) time.Time { return sb.LastActivityAt.Add(time.Duration(m) * time.Minute) }
	switch {
	case sb.State == StateStarted && sb.DesiredState == StateStarted && sb.AutoStop > 0 && !minutes(sb.AutoStop).After(now):
		if sb.AutoDelete == 0 {
			s.destroy(sb, minutes(sb.AutoStop))
		} else {
			s.begin(sb, StateStopping, StateStopped, s.opts.StopTime, minutes(sb.AutoStop))
		}
		return true
	case sb.State == StateStarted && sb.DesiredState == StateStarted && sb.AutoPause > 0 && !minutes(sb.AutoPause).After(now):
		s.begin(sb, StatePausing, StatePaused, s.opts.PauseTime, minutes(sb.AutoPause))
		return true
	case sb.State == StateStopped && sb.AutoDelete >= 0 && !minutes(sb.AutoDelete).After(now):
		s.destroy(sb, minutes(sb.AutoDelete))
		return true
	case sb.State == StateStopped && !minutes(archiveMinutes(sb.AutoArchive)).After(now):
		s.begin(sb, StateArchiving, StateArchived, s.opts.ArchiveTime, minutes(archiveMinutes(sb.AutoArchive)))
		return true
	}
	return false
}

// archiveMinutes reads autoArchiveInterval: 0 is the maximum, 30 days.
func archiveMinutes(m int) int {
	if m == 0 {
		return 30 * 24 * 60
	}
	return m
}

// desiredOf returns the desiredState a settled state implies.
func desiredOf(state string) string {
	switch state {
	case StateStopped, StateStopping:
		return StateStopped
	case StatePaused, StatePausing:
		return StatePaused
	case StateArchived, StateArchiving:
		return StateArchived
	case StateDestroyed, StateDestroying:
		return StateDestroyed
	case StateError, StateBuildFailed:
		return StateStarted
	default:
		return StateStarted
	}
}

// Transitional reports whether state is one that settles on its own:
// every known state but started, stopped, paused, archived, error,
// build_failed and destroyed, and every unknown one (daytona.md).
func Transitional(state string) bool {
	switch state {
	case StateStarted, StateStopped, StatePaused, StateArchived, StateError, StateBuildFailed, StateDestroyed:
		return false
	}
	return true
}

func knownState(st string) bool {
	return slices.Contains([]string{StateCreating, StateRestoring, StateDestroyed, StateDestroying,
		StateStarted, StateStopped, StateStarting, StateStopping, StateError, StateBuildFailed,
		StatePendingBuild, StateBuildingSnapshot, StateUnknown, StatePullingSnapshot, StateArchived,
		StateArchiving, StateResizing, StateSnapshotting, StateForking, StatePausing, StatePaused,
		StateResuming}, st)
}

// flush delivers queued state changes to OnStateChange, in order, outside
// mu.
func (s *Server) flush() {
	s.notify.Lock()
	defer s.notify.Unlock()
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	if s.opts.OnStateChange == nil {
		return
	}
	for _, c := range pending {
		s.opts.OnStateChange(c)
	}
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
