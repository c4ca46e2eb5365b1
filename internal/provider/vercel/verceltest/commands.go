package verceltest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The run-command operations (docs/providers/vercel.md "Running a command in
// the sandbox, and readiness").
const (
	OpCommand       Op = "cmd"        // POST /v2/sandboxes/sessions/{id}/cmd
	OpCommandStatus Op = "cmd-status" // GET /v2/sandboxes/sessions/{id}/cmd/{cmdId}
	OpCommandKill   Op = "cmd-kill"   // POST /v2/sandboxes/sessions/{id}/cmd/{cmdId}/kill
	OpCommandLogs   Op = "cmd-logs"   // GET /v2/sandboxes/sessions/{id}/cmd/{cmdId}/logs
)

// commandRec is one command of a session. It "listens" once
// Config.BootDelay has passed since its start on the port named by its PORT
// variable, or else on the ports its command line names
// (fakekit.ListenPorts: python3 -m http.server 3000; for sh -c <script>
// ... <line>, as the adapter sends, the last argument is the line),
// unless its line holds --no-listen; a line "exit N" exits at once with N.
// A stop of its session kills it (exit code 137): processes do not survive
// a stop, a resume is a new session. Its output is "starting <line>" on
// stdout, and for "exit N" "exited with N" on stderr.
type commandRec struct {
	id, command string
	args        []string
	cwd         string
	env         map[string]string
	sessionID   string
	startedAt   int64 // ms
	exitCode    *int
	ports       []int // the ports it listens on once booted (fakekit.ListenPorts)
	noListen    bool
	logs        []LogLine
}

// LogLine is one line of a command's logs (NDJSON): stream is "stdout" or
// "stderr".
type LogLine struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// CommandJSON is the API's Command.
type CommandJSON struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Args      []string `json:"args"`
	Cwd       string   `json:"cwd"`
	SessionID string   `json:"sessionId"`
	ExitCode  *int     `json:"exitCode"`
	StartedAt int64    `json:"startedAt"`
}

type commandBody struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Timeout *int64            `json:"timeout"`
	Wait    bool              `json:"wait"`
	Logs    bool              `json:"logs"`
}

var exitRE = regexp.MustCompile(`^exit (\d+)$`)

func commandJSONOf(c *commandRec) CommandJSON {
	return CommandJSON{ID: c.id, Name: c.command, Args: append([]string{}, c.args...), Cwd: c.cwd,
		SessionID: c.sessionID, ExitCode: c.exitCode, StartedAt: c.startedAt}
}

// runCommand starts a command in the path's running session: detached,
// or with "wait":true answering an NDJSON stream (the command, its log
// lines when "logs":true, the command again once it exited). A file
// command of sandboxfs (sh -c <line>) reads or writes the session's files
// and exits at once, printing only a read's output.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil || notRunning(w, se) {
		return
	}
	var body commandBody
	if !decode(w, r, &body, false, "command", "args", "cwd", "env", "sudo", "timeout", "wait", "logs") {
		return
	}
	if body.Command == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid body: command is required")
		return
	}
	s.seq++
	c := &commandRec{id: fmt.Sprintf("cmd_%08d", s.seq), command: body.Command, args: body.Args, cwd: body.Cwd,
		env: body.Env, sessionID: se.ID, startedAt: s.now()}
	line := strings.TrimSpace(strings.Join(append([]string{body.Command}, body.Args...), " "))
	if len(body.Args) > 0 {
		line = strings.TrimSpace(body.Args[len(body.Args)-1])
	}
	shell := len(body.Args) > 0 && body.Args[0] == "-c"
	if out, code, ok := se.files.Run(line); shell && ok {
		c.exitCode, c.logs = &code, []LogLine{{Stream: "stdout", Data: string(out)}}
		s.started(w, r, se, c, body)
		return
	}
	ports := line
	if !shell {
		// Not a shell's -c: the ports may be any argument (node server.js
		// --port 3000 --verbose).
		ports = strings.Join(append([]string{body.Command}, body.Args...), " ")
	}
	c.ports = fakekit.ListenPorts(ports, body.Env["PORT"])
	c.noListen = strings.Contains(line, "--no-listen")
	c.logs = []LogLine{{Stream: "stdout", Data: "starting " + line + "\n"}}
	if m := exitRE.FindStringSubmatch(line); m != nil {
		code, _ := strconv.Atoi(m[1])
		c.exitCode = &code
		c.logs = append(c.logs, LogLine{Stream: "stderr", Data: fmt.Sprintf("exited with %d\n", code)})
	}
	s.started(w, r, se, c, body)
}

// started records c in se and answers its start as body asked.
func (s *Server) started(w http.ResponseWriter, r *http.Request, se *sessionRec, c *commandRec, body commandBody) {
	se.commands = append(se.commands, c)
	if body.Wait {
		s.stream(w, r, c, true, body.Logs)
		return
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"command": commandJSONOf(c)})
}

// commandOf finds the path's command of the path's session, writing the
// answer when there is none (404) or the session is not running (410).
func (s *Server) commandOf(w http.ResponseWriter, r *http.Request) *commandRec {
	se := s.sessionOf(w, r)
	if se == nil || notRunning(w, se) {
		return nil
	}
	for _, c := range se.commands {
		if c.id == r.PathValue("cmd") {
			return c
		}
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("command %q not found", r.PathValue("cmd")))
	return nil
}

// commandStatus answers a command; with ?wait=true it first waits until
// the command has exited (or the client gives up).
func (s *Server) commandStatus(w http.ResponseWriter, r *http.Request) {
	c := s.commandOf(w, r)
	if c == nil {
		return
	}
	if r.URL.Query().Get("wait") == "true" && !s.waitExit(r, c) {
		return
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"command": commandJSONOf(c)})
}

// commandLogs streams a command's output as NDJSON lines
// {"stream","data"}, following it until the command exits (or the client
// gives up), as Vercel's logs endpoint does.
func (s *Server) commandLogs(w http.ResponseWriter, r *http.Request) {
	if c := s.commandOf(w, r); c != nil {
		s.stream(w, r, c, false, true)
	}
}

// stream answers an NDJSON stream following c until it exits (or the
// client gives up): its log lines when logs, and, when wait, the command
// first and once more when it exited.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *commandRec, wait, logs bool) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	if wait {
		_ = enc.Encode(map[string]any{"command": commandJSONOf(c)})
	}
	for sent := 0; ; {
		for ; logs && sent < len(c.logs); sent++ {
			_ = enc.Encode(c.logs[sent])
		}
		_ = rc.Flush()
		if c.exitCode != nil {
			if wait {
				_ = enc.Encode(map[string]any{"command": commandJSONOf(c)})
			}
			return
		}
		if !s.waitChange(r) {
			return
		}
	}
}

// waitExit waits, letting go of mu meanwhile, until c has exited; false
// when the client or the fake gave up first. Callers hold mu.
func (s *Server) waitExit(r *http.Request, c *commandRec) bool {
	for c.exitCode == nil {
		if !s.waitChange(r) {
			return false
		}
	}
	return true
}

// waitChange lets go of mu for a moment (50 ms) so the fake's state can
// move, taking it back (and applying deadlines) before it returns; false
// when the client or the fake gave up. Callers hold mu.
func (s *Server) waitChange(r *http.Request) bool {
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.expire()
	}()
	return s.Wait(r, 50*time.Millisecond)
}

// CommandLogs returns the output lines of command cmdID of session
// sessionID, oldest first.
func (s *Server) CommandLogs(sessionID, cmdID string) []LogLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[sessionID]; ok {
		for _, c := range se.commands {
			if c.id == cmdID {
				return append([]LogLine(nil), c.logs...)
			}
		}
	}
	return nil
}

func (s *Server) killCommand(w http.ResponseWriter, r *http.Request) {
	c := s.commandOf(w, r)
	if c == nil {
		return
	}
	var body struct {
		Signal int `json:"signal"`
	}
	if !decode(w, r, &body, true, "signal") {
		return
	}
	if c.exitCode == nil {
		code := 128 + cmp.Or(body.Signal, 15)
		c.exitCode = &code
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"command": commandJSONOf(c)})
}

// killCommands ends every command of se (its session stopped).
func killCommands(se *sessionRec) {
	for _, c := range se.commands {
		if c.exitCode == nil {
			code := 137
			c.exitCode = &code
		}
	}
}

// listens reports whether a command of se listens on port at now (ms).
func (s *Server) listens(se *sessionRec, port int, now int64) bool {
	for _, c := range se.commands {
		if c.exitCode == nil && !c.noListen && slices.Contains(c.ports, port) && now-c.startedAt >= s.BootDelay().Milliseconds() {
			return true
		}
	}
	return false
}

// Commands returns the commands started in session sessionID, oldest first.
func (s *Server) Commands(sessionID string) []CommandJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[sessionID]
	if !ok {
		return nil
	}
	out := make([]CommandJSON, 0, len(se.commands))
	for _, c := range se.commands {
		out = append(out, commandJSONOf(c))
	}
	return out
}
