package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.CommandRunner = (*Provider)(nil)

// Command operations, for call counters (Calls) and faults (SetFault).
const (
	OpStartCommand  Op = "start_command"
	OpCommandStatus Op = "command_status"
)

// PortClosedBody is the body of the fake preview's answer while nothing
// listens on a port: 502 with this text, as E2B's gateway answers
// (docs/providers/e2b.md).
const PortClosedBody = "The sandbox is running but port is not open"

// MissingFolder is a Command.Cwd the fake's sandboxes never have: a start
// there fails as the local provider's does (its chdir fails), with an
// error of no provider kind (not gone, conflict or transient), and starts
// nothing.
const MissingFolder = "/missing"

// command is a background command the fake "runs". It runs nothing: it
// listens on its port BootDelay after it started, by the clock, unless its
// line contains "--no-listen"; a line "exit N" exits at once with code N.
type command struct {
	line      string
	port      int
	startedAt time.Time
	exited    bool
	exitCode  int
	noListen  bool
}

// KeepsProcesses reports whether commands survive a pause and resume
// (Config.DropProcesses false: E2B's full pause).
func (p *Provider) KeepsProcesses() bool { return !p.cfg.DropProcesses }

// StartCommand records cmd as running in the sandbox unless one of its name
// already runs (then it returns that one and starts nothing, so
// StartCalls counts the starts that happened). Errors: gone; transient
// when the sandbox is paused; a plain error for a Cwd of MissingFolder;
// injected ones.
func (p *Provider) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	var out lifecycle.CommandStatus
	err := p.call(ctx, OpStartCommand, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpStartCommand, sandboxID, now)
		if err != nil {
			return err
		}
		if sb.state != lifecycle.SandboxRunning {
			return lifecycle.Transientf(string(OpStartCommand), sandboxID, 0, "the sandbox is paused")
		}
		if c, ok := sb.commands[cmd.Name]; ok && !c.exited {
			out = c.status()
			return nil
		}
		if cmd.Cwd == MissingFolder || strings.HasPrefix(cmd.Cwd, MissingFolder+"/") {
			return fmt.Errorf("start command in sandbox %s: chdir %s: no such file or directory", sandboxID, cmd.Cwd)
		}
		c := &command{line: cmd.Line, port: cmd.Port, startedAt: now, noListen: strings.Contains(cmd.Line, "--no-listen")}
		if code, ok := strings.CutPrefix(strings.TrimSpace(cmd.Line), "exit "); ok {
			c.exited = true
			c.exitCode, _ = strconv.Atoi(strings.TrimSpace(code))
		}
		if sb.commands == nil {
			sb.commands = map[string]*command{}
		}
		sb.commands[cmd.Name] = c
		p.starts++
		out = c.status()
		return nil
	})
	return out, err
}

// CommandStatus returns the command named name. Errors: ErrNoCommand
// (wrapped) when the sandbox holds none; gone; injected ones.
func (p *Provider) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	var out lifecycle.CommandStatus
	err := p.call(ctx, OpCommandStatus, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpCommandStatus, sandboxID, now)
		if err != nil {
			return err
		}
		c, ok := sb.commands[name]
		if !ok {
			return fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, lifecycle.ErrNoCommand)
		}
		out = c.status()
		return nil
	})
	return out, err
}

func (c *command) status() lifecycle.CommandStatus {
	st := lifecycle.CommandStatus{Running: !c.exited, ExitCode: c.exitCode}
	if c.exited {
		st.Output = "$ " + c.line + "\nexited with code " + strconv.Itoa(c.exitCode)
	}
	return st
}

// StartCalls returns how many commands were really started (a start of a
// name that already ran is not counted).
func (p *Provider) StartCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// PortURL returns "https://<port>-<id>.fake.test". Errors: gone.
func (p *Provider) PortURL(_ context.Context, sandboxID string, port int) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.sandboxes[sandboxID]; !ok {
		return "", lifecycle.NewProviderError(lifecycle.ErrSandboxGone, "port_url", sandboxID, nil)
	}
	return fmt.Sprintf("https://%d-%s.%s", port, sandboxID, PreviewDomain), nil
}

// PortClosed reports the fake preview's own answer while nothing listens:
// 502 with PortClosedBody.
func (p *Provider) PortClosed(status int, _ http.Header, body []byte) bool {
	return status == http.StatusBadGateway && bytes.Contains(body, []byte(PortClosedBody))
}

// Preview returns an http.RoundTripper that serves the fake's preview URLs
// (https://<port>-<id>.fake.test/…) in memory, for lifecycle.Config.ReadyHTTP:
// 200 "ok" once a running command on that port has listened (BootDelay after
// it started, by the clock); 502 PortClosedBody while nothing listens; a
// connection error for a paused or unknown sandbox (as a paused E2B sandbox
// does not answer; the probe never wakes it). PreviewHits counts the
// requests.
func (p *Provider) Preview() http.RoundTripper { return previewTransport{p} }

type previewTransport struct{ p *Provider }

func (t previewTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	port, id, ok := parsePreviewHost(req.URL)
	if !ok {
		return nil, fmt.Errorf("fake preview: %s is not a fake preview URL", req.URL.Host)
	}
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.previewHits++
	now := p.clock.Now()
	sb, found := p.sandboxes[id]
	if !found || !p.expire(sb, now) || sb.state != lifecycle.SandboxRunning {
		return nil, fmt.Errorf("fake preview: sandbox %s does not answer", id)
	}
	status, body := http.StatusBadGateway, PortClosedBody
	for _, c := range sb.commands {
		if c.port == port && !c.exited && !c.noListen && !now.Before(c.startedAt.Add(p.cfg.BootDelay)) {
			status, body = http.StatusOK, "ok"
		}
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// PreviewHits returns how many requests the preview transport served.
func (p *Provider) PreviewHits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.previewHits
}

// parsePreviewHost reads "<port>-<id>.fake.test".
func parsePreviewHost(u *url.URL) (int, string, bool) {
	host, ok := strings.CutSuffix(u.Hostname(), "."+PreviewDomain)
	if !ok {
		return 0, "", false
	}
	ps, id, ok := strings.Cut(host, "-")
	port, err := strconv.Atoi(ps)
	return port, id, ok && err == nil
}
