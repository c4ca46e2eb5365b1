package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.CommandRunner = (*Provider)(nil)

// Command operation names (the Op of the errors returned).
const (
	opStartCommand  = "start_command"
	opCommandStatus = "command_status"
	opPortURL       = "port_url"
)

// commandOutputLines is how many of a command's last output lines
// CommandStatus returns.
const commandOutputLines = 20

// commandRecord is a background command of a sandbox, in its record.
type commandRecord struct {
	PID        int    `json:"pid"` // also its process group (setsid)
	StartTicks uint64 `json:"start_ticks"`
	Line       string `json:"line"`
}

var commandName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// KeepsProcesses reports whether a pause keeps the sandbox's commands
// (stopped with the sandbox and continued by a resume): true unless
// Config.DropProcesses (SANDMAN_LOCAL_KEEP_PROCESSES=false), which makes a
// pause kill them and a resume start from the folder only, like Vercel
// Sandbox.
func (p *Provider) KeepsProcesses() bool { return !p.cfg.DropProcesses }

// StartCommand starts cmd.Line with sh -c as a real process in its own
// session, in the sandbox's files folder (joined with cmd.Cwd), with the
// sandbox environment, cmd.Env and PORT set to the loopback port behind
// the host port that cmd.Port maps to (PortURL: the preview front
// forwards there), its output in cmd-<name>.log of the sandbox
// directory. A command of that name that still runs is returned as it is,
// and nothing is started. Errors: gone; transient while the sandbox is
// paused or when ctx is done; a plain error when the process cannot start.
func (p *Provider) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	if !commandName.MatchString(cmd.Name) {
		return lifecycle.CommandStatus{}, fmt.Errorf("start command in sandbox %s: %w", sandboxID,
			lifecycle.Errorf(lifecycle.CodeInvalid, "command name %q is not [A-Za-z0-9_.-]{1,64}", cmd.Name))
	}
	unlock, err := p.lock(ctx, opStartCommand, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	defer unlock()
	rec, state, err := p.load(opStartCommand, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	if state != lifecycle.SandboxRunning {
		return lifecycle.CommandStatus{}, p.transient(opStartCommand, sandboxID, errors.New("the sandbox is paused"))
	}
	if c, ok := rec.Commands[cmd.Name]; ok && commandAlive(c) {
		return lifecycle.CommandStatus{Running: true}, nil
	}
	hostPort, rec, err := p.mapPort(rec, cmd.Port)
	if err != nil {
		return lifecycle.CommandStatus{}, fmt.Errorf("start command in sandbox %s: %w", sandboxID, err)
	}
	dir := filepath.Join(p.sandboxDir(sandboxID), filesName, filepath.Clean("/"+cmd.Cwd))
	logf, err := os.OpenFile(p.commandLog(sandboxID, cmd.Name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return lifecycle.CommandStatus{}, fmt.Errorf("start command in sandbox %s: %w", sandboxID, err)
	}
	defer logf.Close()
	c := exec.Command("/bin/sh", "-c", cmd.Line)
	c.Dir = dir
	c.Env = childEnv(p.cfg.Env)
	for k, v := range cmd.Env {
		c.Env = append(c.Env, k+"="+v)
	}
	if hostPort > 0 {
		c.Env = append(c.Env, "PORT="+strconv.Itoa(upstreamOf(rec, hostPort)))
	}
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = childSysProcAttr()
	if err := c.Start(); err != nil {
		return lifecycle.CommandStatus{}, fmt.Errorf("start command in sandbox %s: %w", sandboxID, err)
	}
	pid := c.Process.Pid
	reaped := make(chan struct{})
	p.mu.Lock()
	p.exited[pid] = reaped
	p.mu.Unlock()
	go func() {
		// Reap it as soon as it exits and keep its exit code for
		// CommandStatus. Kill waits on reaped before it removes the
		// sandbox's directory, which this write would otherwise race.
		err := c.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		_ = os.WriteFile(p.commandExitFile(sandboxID, cmd.Name, pid), []byte(strconv.Itoa(code)), 0o644)
		p.mu.Lock()
		delete(p.exited, pid)
		p.mu.Unlock()
		close(reaped)
	}()
	st, err := readProcStat(pid)
	if err != nil {
		st = procStat{} // exited at once: CommandStatus reports it
	}
	if rec.Commands == nil {
		rec.Commands = map[string]commandRecord{}
	}
	rec.Commands[cmd.Name] = commandRecord{PID: pid, StartTicks: st.StartTicks, Line: cmd.Line}
	if err := p.writeRecord(rec); err != nil {
		_ = signalGroup(pid, sigKill)
		return lifecycle.CommandStatus{}, fmt.Errorf("start command in sandbox %s: %w", sandboxID, err)
	}
	p.log.Info("command started", "sandbox_id", sandboxID, "name", cmd.Name, "pid", pid, "port", hostPort)
	return lifecycle.CommandStatus{Running: true}, nil
}

// CommandStatus reads the command named name: running while its process
// lives (stopped with a paused sandbox counts), else exited with the code
// its reaper kept (-1 when another process started it). Output is the last
// lines of its log. Errors: ErrNoCommand (wrapped) when the sandbox holds
// none (never started, or dropped by a pause); gone; transient when ctx is
// done.
func (p *Provider) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	if err := ctx.Err(); err != nil {
		return lifecycle.CommandStatus{}, p.transient(opCommandStatus, sandboxID, err)
	}
	rec, _, err := p.load(opCommandStatus, sandboxID)
	if err != nil {
		return lifecycle.CommandStatus{}, err
	}
	c, ok := rec.Commands[name]
	if !ok {
		return lifecycle.CommandStatus{}, fmt.Errorf("command %s in sandbox %s: %w", name, sandboxID, lifecycle.ErrNoCommand)
	}
	st := lifecycle.CommandStatus{Running: commandAlive(c), Output: lastLines(p.commandLog(sandboxID, name), commandOutputLines)}
	if !st.Running {
		st.ExitCode = -1
		// The reaper writes the code right after the exit; give it a moment.
		for i := 0; i < 50; i++ {
			if b, err := os.ReadFile(p.commandExitFile(sandboxID, name, c.PID)); err == nil {
				st.ExitCode, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				break
			}
			time.Sleep(pollInterval)
		}
	}
	return st, nil
}

// PortURL returns http://127.0.0.1:<host port>/ for the sandbox's port,
// mapping it to a free loopback port on first use; the mapping lasts as
// long as the sandbox, across pauses. Errors: gone; a plain error when no
// port is free.
func (p *Provider) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	unlock, err := p.lock(ctx, opPortURL, sandboxID)
	if err != nil {
		return "", err
	}
	defer unlock()
	rec, _, err := p.load(opPortURL, sandboxID)
	if err != nil {
		return "", err
	}
	hostPort, _, err := p.mapPort(rec, port)
	if err != nil {
		return "", fmt.Errorf("port URL of sandbox %s: %w", sandboxID, err)
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)) + "/", nil
}

// PortClosed reports whether an answer is the preview front's own "port
// not open" 502 (FrontHeader FrontPortClosed): nothing listens behind the
// port yet.
func (p *Provider) PortClosed(status int, header http.Header, _ []byte) bool {
	return status == http.StatusBadGateway && header.Get(FrontHeader) == FrontPortClosed
}

// mapPort returns the host port of the sandbox port port (0 for 0): on
// first use a free loopback port served by a preview front (front.go), in
// front of another free port that the sandbox's command listens on
// (record.Upstreams), written to the record. The caller holds the
// sandbox's lock.
func (p *Provider) mapPort(rec record, port int) (int, record, error) {
	if port <= 0 {
		return 0, rec, nil
	}
	key := strconv.Itoa(port)
	if hp, ok := rec.Ports[key]; ok {
		return hp, rec, nil
	}
	public, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, rec, fmt.Errorf("find a free port for sandbox port %d: %w", port, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = public.Close()
		return 0, rec, fmt.Errorf("find a free port for sandbox port %d: %w", port, err)
	}
	inner := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // the command binds it
	hp := public.Addr().(*net.TCPAddr).Port
	rec.Ports = maps.Clone(rec.Ports)
	if rec.Ports == nil {
		rec.Ports = map[string]int{}
	}
	rec.Ports[key] = hp
	rec.Upstreams = maps.Clone(rec.Upstreams)
	if rec.Upstreams == nil {
		rec.Upstreams = map[string]int{}
	}
	rec.Upstreams[strconv.Itoa(hp)] = inner
	if err := p.writeRecord(rec); err != nil {
		_ = public.Close()
		return 0, rec, err
	}
	p.openFront(rec.ID, public, inner)
	return hp, rec, nil
}

// signalCommands sends sig to every command's process group of rec.
func (p *Provider) signalCommands(rec record, sig groupSignal) {
	for name, c := range rec.Commands {
		if err := signalGroup(c.PID, sig); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("signal command", "sandbox_id", rec.ID, "name", name, "err", err)
		}
	}
}

// commandAlive reports whether c's process still lives (and is still c).
func commandAlive(c commandRecord) bool {
	st, err := readProcStat(c.PID)
	return err == nil && st.live() && st.StartTicks == c.StartTicks
}

func (p *Provider) commandLog(sandboxID, name string) string {
	return filepath.Join(p.sandboxDir(sandboxID), "cmd-"+name+".log")
}

func (p *Provider) commandExitFile(sandboxID, name string, pid int) string {
	return filepath.Join(p.sandboxDir(sandboxID), "cmd-"+name+"."+strconv.Itoa(pid)+".exit")
}

// lastLines returns the last n lines of the file at path ("" when
// unreadable), reading at most its last 16 KiB.
func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		_, _ = f.Seek(-tail, 2)
	}
	b := make([]byte, tail)
	k, _ := f.Read(b)
	lines := bytes.Split(bytes.TrimRight(b[:k], "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
