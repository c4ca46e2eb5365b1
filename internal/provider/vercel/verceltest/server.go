// Package verceltest is a fake Vercel Sandbox: an in-memory, stateful server
// of the named-sandbox API ("v2", persistent sandboxes) as
// docs/providers/vercel.md describes it, for tests and for running
// standalone (Handler) in front of Vercel's own SDK.
//
// It keeps named sandboxes per project, each with its sessions (one per
// boot, a new id on every resume) and snapshots. Stop is blocking and, for a
// persistent sandbox, snapshots first; get with resume=true boots a new
// session from the current snapshot, or answers 410 snapshot_not_found once
// that snapshot has expired. A session's deadline (start + timeout) is
// enforced on the injected clock: whenever the fake is asked anything, every
// session past its deadline is stopped (and snapshotted) as of that
// deadline. Extend-timeout is bounded by the plan maximum.
//
// Snapshots hold a session's files (each session has its own, a
// sandboxfs.Mem its command API reads and writes through sandboxfs's
// lines): a snapshot or a persistent sandbox's stop copies them and stops
// the session; create from a snapshot, a resume and a fork copy them
// into a new session. Snapshots expire on the clock (their expiration
// counts from their last use), keepLastSnapshots evicts, and
// SetSnapshotFault makes one sandbox's snapshots fail or take time.
//
// Every request needs Authorization: Bearer <token> and teamId=<team> (403
// forbidden otherwise); sandbox calls need the project (projectId in the
// create body and on get/patch/delete, project on list; 400 when missing,
// 404 when unknown). Errors are {"error":{"code","message"}}. Faults (a
// status with Retry-After, a dropped connection, a hang) can be queued for
// the next requests of one operation or of any operation, and every request
// is counted per operation, as is every boot of a session.
package verceltest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// Defaults of Config.
const (
	// DefaultToken is the bearer token the fake accepts by default.
	DefaultToken = "vercel_test_token"
	// DefaultTeamID is the team (query teamId) the fake serves by default.
	DefaultTeamID = "team_sandmantest"
	// DefaultProjectID is the one project the fake knows by default.
	DefaultProjectID = "prj_sandmantest"
	// DefaultMaxSessionTimeout is the plan's maximum session length
	// (Hobby: 45 min); a create or extend past it is a 400.
	DefaultMaxSessionTimeout = 45 * time.Minute
	// DefaultSessionTimeout is a session's timeout when create names none
	// (the API's default, 300000 ms).
	DefaultSessionTimeout = 5 * time.Minute
	// DefaultSnapshotExpiration is how long a snapshot lives after its last
	// use when create names no snapshotExpiration (the API's default,
	// 30 days).
	DefaultSnapshotExpiration = 30 * 24 * time.Hour
	// DefaultImage is the image of a sandbox created without image or runtime.
	DefaultImage = "vercel/sandbox/universal:latest"
	// DefaultRegion is the region of every sandbox without one.
	DefaultRegion = "iad1"
)

// Session and sandbox statuses (the sheet's state machine).
const (
	StatusPending      = "pending"
	StatusRunning      = "running"
	StatusStopping     = "stopping"
	StatusSnapshotting = "snapshotting"
	StatusStopped      = "stopped"
	StatusFailed       = "failed"
	StatusAborted      = "aborted"
)

// Op names one kind of request, for counting and fault injection.
type Op string

// The operations the fake serves.
const (
	OpCreate   Op = "create"   // POST /v3/sandboxes, POST /v2/sandboxes
	OpGet      Op = "get"      // GET /v2/sandboxes/{name} without resume=true
	OpResume   Op = "resume"   // GET /v2/sandboxes/{name}?resume=true
	OpList     Op = "list"     // GET /v2/sandboxes
	OpUpdate   Op = "update"   // PATCH /v2/sandboxes/{name}
	OpDelete   Op = "delete"   // DELETE /v2/sandboxes/{name}
	OpStop     Op = "stop"     // POST /v2/sandboxes/sessions/{id}/stop
	OpExtend   Op = "extend"   // POST /v2/sandboxes/sessions/{id}/extend-timeout
	OpSnapshot Op = "snapshot" // POST /v2/sandboxes/sessions/{id}/snapshot
	OpSession  Op = "session"  // GET /v2/sandboxes/sessions/{id}
	OpPreview  Op = "preview"  // GET /_preview/{subdomain}/... (a route's URL, see Config.RouteURL)
	OpFork     Op = "fork"     // POST /v2/sandboxes/{name}/fork
	// The snapshots: list (and tree), get and delete.
	OpSnapshotList   Op = "snapshot-list"   // GET /v2/sandboxes/snapshots, GET /v2/sandboxes/snapshots/tree
	OpSnapshotGet    Op = "snapshot-get"    // GET /v2/sandboxes/snapshots/{id}
	OpSnapshotDelete Op = "snapshot-delete" // DELETE /v2/sandboxes/snapshots/{id}
)

// Fault replaces the answer to one request: a Status answered with
// {"error":{"code","message"}} (Code defaults to one derived from Status,
// e.g. "rate_limited" for 429, "internal_server_error" for 5xx) and its
// RetryAfter, a Hang, a Drop, or a Lose (the request's effect happens, its
// answer is lost). The zero Fault is no fault.
type Fault = fakekit.Fault

// Config configures a Server; zero fields take the defaults above.
type Config struct {
	Token      string
	TeamID     string
	ProjectIDs []string
	// Clock drives session deadlines, snapshot expiry and every time the
	// API reports. Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// MaxSessionTimeout is the plan's maximum session length.
	MaxSessionTimeout time.Duration
	// RouteURL returns the URL of a route. Default
	// https://<subdomain>.vercel.run (what the SDK's domain(p) builds);
	// PreviewURLs points routes at the fake's own /_preview/ pages.
	RouteURL func(subdomain string, port int) string
	// BootDelay is how long after its start a command listens on the port
	// named by its PORT variable; until then (and without such a command)
	// that port's route answers 502 SANDBOX_NOT_LISTENING.
	BootDelay time.Duration
}

// PreviewURLs returns a RouteURL that points routes at base/_preview/<subdomain>/,
// which the fake serves: 200 while the session is running and a command
// listens on the route's port, 502 SANDBOX_NOT_LISTENING while none does,
// 410 SANDBOX_STOPPED after the session stopped. base is the fake's own URL.
func PreviewURLs(base string) func(string, int) string {
	base = strings.TrimRight(base, "/")
	return func(sub string, _ int) string { return base + "/_preview/" + sub + "/" }
}

// Sandbox is the fake's view of one named sandbox, for tests.
type Sandbox struct {
	ProjectID          string
	Name               string
	Persistent         bool
	Status             string // the current session's
	CurrentSessionID   string
	CurrentSnapshotID  string
	Image              string
	Runtime            string
	Timeout            time.Duration // the default of new sessions
	Ports              []int
	Tags               map[string]string
	SnapshotExpiration time.Duration // 0: never
	SessionIDs         []string      // every session, oldest first
	CreatedAt          time.Time
}

// Session is the fake's view of one session, for tests.
type Session struct {
	ID               string
	Sandbox          string
	Status           string
	Timeout          time.Duration
	StartedAt        time.Time
	StoppedAt        time.Time
	SourceSnapshotID string
	Routes           []RouteJSON
}

// The records are the wire shapes they answer with (wire.go), and what
// the API does not show. A sandbox's Status, Memory and ExpiresAt, and a
// session's Memory, VCPUs, Region, Cwd and Duration, are set when answered.
type sandboxRec struct {
	sandboxJSON // Timeout: the default of new sessions
	ports       []int
	env         map[string]string
	sessions    []string
	keepLast    *keepLastJSON
	fault       SnapshotFault
}

type sessionRec struct {
	sessionJSON
	sandbox  *sandboxRec
	routes   []RouteJSON
	commands []*commandRec
	files    *sandboxfs.Mem
	snapshot string // the id of the snapshot that ended it
	// due is when a slow snapshot (SnapshotFault.Slow) of the session
	// completes, with expiration; 0: none under way.
	due, dueExpiration int64
}

type snapshotRec struct {
	snapshotJSON
	expiration int64 // ms after last use, 0: never
	sandbox    *sandboxRec
	files      *sandboxfs.Mem
}

// Server is the fake. Its methods are safe for concurrent use. Its Kit
// counts requests (Requests), injects faults (Fail, FailNext), releases
// hanging requests (Close) and sets the boot delay (SetBootDelay).
type Server struct {
	fakekit.Kit[Op, Fault]

	opts    Config
	handler http.Handler

	mu        sync.Mutex
	seq       int
	sandboxes map[string]*sandboxRec // project + "/" + name
	sessions  map[string]*sessionRec
	snapshots map[string]*snapshotRec
	bySub     map[string]*sessionRec
	switches  fakekit.Switches
}

// NewServer returns a fake with opts (defaults filled in). Serve its
// Handler at the root of a URL: the API paths are /v3/sandboxes and
// /v2/sandboxes/...
func NewServer(opts Config) *Server {
	opts.Token, opts.TeamID = cmp.Or(opts.Token, DefaultToken), cmp.Or(opts.TeamID, DefaultTeamID)
	if len(opts.ProjectIDs) == 0 {
		opts.ProjectIDs = []string{DefaultProjectID}
	}
	if opts.Clock == nil {
		opts.Clock = lifecycle.SystemClock{}
	}
	if opts.MaxSessionTimeout <= 0 {
		opts.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if opts.RouteURL == nil {
		opts.RouteURL = func(sub string, _ int) string { return "https://" + sub + ".vercel.run" }
	}
	s := &Server{
		opts:      opts,
		sandboxes: map[string]*sandboxRec{},
		sessions:  map[string]*sessionRec{},
		snapshots: map[string]*snapshotRec{},
		bySub:     map[string]*sessionRec{},
	}
	s.SetBootDelay(opts.BootDelay)
	mux := http.NewServeMux()
	mux.Handle("POST /v3/sandboxes", s.api(OpCreate, s.create))
	mux.Handle("POST /v2/sandboxes", s.api(OpCreate, s.create))
	mux.HandleFunc("GET /v2/sandboxes/{name}", s.getOrResume)
	mux.Handle("GET /v2/sandboxes", s.api(OpList, s.list))
	mux.Handle("PATCH /v2/sandboxes/{name}", s.api(OpUpdate, s.update))
	mux.Handle("DELETE /v2/sandboxes/{name}", s.api(OpDelete, s.remove))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/stop", s.api(OpStop, s.stop))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/extend-timeout", s.api(OpExtend, s.extend))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/snapshot", s.api(OpSnapshot, s.snapshot))
	mux.Handle("GET /v2/sandboxes/sessions/{id}", s.api(OpSession, s.session))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/cmd", s.api(OpCommand, s.runCommand))
	mux.Handle("GET /v2/sandboxes/sessions/{id}/cmd/{cmd}", s.api(OpCommandStatus, s.commandStatus))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/cmd/{cmd}/kill", s.api(OpCommandKill, s.killCommand))
	mux.Handle("GET /v2/sandboxes/sessions/{id}/cmd/{cmd}/logs", s.api(OpCommandLogs, s.commandLogs))
	mux.Handle("POST /v2/sandboxes/{name}/fork", s.api(OpFork, s.fork))
	s.fileRoutes(mux)
	mux.Handle("GET /v2/sandboxes/snapshots", s.api(OpSnapshotList, s.listSnapshots))
	mux.Handle("GET /v2/sandboxes/snapshots/tree", s.api(OpSnapshotList, s.snapshotTree))
	mux.Handle("GET /v2/sandboxes/snapshots/{id}", s.api(OpSnapshotGet, s.getSnapshot))
	mux.Handle("DELETE /v2/sandboxes/snapshots/{id}", s.api(OpSnapshotDelete, s.getSnapshot))
	preview := s.faulty(OpPreview, http.HandlerFunc(s.preview))
	mux.Handle("GET /_preview/{sub}/", preview)
	mux.Handle(fakekit.ControlPrefix+"/faults", fakekit.Control(&s.Kit))
	fakekit.ControlSandboxes(mux, s)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sub, ok := strings.CutSuffix(fakekit.Hostname(r.Host), "."+PreviewDomain); ok && sub != "" && !strings.Contains(sub, ".") {
			r.SetPathValue("sub", sub)
			preview.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	return s
}

// PreviewDomain is the domain of Vercel's previews: the SDK's domain(p) is
// https://<route subdomain>.vercel.run. A request to the fake whose Host is
// <subdomain>.vercel.run is that route's preview.
const PreviewDomain = "vercel.run"

// Handler serves the fake's API, and the previews by Host (PreviewDomain)
// and at /_preview/<subdomain>/.
func (s *Server) Handler() http.Handler { return s.handler }

// Config returns the configuration in force (defaults filled in).
func (s *Server) Config() Config { return s.opts }

// FailNext queues faults for the next requests of any operation, one
// request each; they come before those queued by Fail.
func (s *Server) FailNext(faults ...Fault) { s.Fail(opAny, faults...) }

// opAny keys FailNext's faults: the zero Op, any operation.
const opAny Op = ""

// Boots returns how many sessions were booted (by create or resume).
func (s *Server) Boots() int { return s.Tally("boots") }

// Refused returns how many requests were refused for their token or team.
func (s *Server) Refused() int { return s.Tally("refused") }

// Sandbox returns the named sandbox of project as the fake holds it now
// (session deadlines applied).
func (s *Server) Sandbox(project, name string) (Sandbox, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	sb, ok := s.sandboxes[project+"/"+name]
	if !ok {
		return Sandbox{}, false
	}
	return Sandbox{
		ProjectID: sb.ProjectID, Name: sb.Name, Persistent: sb.Persistent, Status: s.statusOf(sb),
		CurrentSessionID: sb.CurrentSessionID, CurrentSnapshotID: sb.CurrentSnapshotID,
		Image: sb.Image, Runtime: sb.Runtime, Timeout: ms(sb.Timeout), Ports: slices.Clone(sb.ports), Tags: maps.Clone(sb.Tags),
		SnapshotExpiration: ms(sb.SnapshotExpiration), SessionIDs: slices.Clone(sb.sessions),
		CreatedAt: at(sb.CreatedAt),
	}, true
}

// Session returns the session of id as the fake holds it now.
func (s *Server) Session(id string) (Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	se, ok := s.sessions[id]
	if !ok {
		return Session{}, false
	}
	return Session{ID: se.ID, Sandbox: se.sandbox.Name, Status: se.Status, Timeout: ms(se.Timeout),
		StartedAt: at(se.StartedAt), StoppedAt: at(se.StoppedAt), SourceSnapshotID: se.SourceSnapshotID,
		Routes: slices.Clone(se.routes)}, true
}

// SetStatus forces the current session of a sandbox into status (e.g.
// stopping or snapshotting, which the fake otherwise passes through
// instantly). It reports whether the sandbox exists.
func (s *Server) SetStatus(project, name, status string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[project+"/"+name]
	if !ok {
		return false
	}
	se := s.sessions[sb.CurrentSessionID]
	se.Status = status
	se.UpdatedAt = s.now()
	sb.StatusUpdatedAt = se.UpdatedAt
	return true
}

// SetTags replaces a sandbox's tags as PATCH would. It reports whether the
// sandbox exists.
func (s *Server) SetTags(project, name string, tags map[string]string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[project+"/"+name]
	if ok {
		sb.Tags = maps.Clone(tags)
	}
	return ok
}

func (s *Server) now() int64 { return s.opts.Clock.Now().UnixMilli() }

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func at(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// api wraps an API handler: count, faults, bearer token and team.
func (s *Server) api(op Op, h http.HandlerFunc) http.Handler {
	return s.faulty(op, s.held(op, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.opts.Token {
			s.Add("refused")
			writeError(w, http.StatusForbidden, "forbidden", "Not authorized: the token is missing or invalid")
			return
		}
		if team := r.URL.Query().Get("teamId"); team != s.opts.TeamID {
			s.Add("refused")
			writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf("Not authorized for team %q", team))
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.expire()
		h(w, r)
	})))
}

// getOrResume dispatches GET /v2/sandboxes/{name} by its resume parameter,
// so the two are counted and faulted apart.
func (s *Server) getOrResume(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("resume") == "true" {
		s.api(OpResume, s.get).ServeHTTP(w, r)
		return
	}
	s.api(OpGet, s.get).ServeHTTP(w, r)
}

// faulty counts requests of op and serves the next fault queued for any
// operation (FailNext) or for op, if any, as Vercel's error body.
func (s *Server) faulty(op Op, next http.Handler) http.Handler {
	return s.Handle(op, next, func(w http.ResponseWriter, _ *http.Request, f Fault) {
		msg := f.Prepare(w)
		writeError(w, f.Status, cmp.Or(f.Code, codeOf(f.Status)), msg)
	}, opAny, op)
}

func codeOf(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status >= 500:
		return "internal_server_error"
	case status == http.StatusNotFound:
		return "not_found"
	case status == http.StatusForbidden:
		return "forbidden"
	default:
		return "bad_request"
	}
}

// expire stops every running session past its deadline, as of that
// deadline (snapshotting a persistent sandbox's), completes slow
// snapshots that are due, and deletes snapshots past their expiry.
// Callers hold s.mu.
func (s *Server) expire() {
	now := s.now()
	for _, se := range s.sessions {
		if se.due != 0 && se.due <= now {
			s.stopSession(se, se.due, true, se.dueExpiration)
			se.due = 0
		}
		if se.Status != StatusRunning && se.Status != StatusPending {
			continue
		}
		if dl := se.StartedAt + se.Timeout; dl <= now {
			s.stopAt(se, dl)
		}
	}
	for _, snap := range s.snapshots {
		if snap.Status == "created" && snap.ExpiresAt != 0 && snap.ExpiresAt <= now {
			snap.Status, snap.UpdatedAt = "deleted", snap.ExpiresAt
		}
	}
}

// stopAt stops se at t; a persistent sandbox's current session is
// snapshotted first. It returns the snapshot taken, if any.
func (s *Server) stopAt(se *sessionRec, t int64) *snapshotRec {
	sb := se.sandbox
	return s.stopSession(se, t, sb.Persistent && sb.CurrentSessionID == se.ID, sb.SnapshotExpiration)
}

// stopSession stops se at t, snapshotting it first (expiration exp ms)
// when snapshot is true. It returns the snapshot taken, if any.
func (s *Server) stopSession(se *sessionRec, t int64, snapshot bool, exp int64) *snapshotRec {
	sb := se.sandbox
	var snap *snapshotRec
	if snapshot {
		snap = s.takeSnapshot(se, exp, t)
		se.SnapshottedAt = t
	}
	killCommands(se)
	se.Status = StatusStopped
	se.RequestedStopAt = cmp.Or(se.RequestedStopAt, t)
	se.StoppedAt, se.UpdatedAt = t, t
	sb.StatusUpdatedAt, sb.UpdatedAt = t, t
	return snap
}

// boot starts a new session of sb with snap's files (nil: none).
func (s *Server) boot(sb *sandboxRec, snap *snapshotRec) *sessionRec {
	now := s.now()
	s.seq++
	s.Add("boots")
	se := &sessionRec{sessionJSON: sessionJSON{ID: fmt.Sprintf("sbx_%08d", s.seq), Status: StatusRunning, Timeout: sb.Timeout,
		RequestedAt: now, StartedAt: now, CreatedAt: now, UpdatedAt: now}, sandbox: sb, files: &sandboxfs.Mem{}}
	if snap != nil {
		s.useSnapshot(snap, now)
		se.SourceSnapshotID, se.files = snap.ID, snap.files.Clone()
	}
	s.routeSession(se, sb.ports)
	s.sessions[se.ID] = se
	sb.sessions = append(sb.sessions, se.ID)
	sb.CurrentSessionID = se.ID
	sb.StatusUpdatedAt, sb.UpdatedAt = now, now
	return se
}

// routeSession gives se a route per port, each with a new opaque subdomain.
func (s *Server) routeSession(se *sessionRec, ports []int) {
	for _, r := range se.routes {
		delete(s.bySub, r.Subdomain)
	}
	se.routes = make([]RouteJSON, 0, len(ports))
	for _, p := range ports {
		s.seq++
		sub := fmt.Sprintf("sb-%06x-%d", s.seq*7919%0xffffff, p)
		se.routes = append(se.routes, RouteJSON{URL: s.opts.RouteURL(sub, p), Subdomain: sub, Port: p})
		s.bySub[sub] = se
	}
}

func (s *Server) statusOf(sb *sandboxRec) string {
	if se, ok := s.sessions[sb.CurrentSessionID]; ok {
		return se.Status
	}
	return StatusStopped
}

func (s *Server) sandboxJSON(sb *sandboxRec) sandboxJSON {
	out := sb.sandboxJSON
	out.Status, out.Memory, out.Tags = s.statusOf(sb), sb.VCPUs*2048, maps.Clone(sb.Tags)
	if se, ok := s.sessions[sb.CurrentSessionID]; ok && (se.Status == StatusRunning || se.Status == StatusPending) {
		out.ExpiresAt = se.StartedAt + se.Timeout
	}
	return out
}

func sessionJSONOf(se *sessionRec) sessionJSON {
	out := se.sessionJSON
	out.Memory, out.VCPUs, out.Region, out.Cwd = se.sandbox.VCPUs*2048, se.sandbox.VCPUs, se.sandbox.Region, "/vercel/sandbox"
	if se.StoppedAt != 0 && se.StartedAt != 0 {
		out.Duration = se.StoppedAt - se.StartedAt
	}
	return out
}

func snapshotJSONOf(sn *snapshotRec) *snapshotJSON {
	out := sn.snapshotJSON
	return &out
}

func (s *Server) answer(sb *sandboxRec, resumed bool) sandboxAnswer {
	se := s.sessions[sb.CurrentSessionID]
	return sandboxAnswer{Sandbox: s.sandboxJSON(sb), Session: sessionJSONOf(se), Routes: orEmpty(se.routes), Resumed: resumed}
}

// project returns the project named by the query parameter key, writing
// the error when it is missing (400) or unknown (404).
func (s *Server) project(w http.ResponseWriter, id string) (string, bool) {
	if id == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "projectId is required")
		return "", false
	}
	if !slices.Contains(s.opts.ProjectIDs, id) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("project %q not found", id))
		return "", false
	}
	return id, true
}

// lookup finds the sandbox of the path's name in the query's projectId.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *sandboxRec {
	project, ok := s.project(w, r.URL.Query().Get("projectId"))
	if !ok {
		return nil
	}
	sb, ok := s.sandboxes[project+"/"+r.PathValue("name")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("sandbox %q not found", r.PathValue("name")))
		return nil
	}
	return sb
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// decode reads a JSON object body strictly: a key not exactly one of keys
// is a 400 (the API's names are case-sensitive; encoding/json is not). An
// optional body may be absent.
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool, keys ...string) bool {
	switch unknown, err := fakekit.ReadObject(w, r, v, optional, keys...); {
	case errors.Is(err, fakekit.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "bad_request", "body too large")
	case len(unknown) > 0: // refused before the fields are read
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("invalid body: unknown field %q", unknown[0]))
	case err != nil:
		writeError(w, http.StatusBadRequest, "bad_request", "invalid body: "+err.Error())
	default:
		return true
	}
	return false
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	fakekit.WriteJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// orEmpty returns a copy of routes, never nil (the API answers [], never
// null).
func orEmpty(routes []RouteJSON) []RouteJSON { return append([]RouteJSON{}, routes...) }
