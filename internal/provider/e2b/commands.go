package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

var _ lifecycle.CommandRunner = (*Provider)(nil)

// The command API is envd's process service, Connect RPC with the JSON codec
// (docs/providers/e2b.md "Running a command in the sandbox, and readiness").
const (
	processStart = "/process.Process/Start"
	processList  = "/process.Process/List"
)

// maxStartFrame bounds one frame of Start's stream that is read (the start
// event is a few dozen bytes).
const maxStartFrame = 1 << 20

// KeepsProcesses is true: Pause takes E2B's default full memory snapshot, and
// processes survive it (docs/providers/e2b.md "Pause and resume").
func (p *Provider) KeepsProcesses() bool { return true }

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
}

type startRequest struct {
	Process processConfig `json:"process"`
	Stdin   bool          `json:"stdin"`
	Tag     string        `json:"tag"`
}

// processEvent is one message of Start's stream (envd's ProcessEvent in
// protobuf's JSON: bytes are base64, zero values are left out).
type processEvent struct {
	Event struct {
		Start *struct {
			PID int `json:"pid"`
		} `json:"start"`
		Data *struct {
			Stdout []byte `json:"stdout"`
			Stderr []byte `json:"stderr"`
		} `json:"data"`
		End *struct {
			ExitCode int    `json:"exitCode"` // left out when 0
			Exited   bool   `json:"exited"`   // false: killed by a signal
			Status   string `json:"status"`
			Error    string `json:"error"`
		} `json:"end"`
	} `json:"event"`
}

type listAnswer struct {
	Processes []struct {
		PID int    `json:"pid"`
		Tag string `json:"tag"`
	} `json:"processes"`
}

// StartCommand starts cmd in the background through envd, tagged with
// cmd.Name, unless a process of that tag runs. As E2B's SDK does, the line
// runs under /bin/bash -l; PORT is set to cmd.Port (dev servers honour it).
// No Connect-Timeout-Ms is sent, so envd never kills the server, and the
// stream is dropped once the start event names its pid. Because E2B may list
// no processes after a resume although the server still runs
// (e2b-dev/E2B#1031), a port that already answers is taken as the server
// running and nothing is started.
//
// Listing and starting are two calls, so two jobs at once, or a job after
// a resume whose list came back empty while the kept server still boots,
// can both start: the line runs through the start guard
// (internal/provider/internal/startguard), bash -l -c <guard> <name> <name>
// /bin/bash <line>, which runs it once per boot of the VM (a resume from
// E2B's memory snapshot is the same boot) and makes any other start follow
// that one (docs/READINESS.md "One start per boot"). Errors: gone,
// transient.
func (p *Provider) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	const op = "start_command"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.CommandStatus{}, err
	}
	if st, err := p.CommandStatus(ctx, sandboxID, cmd.Name); err == nil && st.Running {
		return st, nil
	} else if err != nil && !errors.Is(err, lifecycle.ErrNoCommand) {
		return lifecycle.CommandStatus{}, err
	}
	if cmd.Port > 0 && p.portAnswers(ctx, sandboxID, cmd.Port) {
		return lifecycle.CommandStatus{Running: true}, nil
	}
	envs := map[string]string{}
	for k, v := range cmd.Env {
		envs[k] = v
	}
	if cmd.Port > 0 {
		envs["PORT"] = strconv.Itoa(cmd.Port)
	}
	args := append([]string{"-l", "-c"}, startguard.Args(cmd.Name, cmd.Name, "/bin/bash", cmd.Line)...)
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	resp, err := p.openStart(rctx, op, sandboxID, startRequest{Process: processConfig{Cmd: "/bin/bash", Args: args,
		Envs: envs, Cwd: cmd.Cwd}, Tag: cmd.Name}, 0)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	defer resp.Body.Close() // drops the stream: the process keeps running
	br := bufio.NewReader(resp.Body)
	for {
		msg, end, err := readFrame(br)
		switch {
		case err != nil:
			return lifecycle.CommandStatus{}, lifecycle.Transientf(op, sandboxID, 0, "the start stream ended before a pid: %w", err)
		case end: // an error, or no start event
			return lifecycle.CommandStatus{}, lifecycle.Transientf(op, sandboxID, 0, "envd ended the start stream: %s", strings.TrimSpace(string(msg)))
		}
		var ev processEvent
		if json.Unmarshal(msg, &ev) == nil && ev.Event.Start != nil {
			p.cfg.Logger.InfoContext(ctx, "e2b command started", "sandbox_id", sandboxID, "tag", cmd.Name, "pid", ev.Event.Start.PID)
			return lifecycle.CommandStatus{Running: true}, nil
		}
	}
}

// openStart sends envd one Start request for sr (Connect streaming: one
// enveloped JSON message) and returns the answer's stream, which the
// caller closes; dropping it leaves the process running. killAfter, when
// set, is sent as Connect-Timeout-Ms: envd kills the process that long
// after its start. ctx bounds the whole call, stream included. Errors:
// envdError's for an answer that is not 200, transient for none.
func (p *Provider) openStart(ctx context.Context, op, sandboxID string, sr startRequest, killAfter time.Duration) (*http.Response, error) {
	body, err := json.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("encode start request: %w", err)
	}
	frame := make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(body)))
	copy(frame[5:], body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.envdURL(sandboxID, "")+processStart, bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Keepalive-Ping-Interval", "50")
	if killAfter > 0 {
		req.Header.Set("Connect-Timeout-Ms", strconv.FormatInt(killAfter.Milliseconds(), 10))
	}
	p.sandboxHeaders(req, sandboxID)
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		return nil, p.envdError(ctx, op, sandboxID, reply{Status: resp.StatusCode, Header: resp.Header, Body: b})
	}
	return resp, nil
}

// envdError classifies envd's failed answer r. E2B's proxy answers 502 for
// a sandbox that does not run, gone or paused, so a 502 asks the control
// API and is gone when that says 404. A 401 means the envd token this
// Provider holds is stale: it is forgotten (envdToken reads it again) and
// the failure is transient. Otherwise statusError's.
func (p *Provider) envdError(ctx context.Context, op, sandboxID string, r reply) error {
	switch r.Status {
	case http.StatusBadGateway:
		if _, _, err := p.get(ctx, op, sandboxID); errors.Is(err, lifecycle.ErrSandboxGone) {
			return err
		}
	case http.StatusUnauthorized:
		p.tokens.forget(sandboxID)
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, parseAPIError(r))
	}
	return p.statusError(op, sandboxID, r)
}

// readFrame reads one enveloped message of a Connect stream; end reports
// the end-of-stream message (flag 0x02), which carries an error or
// trailers. Errors: the stream's, or a message over maxStartFrame bytes.
func readFrame(br *bufio.Reader) (msg []byte, end bool, err error) {
	var head [5]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, false, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxStartFrame {
		return nil, false, fmt.Errorf("a stream frame of %d bytes", n)
	}
	msg = make([]byte, n)
	if _, err := io.ReadFull(br, msg); err != nil {
		return nil, false, err
	}
	return msg, head[0]&0x02 != 0, nil
}

// CommandStatus lists envd's processes (POST /process.Process/List) and
// reports the one tagged name as running. envd lists only running
// processes, and keeps neither exit codes nor output of ended ones: an ended
// command is ErrNoCommand. Retried. Errors: ErrNoCommand (wrapped), gone,
// transient.
func (p *Provider) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	const op = "command_status"
	var st lifecycle.CommandStatus
	err := p.retry(ctx, op, sandboxID, func(ctx context.Context) error {
		hdr := http.Header{"Connect-Protocol-Version": {"1"}}
		if tok := p.tokens.get(sandboxID); tok != "" {
			hdr.Set("X-Access-Token", tok)
		}
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			URL: p.envdURL(sandboxID, "") + processList, Body: struct{}{}, Header: hdr, Timeout: p.cfg.RequestTimeout})
		if err != nil {
			return err
		}
		if !r.OK() {
			return p.statusError(op, sandboxID, r)
		}
		var ans listAnswer
		if err := json.Unmarshal(r.Body, &ans); err != nil {
			return decodeError(op, sandboxID, err)
		}
		for _, pr := range ans.Processes {
			if pr.Tag == name {
				st = lifecycle.CommandStatus{Running: true}
				return nil
			}
		}
		return fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, lifecycle.ErrNoCommand)
	})
	return st, err
}

// PortURL returns the preview URL of port: https://<port>-<sandboxID>.<domain>
// (Config.PortURL in tests). It makes no request.
func (p *Provider) PortURL(_ context.Context, sandboxID string, port int) (string, error) {
	if err := checkID("port_url", sandboxID); err != nil {
		return "", err
	}
	domain := p.domainOf(sandboxID)
	if p.cfg.PortURL != nil {
		return p.cfg.PortURL(sandboxID, domain, port), nil
	}
	return fmt.Sprintf("https://%d-%s.%s", port, sandboxID, domain), nil
}

// PortClosed reports E2B's proxy answer while nothing listens on the port:
// 502 with a JSON body carrying "port" and "port is not open" (a browser
// gets an HTML page saying the same).
func (p *Provider) PortClosed(status int, _ http.Header, body []byte) bool {
	if status != http.StatusBadGateway {
		return false
	}
	var b struct {
		Message string `json:"message"`
		Port    *int   `json:"port"`
	}
	if json.Unmarshal(body, &b) == nil {
		return b.Port != nil && strings.Contains(b.Message, "port is not open")
	}
	return bytes.Contains(body, []byte("port is not open"))
}

// portAnswers makes one GET of the port's preview and reports whether
// something other than E2B's "port not open" answer came back.
func (p *Provider) portAnswers(ctx context.Context, sandboxID string, port int) bool {
	u, err := p.PortURL(ctx, sandboxID, port)
	if err != nil {
		return false
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode < 500 && !p.PortClosed(resp.StatusCode, resp.Header, b)
}

// sandboxHeaders adds envd's access token when this Provider knows it.
func (p *Provider) sandboxHeaders(req *http.Request, sandboxID string) {
	if tok := p.tokens.get(sandboxID); tok != "" {
		req.Header.Set("X-Access-Token", tok)
	}
	req.Header.Set("User-Agent", "sandman-e2b")
}
