package vercel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

var _ lifecycle.CommandRunner = (*Provider)(nil)

// The preview's own answers while no app answers on a port
// (docs/providers/vercel.md "The preview while the port is closed").
const (
	codeNotListening   = "SANDBOX_NOT_LISTENING" // 502: the session runs, nothing listens on the port
	codeSandboxStopped = "SANDBOX_STOPPED"       // 410: the session is over
)

// probeBodyLimit bounds how much of a preview answer is read.
const probeBodyLimit = 64 << 10

// maxOutput is how much of a command's output CommandStatus keeps (the
// readiness detail holds at most 2 KiB).
const maxOutput = 2048

// commandTagPrefix starts the sandbox tag that records a started command:
// key commandTagPrefix+<command name>, value "<sessionId>/<cmdId>". Vercel
// lists no commands, so the tag is how any process (another Lambda
// container, a redelivered readiness job) finds the command this one
// started. It is not Sandman metadata (no "sandman_" prefix), so Get and
// List leave it out of Sandbox.Metadata.
const commandTagPrefix = "sandman-cmd-"

// startedCommand is a command a Provider started: Vercel addresses a
// command by session and command id.
type startedCommand struct {
	sessionID, commandID string
}

// tagValue is the tag value recording sc.
func (sc startedCommand) tagValue() string { return sc.sessionID + "/" + sc.commandID }

// startedFromTag reads a tag value written by tagValue.
func startedFromTag(v string) (startedCommand, bool) {
	se, id, ok := strings.Cut(v, "/")
	return startedCommand{sessionID: se, commandID: id}, ok && se != "" && id != ""
}

// commandIDs remembers the commands this Provider started, by sandbox name
// and command name (a cache of the sandbox's command tags).
type commandIDs struct {
	mu  sync.Mutex
	ids map[string]startedCommand
}

func (c *commandIDs) get(sandboxID, name string) (startedCommand, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc, ok := c.ids[sandboxID+"/"+name]
	return sc, ok
}

func (c *commandIDs) put(sandboxID, name string, sc startedCommand) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil {
		c.ids = map[string]startedCommand{}
	}
	c.ids[sandboxID+"/"+name] = sc
}

// commandBody is the body of POST /v2/sandboxes/sessions/{id}/cmd. No
// timeout is sent: Vercel enforces it even on a detached command and kills
// the server with SIGKILL.
type commandBody struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	// Wait and Logs make the answer an NDJSON stream that ends when the
	// command does (files.go); the app is started without them.
	Wait bool `json:"wait,omitempty"`
	Logs bool `json:"logs,omitempty"`
}

// commandAnswer answers a run (detached) and a get of a command.
type commandAnswer struct {
	Command struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionId"`
		ExitCode  *int   `json:"exitCode"`
	} `json:"command"`
}

// KeepsProcesses is false: a stop snapshots only the filesystem, and a
// resume boots a new session (a new VM) without the old one's processes
// (docs/providers/vercel.md "Running a command in the sandbox, and
// readiness").
func (p *Provider) KeepsProcesses() bool { return false }

// StartCommand starts cmd detached in the sandbox's current session with
// POST /v2/sandboxes/sessions/{sessionId}/cmd as sh -c <line>, PORT set to
// cmd.Port, no timeout. It starts nothing when a command of that name runs.
//
// Vercel cannot list a session's commands, so the command's session and id
// are recorded on the sandbox as a tag (commandTagPrefix+name, PATCH
// /v2/sandboxes/{name} with the sandbox's other tags kept) right after the
// start, and "look before starting" is two looks: the recorded command in
// the current session (GET …/cmd/{cmdId}), found by any process, and then
// one GET of the port's preview (an app that answers is taken as the
// command running). A process that dies between the start and the tag
// leaves a command no one can find, and its redelivered job starts the
// command again; the line runs through the start guard (guardedArgs),
// which lets one start per session run it and makes any other follow that
// one, so one server runs. A tag that cannot be written (the sandbox holds Vercel's 5
// already) is logged; the command still started.
// Errors: gone (no running session), transient.
func (p *Provider) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	const op = "start_command"
	if !validName(sandboxID) {
		return lifecycle.CommandStatus{}, fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	if st, err := p.commandStatus(ctx, op, a, cmd.Name); err == nil && st.Running {
		return st, nil
	} else if err != nil && !errors.Is(err, lifecycle.ErrNoCommand) {
		return lifecycle.CommandStatus{}, err
	}
	if cmd.Port > 0 && p.portAnswers(ctx, previewURL(a.Routes, cmd.Port)) {
		return lifecycle.CommandStatus{Running: true}, nil
	}
	env := map[string]string{}
	for k, v := range cmd.Env {
		env[k] = v
	}
	if cmd.Port > 0 {
		env["PORT"] = strconv.Itoa(cmd.Port)
	}
	sessionID := orString(a.Sandbox.CurrentSessionID, a.Session.ID)
	// Not retried: a lost answer must not start a second server; the
	// readiness job's next attempt looks again first.
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path:    []string{"v2", "sandboxes", "sessions", sessionID, "cmd"},
		Body:    commandBody{Command: "sh", Args: guardedArgs(cmd, sessionID), Cwd: cmd.Cwd, Env: env},
		Timeout: p.cfg.RequestTimeout})
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	if !r.OK() {
		return lifecycle.CommandStatus{}, p.statusError(op, sandboxID, r)
	}
	var ans commandAnswer
	if err := json.Unmarshal(r.Body, &ans); err != nil || ans.Command.ID == "" {
		return lifecycle.CommandStatus{}, decodeError(op, sandboxID, fmt.Errorf("command answer: %v", err))
	}
	sc := startedCommand{sessionID: sessionID, commandID: ans.Command.ID}
	p.cmds.put(sandboxID, cmd.Name, sc)
	p.cfg.Logger.InfoContext(ctx, "vercel command started", "sandbox_id", sandboxID, "session_id", sessionID,
		"name", cmd.Name, "command_id", ans.Command.ID)
	if err := p.tagCommand(ctx, a.Sandbox, cmd.Name, sc); err != nil {
		p.cfg.Logger.WarnContext(ctx, "record the vercel command on the sandbox; another process will not find it",
			"sandbox_id", sandboxID, "name", cmd.Name, "command_id", ans.Command.ID, "err", err)
	}
	return commandStatusOf(ans), nil
}

// guardedArgs are the arguments of sh that run cmd through the start
// guard (internal/provider/internal/startguard), keyed by the command's
// name and the Vercel session: Vercel lists no commands, and a process
// that dies between the start and the tag write leaves a command no one
// finds, whose redelivered job starts it again (docs/providers/vercel.md
// "Running a command in the sandbox, and readiness"). The guard lets one
// start per boot of the session's VM run the line; any other follows it
// and ends with its exit code.
func guardedArgs(cmd lifecycle.Command, sessionID string) []string {
	return append([]string{"-c"}, startguard.Args(cmd.Name, cmd.Name+"-"+sessionID, "sh", cmd.Line)...)
}

// tagCommand records sc as the sandbox's tag for the command name, keeping
// its other tags (PATCH replaces the whole map). Retried.
func (p *Provider) tagCommand(ctx context.Context, sb sandboxJSON, name string, sc startedCommand) error {
	tags := maps.Clone(sb.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[commandTagPrefix+name] = sc.tagValue()
	return p.retry(ctx, "tag_command", sb.Name, func(ctx context.Context) error {
		return p.patchTags(ctx, "tag_command", sb.Name, tags)
	})
}

// patchTags makes tags the sandbox's whole set of tags, in one attempt of
// PATCH /v2/sandboxes/{name}. Errors: more than Vercel's 5 tags (plain),
// gone, transient.
func (p *Provider) patchTags(ctx context.Context, op, name string, tags map[string]string) error {
	if len(tags) > maxTags {
		return fmt.Errorf("%s: sandbox %s would hold %d tags; Vercel allows %d", op, name, len(tags), maxTags)
	}
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: name, Method: http.MethodPatch,
		Path: []string{"v2", "sandboxes", name}, Query: url.Values{"projectId": {p.cfg.ProjectID}},
		Body: map[string]any{"tags": tags}, Timeout: p.cfg.RequestTimeout})
	if err != nil {
		return err
	}
	if !r.OK() {
		return p.statusError(op, name, r)
	}
	return nil
}

// CommandStatus reads the command named name: the one started in the
// sandbox's current session, as recorded in its tag (GET …/cmd/{cmdId});
// running while its exitCode is null. Once it exited, Output is the last
// 2 KiB of its logs (GET …/cmd/{cmdId}/logs, stdout and stderr in order;
// "" when they cannot be read). A command of an earlier session (lost with
// it), none recorded, and a sandbox without a running session are
// ErrNoCommand. Retried. Errors: ErrNoCommand (wrapped), gone, transient.
func (p *Provider) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	const op = "command_status"
	if !validName(sandboxID) {
		return lifecycle.CommandStatus{}, fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if errors.Is(err, lifecycle.ErrSandboxConflict) {
		return lifecycle.CommandStatus{}, noCommand(sandboxID, name)
	}
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	return p.commandStatus(ctx, op, a, name)
}

// current reads the sandbox (never booting it); a sandbox without a
// running session is a conflict (stopping, snapshotting or stopped).
func (p *Provider) current(ctx context.Context, op, sandboxID string) (sandboxAnswer, error) {
	var a sandboxAnswer
	err := p.retry(ctx, op, sandboxID, func(ctx context.Context) error {
		var err error
		a, err = p.get(ctx, op, sandboxID, false)
		return err
	})
	if err != nil {
		return sandboxAnswer{}, err
	}
	if _, ok := state(a.Sandbox); !ok {
		return sandboxAnswer{}, goneError(op, a)
	}
	if a.Sandbox.Status != statusRunning && a.Sandbox.Status != statusPending {
		return sandboxAnswer{}, lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID,
			fmt.Errorf("its session is %s, not running", a.Sandbox.Status))
	}
	return a, nil
}

// commandStatus reads the recorded command of name in a's current
// session: the sandbox's tag, or this process's own record when the tag
// could not be written.
func (p *Provider) commandStatus(ctx context.Context, op string, a sandboxAnswer, name string) (lifecycle.CommandStatus, error) {
	sandboxID := a.Sandbox.Name
	current := orString(a.Sandbox.CurrentSessionID, a.Session.ID)
	sc, ok := startedFromTag(a.Sandbox.Tags[commandTagPrefix+name])
	if !ok || sc.sessionID != current {
		sc, ok = p.cmds.get(sandboxID, name)
	}
	if !ok || sc.sessionID != current {
		return lifecycle.CommandStatus{}, noCommand(sandboxID, name)
	}
	var st lifecycle.CommandStatus
	err := p.retry(ctx, op, sandboxID, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet,
			Path: []string{"v2", "sandboxes", "sessions", sc.sessionID, "cmd", sc.commandID}, Timeout: p.cfg.RequestTimeout})
		switch {
		case err != nil:
			return err
		case r.Status == http.StatusNotFound || r.Status == http.StatusGone:
			return noCommand(sandboxID, name)
		case !r.OK():
			return p.statusError(op, sandboxID, r)
		}
		var ans commandAnswer
		if err := json.Unmarshal(r.Body, &ans); err != nil {
			return decodeError(op, sandboxID, err)
		}
		st = commandStatusOf(ans)
		return nil
	})
	if err == nil && !st.Running {
		st.Output = p.commandOutput(ctx, sandboxID, sc)
	}
	return st, err
}

// commandOutput reads an exited command's logs (NDJSON lines
// {"stream":"stdout"|"stderr","data"}) and returns their last maxOutput
// bytes; "" when they cannot be read (the exit code is the answer, the
// output a courtesy). Not retried.
func (p *Provider) commandOutput(ctx context.Context, sandboxID string, sc startedCommand) string {
	const op = "command_logs"
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet,
		Path: []string{"v2", "sandboxes", "sessions", sc.sessionID, "cmd", sc.commandID, "logs"}, Timeout: p.cfg.RequestTimeout})
	if err != nil || !r.OK() {
		return ""
	}
	st, _ := readStream(r.Body)
	o := st.output
	if len(o) > maxOutput {
		o = o[len(o)-maxOutput:]
	}
	return o
}

func commandStatusOf(ans commandAnswer) lifecycle.CommandStatus {
	if ans.Command.ExitCode == nil {
		return lifecycle.CommandStatus{Running: true}
	}
	return lifecycle.CommandStatus{ExitCode: *ans.Command.ExitCode}
}

func noCommand(sandboxID, name string) error {
	return fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, lifecycle.ErrNoCommand)
}

// PortURL returns the URL of port's route in the sandbox's current session
// (routes are per session: read fresh, never computed). The port must be
// one of the template's ports. Retried. Errors: gone, conflict (no running
// session), transient; a plain error when the session has no route for
// port.
func (p *Provider) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	const op = "port_url"
	if !validName(sandboxID) {
		return "", fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if err != nil {
		return "", err
	}
	u := previewURL(a.Routes, port)
	if u == "" {
		return "", fmt.Errorf("%s of sandbox %s: no route for port %d (add it to the template's ports)", op, sandboxID, port)
	}
	return u, nil
}

// PortClosed reports the preview's own answers while no app answers: 502
// (SANDBOX_NOT_LISTENING: the session runs, nothing listens; a 502 of any
// body is taken so, as an app's own 502 is not ready either) and 410 with
// SANDBOX_STOPPED (the session is over).
func (p *Provider) PortClosed(status int, _ http.Header, body []byte) bool {
	switch status {
	case http.StatusBadGateway:
		return true
	case http.StatusGone:
		return parseAPIError(reply{Status: status, Body: body}).Code == codeSandboxStopped
	}
	return false
}

// portAnswers makes one GET of u and reports whether the app answered
// (below 500, not the preview's own answer).
func (p *Provider) portAnswers(ctx context.Context, u string) bool {
	if u == "" {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, lifecycle.DefaultReadyProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, probeBodyLimit))
	return resp.StatusCode < 500 && !p.PortClosed(resp.StatusCode, resp.Header, b)
}
