package e2btest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

// Process is a background process the fake's envd "runs": it runs nothing,
// and listens once Config.BootDelay has passed since it started (by the
// clock) on the port named by its PORT variable, or else on the ports its
// command line names (fakekit.ListenPorts: `python3 -m http.server 3000`).
// A command line `exit N` ends at once with exit code N (Start's stream
// carries its end event) and is never listed; so do sandboxfs's file and
// workspace archive commands, run on the sandbox's Files, their output in
// data events of at most 32 KiB, as envd reads a pipe.
type Process struct {
	PID       int
	Tag       string
	Cmd       string
	Args      []string
	Envs      map[string]string
	Cwd       string
	StartedAt time.Time
	// Deadline, when set, is when envd kills the process: Start's
	// Connect-Timeout-Ms after its start (the SDK sends 60 s unless told
	// timeoutMs: 0), as envd runs it under the request's context deadline.
	Deadline time.Time
}

// The envd process API and the per-port preview (docs/providers/e2b.md
// "Running a command in the sandbox, and readiness"):
//   - POST <proxy>/{id}/process.Process/Start, Connect streaming with the
//     JSON codec: one enveloped request; the answer is the start event
//     {"event":{"start":{"pid":N}}}, then a keepalive event every
//     Keepalive-Ping-Interval seconds while the process runs, and its end
//     event and the end of the stream once it is killed (the fake's
//     processes print nothing). A background client drops the stream after
//     the pid; the process keeps running. Connect-Timeout-Ms, when sent,
//     kills the process that long after its start (Process.Deadline).
//   - POST <proxy>/{id}/process.Process/List, unary JSON: the running
//     processes with their tags.
//   - POST <proxy>/{id}/process.Process/SendSignal, unary JSON
//     {"process":{"pid":N}} or {"process":{"tag":T}} with a signal: kills
//     the process (every process of that tag); none: Connect not_found
//     (404), which the SDK's kill() reads as false.
//   - GET <proxy>/{id}/port/{port}/…: the preview of a port. 502 JSON
//     {"sandboxId","message":"The sandbox is running but port is not
//     open","port":P,"code":502} while nothing listens; 200 from the "app"
//     once a process listens; 502 "The sandbox was not found" (no port
//     field) for a paused (without auto-resume) or unknown sandbox.
//
// Processes survive a pause (E2B's default memory snapshot) and die with
// the sandbox.
const (
	OpProcessStart Op = "process_start"
	OpProcessList  Op = "process_list"
	OpProcessKill  Op = "process_signal"
	OpPreview      Op = "preview"
)

// line is p's command line: the line the adapter's start guard runs
// (bash -l -c <guard> … <line>), else the last argument of the SDK's
// /bin/bash -l -c <cmd>, else the command and its arguments.
func (p Process) line() string {
	if line, ok := startguard.Line(p.Args); ok {
		return line
	}
	if len(p.Args) >= 2 && p.Args[len(p.Args)-2] == "-c" {
		return p.Args[len(p.Args)-1]
	}
	return strings.Join(append([]string{p.Cmd}, p.Args...), " ")
}

// listenPorts returns the ports p listens on once booted.
func (p Process) listenPorts() []int {
	return fakekit.ListenPorts(p.line(), p.Envs["PORT"])
}

// PortClosedMessage is the message of E2B's 502 while nothing listens.
const PortClosedMessage = "The sandbox is running but port is not open"

func (s *Server) processRoutes(proxy *http.ServeMux) {
	proxy.Handle("POST /{id}/process.Process/Start", s.faulty(OpProcessStart, http.HandlerFunc(s.processStart)))
	proxy.Handle("POST /{id}/process.Process/List", s.faulty(OpProcessList, http.HandlerFunc(s.processList)))
	proxy.Handle("POST /{id}/process.Process/SendSignal", s.faulty(OpProcessKill, http.HandlerFunc(s.processSignal)))
	proxy.Handle("GET /{id}/port/{port}/{rest...}", s.faulty(OpPreview, http.HandlerFunc(s.preview)))
	proxy.Handle("POST /{id}/files", s.faulty(OpFiles, http.HandlerFunc(s.uploadFiles)))
}

// PortURL returns the proxy URL standing in for https://<port>-<id>.<domain>.
func (s *Server) PortURL(sandboxID, _ string, port int) string {
	return s.Proxy.URL + "/" + sandboxID + "/port/" + strconv.Itoa(port) + "/"
}

// Processes returns the processes of a sandbox (after applying deadlines
// due by the clock).
func (s *Server) Processes(id string) []Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if sb, ok := s.sandboxes.Get(id); ok {
		return append([]Process(nil), sb.Processes...)
	}
	return nil
}

// Starts returns how many processes were started (pids handed out; a
// refused Start request is not one, Requests counts those), leaving out
// Sandman's file commands (sandboxfs: the identity marker), which are
// plumbing, not the app's processes.
func (s *Server) Starts() int { return s.Tally("starts") }

func (s *Server) runningSandbox(w http.ResponseWriter, r *http.Request) *Sandbox {
	s.expire()
	sb, ok := s.sandboxes.Get(r.PathValue("id"))
	if !ok || sb.Transition == Killing || readsPaused(sb) {
		writeConnectError(w, http.StatusBadGateway, "unavailable", "The sandbox was not found")
		return nil
	}
	if tok := r.Header.Get("X-Access-Token"); sb.Secure && tok != sb.AccessToken {
		writeConnectError(w, http.StatusUnauthorized, "unauthenticated", "invalid access token")
		return nil
	}
	return sb
}

func (s *Server) processStart(w http.ResponseWriter, r *http.Request) {
	var head [5]byte
	if _, err := io.ReadFull(r.Body, head[:]); err != nil || r.Header.Get("Content-Type") != "application/connect+json" {
		writeConnectError(w, http.StatusBadRequest, "invalid_argument", "want one application/connect+json envelope")
		return
	}
	msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(r.Body, msg); err != nil {
		writeConnectError(w, http.StatusBadRequest, "invalid_argument", "short envelope")
		return
	}
	var in struct {
		Process struct {
			Cmd  string            `json:"cmd"`
			Args []string          `json:"args"`
			Envs map[string]string `json:"envs"`
			Cwd  string            `json:"cwd"`
		} `json:"process"`
		Tag string `json:"tag"`
	}
	if err := json.Unmarshal(msg, &in); err != nil || in.Process.Cmd == "" {
		writeConnectError(w, http.StatusBadRequest, "invalid_argument", "process.cmd is required")
		return
	}
	s.mu.Lock()
	sb := s.runningSandbox(w, r)
	if sb == nil {
		s.mu.Unlock()
		return
	}
	s.pid++
	p := Process{PID: s.pid, Tag: in.Tag, Cmd: in.Process.Cmd, Args: in.Process.Args, Envs: in.Process.Envs,
		Cwd: in.Process.Cwd, StartedAt: s.now()}
	if ms, err := strconv.ParseInt(r.Header.Get("Connect-Timeout-Ms"), 10, 64); err == nil && ms > 0 {
		p.Deadline = p.StartedAt.Add(time.Duration(ms) * time.Millisecond)
	}
	stdout, code, done := runsAtOnce(sb, p.line())
	if !done || !isFileCommand(p.line()) {
		s.Add("starts")
	}
	if !done {
		sb.Processes = append(sb.Processes, p)
	}
	id := sb.ID
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/connect+json")
	writeFrame(w, 0, fmt.Appendf(nil, `{"event":{"start":{"pid":%d}}}`, p.PID))
	if done { // its output, then its end (protobuf's JSON: bytes in base64, a 0 exit code left out)
		for b := range slices.Chunk(stdout, 32<<10) { // as envd reads a pipe
			writeFrame(w, 0, fmt.Appendf(nil, `{"event":{"data":{"stdout":%q}}}`, base64.StdEncoding.EncodeToString(b)))
		}
		end := fmt.Sprintf(`"exitCode":%d,`, code)
		if code == 0 {
			end = ""
		}
		writeFrame(w, 0, fmt.Appendf(nil, `{"event":{"end":{%s"exited":true,"status":"exit status %d"}}}`, end, code))
		writeFrame(w, 0x02, []byte(`{}`))
		return
	}
	s.streamUntilEnd(w, r, id, p.PID)
}

// exitOf finds a command line that exits at once: `exit N`.
var exitOf = regexp.MustCompile(`^\s*exit (\d{1,3})\s*$`)

// runsAtOnce runs a command line that ends at once: `exit N`, or a file
// command of sandboxfs on sb's files. done is false for any other line.
func runsAtOnce(sb *Sandbox, line string) (stdout []byte, code int, done bool) {
	if m := exitOf.FindStringSubmatch(line); m != nil {
		code, _ = strconv.Atoi(m[1])
		return nil, code, true
	}
	return files(sb).Run(line)
}

// streamUntilEnd holds Start's stream open as envd does while the process
// runs: a keepalive event every Keepalive-Ping-Interval seconds, and once
// the process is gone (killed, past its deadline, its sandbox paused or
// killed) its end event and the end of the stream. It returns early when
// the client drops the stream or the fake closes.
func (s *Server) streamUntilEnd(w http.ResponseWriter, r *http.Request, id string, pid int) {
	rc := http.NewResponseController(w)
	flush := func() { _ = rc.Flush() }
	flush()
	keepalive := time.Duration(1<<63 - 1)
	if n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval")); err == nil && n > 0 {
		keepalive = time.Duration(n) * time.Second
	}
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.Closing():
			return
		case <-poll.C:
		}
		if !s.processRuns(id, pid) {
			writeFrame(w, 0, []byte(`{"event":{"end":{"exitCode":-1,"exited":false,"status":"signal: killed"}}}`))
			writeFrame(w, 0x02, []byte(`{}`))
			flush()
			return
		}
		if time.Since(lastPing) >= keepalive {
			lastPing = time.Now()
			writeFrame(w, 0, []byte(`{"event":{"keepalive":{}}}`))
			flush()
		}
	}
}

// processRuns reports whether the sandbox id runs the process pid.
func (s *Server) processRuns(id string, pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	sb, ok := s.sandboxes.Get(id)
	if !ok || sb.Transition == Killing {
		return false
	}
	return slices.ContainsFunc(sb.Processes, func(p Process) bool { return p.PID == pid })
}

// processSignal kills the processes a SendSignal selects.
func (s *Server) processSignal(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Process struct {
			PID *int    `json:"pid"`
			Tag *string `json:"tag"`
		} `json:"process"`
		Signal string `json:"signal"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || (in.Process.PID == nil) == (in.Process.Tag == nil) {
		writeConnectError(w, http.StatusBadRequest, "invalid_argument", "process.pid or process.tag is required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.runningSandbox(w, r)
	if sb == nil {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(sb.Processes), func(p Process) bool {
		if in.Process.PID != nil {
			return p.PID == *in.Process.PID
		}
		return p.Tag == *in.Process.Tag
	})
	if len(kept) == len(sb.Processes) {
		writeConnectError(w, http.StatusNotFound, "not_found", "process not found")
		return
	}
	sb.Processes = kept
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "{}")
}

func writeFrame(w io.Writer, flags byte, msg []byte) {
	var head [5]byte
	head[0] = flags
	binary.BigEndian.PutUint32(head[1:], uint32(len(msg)))
	_, _ = w.Write(head[:])
	_, _ = w.Write(msg)
}

func (s *Server) processList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.runningSandbox(w, r)
	if sb == nil {
		return
	}
	items := []map[string]any{} // {config, pid, tag (omitted when empty)}
	for _, p := range sb.Processes {
		items = append(items, map[string]any{"pid": p.PID, "config": map[string]any{"cmd": p.Cmd, "args": p.Args, "envs": p.Envs, "cwd": p.Cwd}})
		if p.Tag != "" {
			items[len(items)-1]["tag"] = p.Tag
		}
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"processes": items})
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	id := r.PathValue("id")
	port, err := strconv.Atoi(r.PathValue("port"))
	sb, ok := s.sandboxes.Get(id)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != nil || !ok || sb.Transition == Killing || (readsPaused(sb) && !sb.AutoResume) {
		fakekit.WriteJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": id, "message": "The sandbox was not found", "code": 502})
		return
	}
	if sb.State == lifecycle.SandboxPaused { // auto-resume: traffic wakes it
		s.resume(sb)
	}
	for _, p := range sb.Processes {
		if slices.Contains(p.listenPorts(), port) && s.Booted(p.StartedAt, s.now()) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "ok")
			return
		}
	}
	fakekit.WriteJSON(w, http.StatusBadGateway, map[string]any{"sandboxId": id, "message": PortClosedMessage, "port": port, "code": 502})
}

// writeConnectError answers a Connect error {"code","message"}.
func writeConnectError(w http.ResponseWriter, status int, code, msg string) {
	fakekit.WriteJSON(w, status, map[string]string{"code": code, "message": msg})
}

// isFileCommand reports whether line is a sandboxfs file command.
func isFileCommand(line string) bool {
	_, err := sandboxfs.Parse(line)
	return err == nil
}
