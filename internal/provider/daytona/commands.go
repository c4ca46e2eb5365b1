package daytona

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

var _ lifecycle.CommandRunner = (*Provider)(nil)

// maxOutput is how much of a command's output CommandStatus keeps (the
// end).
const maxOutput = 2048

// logsSDKVersion is sent as X-Daytona-SDK-Version so the toolbox answers a
// command's logs as JSON {output, stdout, stderr} (docs/providers/daytona.md
// "Running a command in the sandbox, and readiness").
const logsSDKVersion = "0.167.0"

// sessionBody answers GET <toolbox>/process/session/{sid}.
type sessionBody struct {
	SessionID string        `json:"sessionId"`
	Commands  []commandBody `json:"commands"`
}

// commandBody is one command of a toolbox session; ExitCode is absent while
// it runs.
type commandBody struct {
	ID       string `json:"id"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exitCode"`
}

// errSessionEmpty is ErrNoCommand for a session that exists with no
// command in it (a start that died between making the session and its
// exec).
var errSessionEmpty = fmt.Errorf("an empty session: %w", lifecycle.ErrNoCommand)

// logsBody answers GET …/command/{cmdId}/logs.
type logsBody struct {
	Output string `json:"output"`
}

// KeepsProcesses is false: Sandman's pause is Daytona's stop, which clears
// memory, so the app's processes are gone after a start
// (docs/providers/daytona.md).
func (p *Provider) KeepsProcesses() bool { return false }

// toolbox returns the sandbox's toolbox base, <toolboxProxyUrl>/<sandboxId>,
// reading toolboxProxyUrl from the sandbox (GET /sandbox/{id}/toolbox-proxy-url
// when the sandbox object lacks it). Errors: gone, transient.
func (p *Provider) toolbox(ctx context.Context, op, sandboxID string) (*url.URL, error) {
	d, err := p.getRetried(ctx, op, sandboxID)
	if err != nil {
		return nil, err
	}
	if classify(d) == classGone {
		return nil, goneError(op, d)
	}
	base := d.ToolboxProxyURL
	if base == "" {
		var out struct {
			URL string `json:"url"`
		}
		err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
			return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet,
				Path: []string{"sandbox", sandboxID, "toolbox-proxy-url"}}, &out)
		})
		if err != nil {
			return nil, err
		}
		base = out.URL
	}
	u, perr := url.Parse(base)
	if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s: daytona answered a bad toolbox url %q", provhttp.Describe(op, sandboxID), base)
	}
	return u.JoinPath(sandboxID), nil
}

// StartCommand starts cmd in the background in the toolbox session named
// cmd.Name (POST <toolbox>/process/session, then POST
// …/session/{name}/exec with runAsync), unless a command of that session
// still runs: then it starts nothing. A session whose command exited is
// deleted and made again. The exec body has no cwd or env fields, so the
// line becomes `cd <cwd> && env K=V… PORT=<port> sh -c <guard> …
// <line>` (shellLine), each part shell-quoted.
//
// Looking and starting are separate calls: two jobs at once can both find
// the session empty (a start died between making it and its exec) and
// both exec into it, or both find it gone and race to make it. So the line
// runs through the start guard, which runs it once per boot of the
// sandbox's container and makes any later start follow the running one
// (ending with its exit code); a stop and start is a new boot, so the app
// starts again even when the container's /tmp kept the old lock
// (docs/READINESS.md "One start per boot"). Errors: gone, transient.
func (p *Provider) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	const op = "start_command"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.CommandStatus{}, err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	st, err := p.sessionStatus(ctx, op, sandboxID, tb, cmd.Name)
	exists := err == nil || errors.Is(err, errSessionEmpty)
	switch {
	case err == nil && st.Running:
		return st, nil
	case errors.Is(err, errSessionEmpty): // a start died between its two calls: exec in it
	case err == nil: // the session is there, its command exited
		exists = false
		err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
			r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodDelete, URL: tb.String(),
				Path: []string{"process", "session", cmd.Name}})
			if err != nil {
				return err
			}
			if !r.OK() && r.Status != http.StatusNotFound {
				return p.statusError(op, sandboxID, r)
			}
			return nil
		})
		if err != nil {
			return lifecycle.CommandStatus{}, err
		}
	case !errors.Is(err, lifecycle.ErrNoCommand):
		return lifecycle.CommandStatus{}, err
	}
	// Neither call is retried: a second create or exec after an answer
	// lost on the way could start a second server.
	// A session made meanwhile by another start answers 409: a conflict,
	// and the retried job then finds that start's command.
	if !exists {
		if err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost, URL: tb.String(),
			Path: []string{"process", "session"}, Body: map[string]string{"sessionId": cmd.Name}}, nil); err != nil {
			return lifecycle.CommandStatus{}, err
		}
	}
	var out struct {
		CmdID string `json:"cmdId"`
	}
	if err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost, URL: tb.String(),
		Path: []string{"process", "session", cmd.Name, "exec"},
		Body: map[string]any{"command": shellLine(cmd), "runAsync": true}}, &out); err != nil {
		return lifecycle.CommandStatus{}, err
	}
	p.cfg.Logger.InfoContext(ctx, "daytona command started", "sandbox_id", sandboxID, "session", cmd.Name, "cmd_id", out.CmdID)
	return lifecycle.CommandStatus{Running: true}, nil
}

// shellLine is cmd as one line for a toolbox session, which takes no cwd
// or env: `cd <cwd> && env K=V… PORT=<port> sh -c <guard> <name> <name>
// sh <line>`, the line run through the start guard
// (internal/provider/internal/startguard), every part shell-quoted.
func shellLine(cmd lifecycle.Command) string {
	var b strings.Builder
	if cmd.Cwd != "" {
		b.WriteString("cd " + shellQuote(cmd.Cwd) + " && ")
	}
	b.WriteString("env")
	names := make([]string, 0, len(cmd.Env))
	for k := range cmd.Env {
		if k != "PORT" || cmd.Port <= 0 {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(" " + shellQuote(k+"="+cmd.Env[k]))
	}
	if cmd.Port > 0 {
		b.WriteString(" PORT=" + strconv.Itoa(cmd.Port))
	}
	b.WriteString(" sh -c")
	for _, a := range startguard.Args(cmd.Name, cmd.Name, "sh", cmd.Line) {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String()
}

// shellQuote quotes s for sh in single quotes.
func shellQuote(s string) string { return startguard.Quote(s) }

// CommandStatus reads the toolbox session named name (GET
// <toolbox>/process/session/{name}): running while its last command has no
// exitCode; otherwise that exit code and the end of the command's output
// (…/command/{cmdId}/logs). Retried. Errors: ErrNoCommand (wrapped) when
// there is no such session (never started, or lost by a stop), gone,
// transient.
func (p *Provider) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	const op = "command_status"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.CommandStatus{}, err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	return p.sessionStatus(ctx, op, sandboxID, tb, name)
}

func (p *Provider) sessionStatus(ctx context.Context, op, sandboxID string, tb *url.URL, name string) (lifecycle.CommandStatus, error) {
	var sess sessionBody
	err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet, URL: tb.String(),
			Path: []string{"process", "session", name}})
		if err != nil {
			return err
		}
		if r.Status == http.StatusNotFound {
			return fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, lifecycle.ErrNoCommand)
		}
		if !r.OK() {
			return p.statusError(op, sandboxID, r)
		}
		if err := json.Unmarshal(r.Body, &sess); err != nil {
			return fmt.Errorf("%s: decode daytona answer: %w", provhttp.Describe(op, sandboxID), err)
		}
		return nil
	})
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	if len(sess.Commands) == 0 {
		return lifecycle.CommandStatus{}, fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, errSessionEmpty)
	}
	last := sess.Commands[len(sess.Commands)-1]
	if last.ExitCode == nil {
		return lifecycle.CommandStatus{Running: true}, nil
	}
	st := lifecycle.CommandStatus{ExitCode: *last.ExitCode}
	var logs logsBody
	err = p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet, URL: tb.String(),
			Path:   []string{"process", "session", name, "command", last.ID, "logs"},
			Header: http.Header{"X-Daytona-Sdk-Version": {logsSDKVersion}}}, &logs)
	})
	if err == nil { // the output is a courtesy: the exit code is the answer
		out := logs.Output
		if len(out) > maxOutput {
			out = out[len(out)-maxOutput:]
		}
		st.Output = out
	}
	return st, nil
}

// PortURL fetches the preview URL of port (GET
// /sandbox/{id}/ports/{port}/preview-url), with the preview token as
// PreviewTokenParam unless Config.Public. The token changes on every start,
// so it is fetched on every call. Retried. Errors: gone, transient.
func (p *Provider) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	const op = "port_url"
	if err := checkID(op, sandboxID); err != nil {
		return "", err
	}
	return p.previewURL(ctx, op, sandboxID, port)
}

// PortClosed reports Daytona's own answers of a preview whose app does not
// answer (docs/providers/daytona.md "The preview while the port is
// closed"): the daemon's empty 502 when nothing listens, the runner's 400
// "Is the Sandbox started?" when the sandbox is not running, and the 307
// to the auth page when the preview token is missing.
func (p *Provider) PortClosed(status int, _ http.Header, body []byte) bool {
	switch status {
	case http.StatusBadGateway:
		return len(bytes.TrimSpace(body)) == 0
	case http.StatusBadRequest:
		return bytes.Contains(body, []byte("Is the Sandbox started"))
	case http.StatusTemporaryRedirect:
		return true
	}
	return false
}
