package daytonatest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

// The toolbox's process sessions and the preview per port
// (docs/providers/daytona.md "Running a command in the sandbox, and
// readiness"):
//
//   - <ToolboxProxyURL>/{id}/process/session: POST {"sessionId"} makes a
//     session (201, empty; 409 when it exists; "entrypoint" is reserved,
//     400), GET lists them; GET and DELETE (204) …/session/{sid};
//     POST …/session/{sid}/exec {"command","runAsync"} answers 202
//     {"cmdId"} (200 with exitCode when not runAsync; empty command 400);
//     GET …/command/{cmdId} answers {id, command, exitCode?} (no exitCode
//     while it runs) and …/command/{cmdId}/logs {output, stdout, stderr}.
//     A sandbox that is not started answers 400.
//   - https://{port}-{id}.<ProxyDomain>/…: the preview of a port. A
//     private sandbox's preview without its token (query
//     DAYTONA_SANDBOX_AUTH_KEY or header X-Daytona-Preview-Token) is a 307
//     to an auth page; a sandbox that is not started answers 400 "…Is the
//     Sandbox started?"; nothing listening is an empty 502; otherwise the
//     "app" answers 200.
//
// A command "listens" once Config.BootDelay has passed since its exec, on
// the port of its PORT=<n>, or else on the ports its line names
// (fakekit.ListenPorts: `python3 -m http.server 3000`); a command containing "exit <n>" exits at once
// with that code, and one containing "--no-listen" never listens. A stop
// (any state but started, pausing, paused, resuming) loses every session,
// as Daytona's stop clears memory.

// The toolbox and preview operations.
const (
	OpToolbox Op = "toolbox" // every toolbox call (process sessions)
	OpProxy   Op = "proxy"   // every request that reached a preview (counted, never faulted)
)

var (
	exitOf = regexp.MustCompile(`\bexit (\d+)`)
)

// toolSession is one toolbox process session of a sandbox.
type toolSession struct {
	commands []*toolCommand
}

// toolCommand is one command executed in a session.
type toolCommand struct {
	ID        string
	Command   string
	Ports     []int // the ports it listens on once booted (fakekit.ListenPorts)
	StartedAt time.Time
	ExitCode  *int
	Output    string
	NoListen  bool
}

func (s *Server) toolboxRoutes(mux *http.ServeMux) {
	route := func(pattern string, h func(http.ResponseWriter, *http.Request)) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.Handle(method+" /toolbox/{id}"+path, s.wrap(OpToolbox, h))
	}
	route("POST /process/session", s.createSession)
	route("GET /process/session", s.listSessions)
	route("GET /process/session/{sid}", s.getSession)
	route("DELETE /process/session/{sid}", s.deleteSession)
	route("POST /process/session/{sid}/exec", s.exec)
	route("GET /process/session/{sid}/command/{cmd}", s.getCommand)
	route("GET /process/session/{sid}/command/{cmd}/logs", s.commandLogs)
}

// started returns the started sandbox of the request's {id}, or answers
// 404 or 400 and returns nil. Callers hold mu.
func (s *Server) started(w http.ResponseWriter, r *http.Request) *Sandbox {
	sb := s.lookupByID(w, r)
	if sb == nil {
		return nil
	}
	if sb.State != StateStarted {
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Sandbox %s is %s. Is the Sandbox started?", sb.ID, sb.State))
		return nil
	}
	return sb
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		SessionID string `json:"sessionId"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	sb := s.started(w, r)
	switch {
	case sb == nil:
	case body.SessionID == "" || body.SessionID == "entrypoint":
		s.writeError(w, r, http.StatusBadRequest, "invalid session id")
	case s.procs[sb.ID][body.SessionID] != nil:
		s.writeError(w, r, http.StatusConflict, "session already exists")
	default:
		if s.procs[sb.ID] == nil {
			s.procs[sb.ID] = map[string]*toolSession{}
		}
		s.procs[sb.ID][body.SessionID] = &toolSession{}
		w.WriteHeader(http.StatusCreated)
	}
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	sb := s.started(w, r)
	if sb == nil {
		return
	}
	out := []map[string]any{}
	for id, sess := range s.procs[sb.ID] {
		out = append(out, s.sessionJSON(id, sess))
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) sessionJSON(id string, sess *toolSession) map[string]any {
	cmds := []map[string]any{}
	for _, c := range sess.commands {
		cmds = append(cmds, commandJSON(c))
	}
	return map[string]any{"sessionId": id, "commands": cmds}
}

func commandJSON(c *toolCommand) map[string]any {
	m := map[string]any{"id": c.ID, "command": c.Command}
	if c.ExitCode != nil {
		m["exitCode"] = *c.ExitCode
	}
	return m
}

// session returns the request's started sandbox's session {sid}, or
// answers and returns nil. Callers hold mu.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*Sandbox, *toolSession) {
	sb := s.started(w, r)
	if sb == nil {
		return nil, nil
	}
	sess := s.procs[sb.ID][r.PathValue("sid")]
	if sess == nil {
		s.writeError(w, r, http.StatusNotFound, "session not found")
		return nil, nil
	}
	return sb, sess
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if _, sess := s.session(w, r); sess != nil {
		s.writeJSON(w, http.StatusOK, s.sessionJSON(r.PathValue("sid"), sess))
	}
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if sb, sess := s.session(w, r); sess != nil {
		delete(s.procs[sb.ID], r.PathValue("sid"))
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Command  string `json:"command"`
		RunAsync bool   `json:"runAsync"`
		Async    bool   `json:"async"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	_, sess := s.session(w, r)
	if sess == nil {
		return
	}
	if strings.TrimSpace(body.Command) == "" {
		s.writeError(w, r, http.StatusBadRequest, "command is required")
		return
	}
	s.cmdSeq++
	// The adapter's start guard is read past: what counts is the line.
	line := startguard.Unwrap(body.Command)
	c := &toolCommand{ID: fmt.Sprintf("cmd-%06d", s.cmdSeq), Command: body.Command, StartedAt: s.opts.Clock.Now(),
		NoListen: strings.Contains(line, "--no-listen")}
	c.Ports = fakekit.ListenPorts(line, "")
	if m := exitOf.FindStringSubmatch(line); m != nil {
		code, _ := strconv.Atoi(m[1])
		c.ExitCode = &code
		c.Output = fmt.Sprintf("starting\nexited with %d\n", code)
	}
	sess.commands = append(sess.commands, c)
	if body.RunAsync || body.Async {
		s.writeJSON(w, http.StatusAccepted, map[string]string{"cmdId": c.ID})
		return
	}
	code := 0
	if c.ExitCode != nil {
		code = *c.ExitCode
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"cmdId": c.ID, "output": c.Output, "stdout": c.Output, "stderr": "", "exitCode": code})
}

// command returns the request's command {cmd}, or answers and returns nil.
// Callers hold mu.
func (s *Server) command(w http.ResponseWriter, r *http.Request) *toolCommand {
	_, sess := s.session(w, r)
	if sess == nil {
		return nil
	}
	for _, c := range sess.commands {
		if c.ID == r.PathValue("cmd") {
			return c
		}
	}
	s.writeError(w, r, http.StatusNotFound, "command not found")
	return nil
}

func (s *Server) getCommand(w http.ResponseWriter, r *http.Request) {
	if c := s.command(w, r); c != nil {
		s.writeJSON(w, http.StatusOK, commandJSON(c))
	}
}

func (s *Server) commandLogs(w http.ResponseWriter, r *http.Request) {
	if c := s.command(w, r); c != nil {
		s.writeJSON(w, http.StatusOK, map[string]string{"output": c.Output, "stdout": c.Output, "stderr": ""})
	}
}

// loseProcesses drops sb's sessions when state is one whose memory a stop
// cleared. Callers hold mu.
func (s *Server) loseProcesses(sb *Sandbox, state string) {
	switch state {
	case StateStarted, StatePausing, StatePaused, StateResuming:
	default:
		delete(s.procs, sb.ID)
	}
}

// preview serves https://{port}-{id}.<ProxyDomain>/…. A proxied request
// is activity; it never starts a stopped sandbox.
func (s *Server) preview(w http.ResponseWriter, r *http.Request, port int, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Count(OpProxy)
	s.tick()
	sb, _ := s.sandboxes.Get(id)
	if sb == nil {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID %s not found", id))
		return
	}
	if !sb.Public {
		tok := r.URL.Query().Get("DAYTONA_SANDBOX_AUTH_KEY")
		if tok == "" {
			tok = r.Header.Get("X-Daytona-Preview-Token")
		}
		if tok != sb.Token {
			w.Header().Set("Location", "https://auth."+s.opts.ProxyDomain+"/")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
	}
	if sb.State != StateStarted {
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Failed to get sandbox target: sandbox %s is %s. Is the Sandbox started?", sb.ID, sb.State))
		return
	}
	now := s.opts.Clock.Now()
	sb.LastActivityAt = now
	for _, sess := range s.procs[sb.ID] {
		for _, c := range sess.commands {
			if slices.Contains(c.Ports, port) && c.ExitCode == nil && !c.NoListen && s.Booted(c.StartedAt, now) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprintf(w, "app on port %d\n", port)
				return
			}
		}
	}
	w.WriteHeader(http.StatusBadGateway) // the daemon's AbortWithStatus(502): empty
}

// Preview returns a RoundTripper that serves every request with the fake's
// handler in process, so a test reaches the preview URLs
// (https://{port}-{id}.<ProxyDomain>) without DNS.
func (s *Server) Preview() http.RoundTripper { return fakekit.InProcess(s.Handler()) }

// ProxyRequests counts requests that reached a preview.
func (s *Server) ProxyRequests() int { return s.Requests(OpProxy) }

// decode reads the request's JSON body into v, or answers 400 and reports
// false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "invalid request body")
		return false
	}
	return true
}

// Commands returns the command lines executed in sandboxID's toolbox
// session sessionID, oldest first (nil when there is no such session).
func (s *Server) Commands(sandboxID, sessionID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.procs[sandboxID][sessionID]
	if sess == nil {
		return nil
	}
	out := make([]string, 0, len(sess.commands))
	for _, c := range sess.commands {
		out = append(out, c.Command)
	}
	return out
}

// SetPreviewBaseURL sets Config.PreviewBaseURL.
func (s *Server) SetPreviewBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.PreviewBaseURL = u
}
