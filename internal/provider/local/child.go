package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// A sandbox's child process: its directory, its start and environment, and
// the waits on /proc for it to serve, stop or exit.

// prepareDir fills a new sandbox directory: the lock file, the files
// directory and, for web, its index.html.
func (p *Provider) prepareDir(id, template string, now time.Time) error {
	dir := p.sandboxDir(id)
	if err := os.WriteFile(filepath.Join(dir, lockName), nil, 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, filesName), 0o755); err != nil {
		return err
	}
	if template == TemplateWeb {
		return os.WriteFile(filepath.Join(dir, filesName, "index.html"), indexHTML(id, now), 0o644)
	}
	return nil
}

// startChild starts the sandbox child of id in its own session, detached,
// with its output in sandbox.log and, for web, a fresh loopback listener as
// descriptor 3. It returns the command, a channel closed once the child is
// reaped, and the port the child listens on (0 for base): the preview
// front's target.
func (p *Provider) startChild(id, template string) (*exec.Cmd, chan struct{}, int, error) {
	dir := p.sandboxDir(id)
	logf, err := os.OpenFile(filepath.Join(dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("open sandbox log: %w", err)
	}
	defer logf.Close()

	cmd := exec.Command(p.cfg.Command[0], append(slices.Clone(p.cfg.Command[1:]), childArgs(id, template)...)...)
	cmd.Dir = dir
	cmd.Env = childEnv(p.cfg.Env)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childSysProcAttr()

	port := 0
	if template == TemplateWeb {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, 0, fmt.Errorf("listen for the preview port: %w", err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		lnf, err := ln.(*net.TCPListener).File() // a duplicate for the child
		_ = ln.Close()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("hand the preview listener to the child: %w", err)
		}
		defer lnf.Close()
		cmd.ExtraFiles = []*os.File{lnf} // descriptor 3 in the child
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, 0, fmt.Errorf("start sandbox child: %w", err)
	}
	exited := make(chan struct{})
	pid := cmd.Process.Pid
	p.mu.Lock()
	p.exited[pid] = exited
	p.mu.Unlock()
	go func() {
		// Reap the child as soon as it exits, so it never lingers as a
		// zombie; a stopped child does not make Wait return.
		err := cmd.Wait()
		p.mu.Lock()
		delete(p.exited, pid)
		p.mu.Unlock()
		close(exited)
		p.log.Debug("sandbox child reaped", "sandbox_id", id, "pid", pid, "status", err)
	}()
	return cmd, exited, port, nil
}

// childEnvKeys are the variables a sandbox child inherits from the control
// plane, when set: what a process needs to find programs, its home, its
// language, its time zone and its temporary directory. Nothing else
// passes, so the control plane's secrets (SANDMAN_WEBHOOK_SECRET, the
// provider API key, AWS credentials) never reach code running in a sandbox,
// as an E2B sandbox never sees its creator's environment.
var childEnvKeys = []string{"PATH", "HOME", "LANG", "TZ", "TMPDIR"}

// childEnv returns a sandbox child's environment, "KEY=value" each: the
// childEnvKeys this process has, then extra (Config.Env), which wins over
// them.
func childEnv(extra []string) []string {
	env := make([]string, 0, len(childEnvKeys)+len(extra))
	for _, k := range childEnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, extra...)
}

// awaitServing waits until a new web sandbox answers HTTP, its child exits,
// or Config.SignalTimeout passes.
func (p *Provider) awaitServing(ctx context.Context, rec record, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SignalTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.get(ctx, previewURL(rec)) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the web server does not answer (see %s): %w",
				filepath.Join(p.sandboxDir(rec.ID), logName), err)
		}
		return nil
	case <-exited:
		return fmt.Errorf("the child exited at start (see %s)", filepath.Join(p.sandboxDir(rec.ID), logName))
	}
}

// removeDir closes sandbox id's preview fronts and removes its directory.
func (p *Provider) removeDir(id string) error {
	p.closeFronts(id)
	if err := os.RemoveAll(p.sandboxDir(id)); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	p.forget(id)
	return nil
}

// liveStat reads rec's process. It returns an error wrapping fs.ErrNotExist
// when the process has exited, is a zombie, or the pid was reused.
func (p *Provider) liveStat(rec record) (procStat, error) {
	st, err := readProcStat(rec.PID)
	if err != nil {
		return procStat{}, err
	}
	switch {
	case st.StartTicks != rec.StartTicks:
		return procStat{}, fmt.Errorf("process %d is another process now: %w", rec.PID, fs.ErrNotExist)
	case !st.live():
		return procStat{}, fmt.Errorf("process %d has exited: %w", rec.PID, fs.ErrNotExist)
	}
	return st, nil
}

// await waits until rec's process satisfies cond, within ctx and
// Config.SignalTimeout. Errors: gone when the process exits, transient when
// the time runs out.
func (p *Provider) await(ctx context.Context, op string, rec record, cond func(procStat) bool) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SignalTimeout)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		st, err := p.liveStat(rec)
		if err != nil {
			return p.classify(op, rec.ID, err)
		}
		if cond(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return p.transient(op, rec.ID, fmt.Errorf("process %d stays in state %c: %w", rec.PID, st.State, ctx.Err()))
		case <-t.C:
		}
	}
}

// awaitCommandsExit waits until every command process of rec has exited
// (see awaitExit). Errors: as awaitExit's.
func (p *Provider) awaitCommandsExit(ctx context.Context, op string, rec record) error {
	for _, c := range rec.Commands {
		if err := p.awaitExit(ctx, op, record{ID: rec.ID, PID: c.PID, StartTicks: c.StartTicks}); err != nil {
			return err
		}
	}
	return nil
}

// awaitExit waits until rec's process has exited: reaped when it is this
// Provider's child, otherwise gone from /proc or a zombie for its new
// parent to reap. Errors: transient when the time runs out.
func (p *Provider) awaitExit(ctx context.Context, op string, rec record) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SignalTimeout)
	defer cancel()
	p.mu.Lock()
	exited := p.exited[rec.PID]
	p.mu.Unlock()
	if exited != nil {
		select {
		case <-exited:
			return nil
		case <-ctx.Done():
			return p.transient(op, rec.ID, fmt.Errorf("process %d was not reaped: %w", rec.PID, ctx.Err()))
		}
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		_, err := p.liveStat(rec)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s sandbox %s: %w", op, rec.ID, err)
		}
		select {
		case <-ctx.Done():
			return p.transient(op, rec.ID, fmt.Errorf("process %d does not exit: %w", rec.PID, ctx.Err()))
		case <-t.C:
		}
	}
}
