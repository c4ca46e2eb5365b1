package daytona

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.Files = (*Provider)(nil)

// WriteFile writes data to path in the sandbox (sandboxfs.WriteCommand,
// run to completion by the toolbox: execute). Retried (the same write
// twice is one write). Errors: gone, transient; plain for a path or size
// sandboxfs refuses, a sandbox not started, or the command's failure.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, path string, data []byte) error {
	const op = "write_file"
	line, err := sandboxfs.WriteCommand(path, data)
	if err != nil {
		return err
	}
	out, code, err := p.execute(ctx, op, sandboxID, line)
	if err == nil && code != 0 {
		err = fmt.Errorf("write %s in sandbox %s: exit code %d: %s", path, sandboxID, code, provhttp.Snippet([]byte(out)))
	}
	return err
}

// ReadFile reads path in the sandbox whole (sandboxfs.ReadCommand, run by
// the toolbox: execute). Retried. Errors: lifecycle.ErrNoFile (wrapped)
// when it does not exist, gone, transient; plain as WriteFile's.
func (p *Provider) ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error) {
	const op = "read_file"
	line, err := sandboxfs.ReadCommand(path)
	if err != nil {
		return nil, err
	}
	out, code, err := p.execute(ctx, op, sandboxID, line)
	switch {
	case err != nil:
		return nil, err
	case code == sandboxfs.NoFileExit:
		return nil, fmt.Errorf("read %s in sandbox %s: %w", path, sandboxID, lifecycle.ErrNoFile)
	case code != 0:
		return nil, fmt.Errorf("read %s in sandbox %s: exit code %d: %s", path, sandboxID, code, provhttp.Snippet([]byte(out)))
	}
	return sandboxfs.DecodeRead([]byte(out))
}

// execute runs the shell line to completion through the toolbox's POST
// <toolbox>/process/execute and returns its output (stdout and stderr
// together) and exit code (executeOnce), killed after RequestTimeout.
// Retried: callers pass idempotent lines. Errors: gone, transient; plain
// for any other refusal (400: a sandbox not started).
func (p *Provider) execute(ctx context.Context, op, sandboxID, line string) (string, int, error) {
	if err := checkID(op, sandboxID); err != nil {
		return "", 0, err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return "", 0, err
	}
	var out string
	var code int
	err = p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		out, code, err = p.executeOnce(ctx, op, sandboxID, tb, line, p.cfg.RequestTimeout)
		return err
	})
	return out, code, err
}

// executeOnce is one POST <toolbox>/process/execute {"command", "timeout"}
// of the shell line, which the toolbox kills after timeout (whole seconds,
// at least 1; it answers 408 then), the call bounded by timeout too. That
// endpoint runs no shell: it splits the command at spaces outside quotes,
// without escapes (docs/providers/daytona.md "Checkpoints"), so the line
// travels as base64 inside `sh -c "echo <base64> | base64 -d | sh"`, which
// it splits into sh, -c and the pipeline whole. Errors: gone, transient;
// plain for any other refusal.
func (p *Provider) executeOnce(ctx context.Context, op, sandboxID string, tb *url.URL, line string, timeout time.Duration) (string, int, error) {
	var out executeBody
	if err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost, URL: tb.String(),
		Path: []string{"process", "execute"}, Body: map[string]any{"command": execLine(line),
			"timeout": max(int(timeout.Seconds()), 1)}, Timeout: timeout + p.cfg.RequestTimeout}, &out); err != nil {
		return "", 0, err
	}
	code := out.ExitCode
	if code == nil {
		code = out.Code
	}
	if code == nil {
		return "", 0, errors.New(provhttp.Describe(op, sandboxID) + ": daytona answered without an exit code")
	}
	return out.Result, *code, nil
}

// execLine is the command the toolbox's process/execute runs for the
// shell line line: `sh -c "echo <base64 of line> | base64 -d | sh"`.
func execLine(line string) string {
	return `sh -c "echo ` + base64.StdEncoding.EncodeToString([]byte(line)) + ` | base64 -d | sh"`
}
