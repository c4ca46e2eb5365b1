package daytonatest

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

// The toolbox's process sessions and the preview of each port
// (docs/providers/daytona.md "Running a command in the sandbox, and
// readiness"). The toolbox is at <ToolboxProxyURL>/{id} (ID only; a sandbox
// not started answers 400): POST /process/session {"sessionId"} → 201 (409
// when it exists; "entrypoint" is reserved, 400), GET lists them, GET and
// DELETE (204) …/session/{sid}; POST …/session/{sid}/exec
// {"command","runAsync"} → 202 {"cmdId"}, or 200 with exitCode and output
// when not runAsync; GET …/command/{cmdId} → {id, command, exitCode?} (none
// while it runs) and …/logs → {output, stdout, stderr}; POST
// /process/execute {"command"} → {exitCode, result}, run to completion.
// A sandboxfs line (as the adapter's Files and workspace archives send it)
// reads and writes the sandbox's files (sandboxfs.Mem.Run); any other
// command is a
// fakekit.Proc: it listens once Config.BootDelay has passed, on the ports
// its line names (read past the start guard's script). A stop (any state
// but started, pausing, paused, resuming, snapshotting, forking) loses
// every session, as Daytona's stop clears memory.
//
// The preview, https://{port}-{id}.<ProxyDomain>/…: without the token of a
// private sandbox (query DAYTONA_SANDBOX_AUTH_KEY or header
// X-Daytona-Preview-Token), a 307 to an auth page; a sandbox not started,
// 400 "…Is the Sandbox started?"; nothing listening, an empty 502;
// otherwise the "app" answers 200.

// The toolbox and preview operations.
const (
	OpToolbox Op = "toolbox" // every toolbox call (process sessions)
	OpProxy   Op = "proxy"   // every request that reached a preview (counted, never faulted)
)

// toolSession is one toolbox process session of a sandbox: its commands,
// oldest first.
type toolSession []*fakekit.Proc

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
	route("POST /process/execute", s.execute)
	s.fileRoutes(route)
}

// started returns the started sandbox of the request's {id}, or answers
// 404 or 400 and returns nil. Callers hold mu.
func (s *Server) started(w http.ResponseWriter, r *http.Request) *Sandbox {
	sb := s.lookup(w, r, false)
	if sb != nil && sb.State != StateStarted {
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
	switch sb := s.started(w, r); {
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
	if sb := s.started(w, r); sb != nil {
		out := []map[string]any{}
		for id, sess := range s.procs[sb.ID] {
			out = append(out, sessionJSON(id, sess))
		}
		s.writeJSON(w, http.StatusOK, out)
	}
}

func sessionJSON(id string, sess *toolSession) map[string]any {
	cmds := []map[string]any{}
	for _, c := range *sess {
		cmds = append(cmds, commandJSON(c))
	}
	return map[string]any{"sessionId": id, "commands": cmds}
}

func commandJSON(c *fakekit.Proc) map[string]any {
	m := map[string]any{"id": c.ID, "command": c.Line}
	if c.Exit != nil {
		m["exitCode"] = *c.Exit
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
	}
	return sb, sess
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if _, sess := s.session(w, r); sess != nil {
		s.writeJSON(w, http.StatusOK, sessionJSON(r.PathValue("sid"), sess))
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
	sb, sess := s.session(w, r)
	switch {
	case sess == nil:
		return
	case strings.TrimSpace(body.Command) == "":
		s.writeError(w, r, http.StatusBadRequest, "command is required")
		return
	}
	s.cmdSeq++
	c := s.run(sb, fmt.Sprintf("cmd-%06d", s.cmdSeq), body.Command)
	*sess = append(*sess, c)
	if body.RunAsync || body.Async {
		s.writeJSON(w, http.StatusAccepted, map[string]string{"cmdId": c.ID})
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"cmdId": c.ID, "output": c.Output, "stdout": c.Output, "stderr": "", "exitCode": c.Code()})
}

// execute serves POST /process/execute {"command"}: it runs the command
// to completion, {"exitCode", "result"} (stdout and stderr together).
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Command string `json:"command"`
	}
	if !s.decode(w, r, &body) {
		return
	}
	sb := s.started(w, r)
	switch {
	case sb == nil:
		return
	case strings.TrimSpace(body.Command) == "":
		s.writeError(w, r, http.StatusBadRequest, "command is required")
		return
	}
	c := s.run(sb, "", body.Command)
	s.writeJSON(w, http.StatusOK, map[string]any{"exitCode": c.Code(), "result": c.Output})
}

// run starts command in sb: a sandboxfs line reads or writes its files and
// exits at once; what any other does is read past the start guard's
// script. Callers hold mu.
func (s *Server) run(sb *Sandbox, id, command string) *fakekit.Proc {
	line := unwrap(command)
	c := fakekit.StartProc(id, command, startguard.Unwrap(line), s.opts.Clock.Now())
	if out, code, ok := sb.fs().Run(line); ok {
		c.Exited(code, string(out))
	}
	return c
}

// shWrapped is a line sent as process/execute takes one, which splits the
// command at spaces and runs no shell: sh -c "echo <base64> | base64 -d | sh".
var shWrapped = regexp.MustCompile(`^sh -c "echo ([A-Za-z0-9+/=]+) \| base64 -d \| sh"$`)

// unwrap returns the line a shWrapped command carries, else command.
func unwrap(command string) string {
	if m := shWrapped.FindStringSubmatch(command); m != nil {
		if b, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			return string(b)
		}
	}
	return command
}

// command returns the request's command {cmd}, or answers and returns nil.
// Callers hold mu.
func (s *Server) command(w http.ResponseWriter, r *http.Request) *fakekit.Proc {
	if _, sess := s.session(w, r); sess != nil {
		for _, c := range *sess {
			if c.ID == r.PathValue("cmd") {
				return c
			}
		}
		s.writeError(w, r, http.StatusNotFound, "command not found")
	}
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
	case StateStarted, StatePausing, StatePaused, StateResuming, StateSnapshotting, StateForking:
	default:
		delete(s.procs, sb.ID)
	}
}

// Commands returns the command lines executed in sandboxID's toolbox
// session sessionID, oldest first (nil when there is no such session).
func (s *Server) Commands(sandboxID, sessionID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if sess := s.procs[sandboxID][sessionID]; sess != nil {
		out = []string{}
		for _, c := range *sess {
			out = append(out, c.Line)
		}
	}
	return out
}

// preview serves https://{port}-{id}.<ProxyDomain>/…. A proxied request
// is activity; it never starts a stopped sandbox.
func (s *Server) preview(w http.ResponseWriter, r *http.Request, port int, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Count(OpProxy)
	s.tick()
	sb, _ := s.sandboxes.Get(id)
	tok := cmp.Or(r.URL.Query().Get("DAYTONA_SANDBOX_AUTH_KEY"), r.Header.Get("X-Daytona-Preview-Token"))
	switch {
	case sb == nil:
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID %s not found", id))
		return
	case !sb.Public && tok != sb.Token:
		w.Header().Set("Location", "https://auth."+s.opts.ProxyDomain+"/")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	case sb.State != StateStarted:
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Failed to get sandbox target: sandbox %s is %s. Is the Sandbox started?", sb.ID, sb.State))
		return
	}
	now := s.opts.Clock.Now()
	sb.LastActivityAt = now
	for _, sess := range s.procs[sb.ID] {
		for _, c := range *sess {
			if c.Listens(port, now, s.BootDelay()) {
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

// SetPreviewBaseURL sets Config.PreviewBaseURL.
func (s *Server) SetPreviewBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.PreviewBaseURL = u
}

// previewURL serves GET /sandbox/{id}/ports/{port}/preview-url.
func (s *Server) previewURL(w http.ResponseWriter, r *http.Request) {
	if port, sb := s.portOf(w, r); sb != nil {
		u := fmt.Sprintf("https://%d-%s.%s", port, sb.ID, s.opts.ProxyDomain)
		if s.opts.PreviewBaseURL != "" {
			u = fmt.Sprintf("%s/preview/%d-%s/", strings.TrimSuffix(s.opts.PreviewBaseURL, "/"), port, sb.ID)
		}
		s.writeJSON(w, http.StatusOK, map[string]any{"sandboxId": sb.ID, "url": u, "token": sb.Token})
	}
}

// signedPreviewURL serves GET /sandbox/{id}/ports/{port}/signed-preview-url.
func (s *Server) signedPreviewURL(w http.ResponseWriter, r *http.Request) {
	if _, ok := fakekit.Limit(r.URL.Query().Get("expiresInSeconds"), 0, 1, 86400); !ok {
		s.writeError(w, r, http.StatusBadRequest, "expiresInSeconds must be between 1 and 86400")
	} else if port, sb := s.portOf(w, r); sb != nil {
		tok := s.newToken()
		s.writeJSON(w, http.StatusOK, map[string]any{"sandboxId": sb.ID, "port": port, "token": tok,
			"url": fmt.Sprintf("https://%d-%s.%s", port, tok, s.opts.ProxyDomain)})
	}
}

// portOf reads the request's {port} and sandbox, or answers 400 or 404 and
// returns a nil sandbox. Callers hold mu.
func (s *Server) portOf(w http.ResponseWriter, r *http.Request) (int, *Sandbox) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		s.writeError(w, r, http.StatusBadRequest, "Invalid port")
		return 0, nil
	}
	return port, s.lookup(w, r, true)
}

func (s *Server) toolboxProxy(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r, true); sb != nil {
		s.writeJSON(w, http.StatusOK, map[string]string{"url": s.opts.ToolboxProxyURL})
	}
}
