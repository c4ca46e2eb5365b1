package e2b

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.Files = (*Provider)(nil)

// maxOutput bounds the output of a file command that is kept (a read of
// sandboxfs.MaxWriteBytes is about 88 KiB of base64).
const maxOutput = 4 << 20

// WriteFile writes data to path in the sandbox, making its folders
// (lifecycle.Files): it runs sandboxfs's write command line to its end
// (runLine). Retried: writing the same bytes again is harmless. Errors:
// gone, transient; a plain error for a path sandboxfs refuses, data over
// sandboxfs.MaxWriteBytes, or a command that failed (an *ExitError).
func (p *Provider) WriteFile(ctx context.Context, sandboxID, path string, data []byte) error {
	line, err := sandboxfs.WriteCommand(path, data)
	if err != nil {
		return err
	}
	_, err = p.runLine(ctx, "write_file", sandboxID, line)
	return err
}

// ReadFile reads path whole (lifecycle.Files) with sandboxfs's read command
// line; its exit code sandboxfs.NoFileExit means the file does not exist.
// Retried. Errors: lifecycle.ErrNoFile (wrapped), gone, transient; a plain
// error for a path sandboxfs refuses, a command that failed otherwise, or
// an output that is not base64.
func (p *Provider) ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error) {
	line, err := sandboxfs.ReadCommand(path)
	if err != nil {
		return nil, err
	}
	out, err := p.runLine(ctx, "read_file", sandboxID, line)
	var exit *ExitError
	switch {
	case errors.As(err, &exit) && exit.Code == sandboxfs.NoFileExit:
		return nil, fmt.Errorf("read %s in sandbox %s: %w", path, sandboxID, lifecycle.ErrNoFile)
	case err != nil:
		return nil, err
	}
	return sandboxfs.DecodeRead(out)
}

// ExitError is a command of Files that ran to its end and exited with a
// code other than 0.
type ExitError struct {
	Op, SandboxID string
	Code          int
	Stderr        string // its start
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s sandbox %s: the command exited %d: %s", e.Op, e.SandboxID, e.Code, e.Stderr)
}

// runLine runs line under /bin/bash -c (not a login shell, so that no
// profile prints into its output) through envd's Start, and reads the
// stream to the command's end: data events carry its stdout and stderr
// (protobuf bytes, base64 in JSON), the end event its exit code (left out
// when 0). envd kills the command after Config.RequestTimeout
// (Connect-Timeout-Ms), which bounds the whole call too. It returns the
// stdout. Retried: callers pass lines that may run twice. Errors:
// *ExitError, gone, transient (envd ended the stream without the command's
// end, or killed it).
func (p *Provider) runLine(ctx context.Context, op, sandboxID, line string) ([]byte, error) {
	var stdout []byte
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		var err error
		stdout, err = p.runOnce(ctx, op, sandboxID, line)
		return err
	})
	return stdout, err
}

// runOnce is one attempt of runLine.
func (p *Provider) runOnce(ctx context.Context, op, sandboxID, line string) ([]byte, error) {
	if err := p.envdToken(ctx, op, sandboxID); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	resp, err := p.openStart(rctx, op, sandboxID,
		startRequest{Process: processConfig{Cmd: "/bin/bash", Args: []string{"-c", line}}}, p.cfg.RequestTimeout)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var stdout, stderr []byte
	for {
		msg, end, err := readFrame(br)
		switch {
		case err != nil:
			return nil, lifecycle.Transientf(op, sandboxID, 0, "the command's stream broke: %w", err)
		case end:
			return nil, lifecycle.Transientf(op, sandboxID, 0, "envd ended the stream before the command's end: %s",
				strings.TrimSpace(string(msg)))
		}
		var ev processEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			return nil, decodeError(op, sandboxID, err)
		}
		switch e := ev.Event; {
		case e.Data != nil:
			stdout, stderr = append(stdout, e.Data.Stdout...), append(stderr, e.Data.Stderr...)
			if len(stdout) > maxOutput {
				return nil, fmt.Errorf("%s sandbox %s: over %d bytes of output", op, sandboxID, maxOutput)
			}
		case e.End != nil && !e.End.Exited:
			return nil, lifecycle.Transientf(op, sandboxID, 0, "envd ended the command: %s %s", e.End.Status, e.End.Error)
		case e.End != nil && e.End.ExitCode != 0:
			return nil, &ExitError{Op: op, SandboxID: sandboxID, Code: e.End.ExitCode, Stderr: string(stderr[:min(len(stderr), 512)])}
		case e.End != nil:
			return stdout, nil
		}
	}
}

// envdToken makes sure this Provider holds the sandbox's envd token, which
// envd wants on every call of a secure sandbox: one created by another
// process (another function) is read from the control API (GET answers
// it). Errors: gone, transient.
func (p *Provider) envdToken(ctx context.Context, op, sandboxID string) error {
	if p.tokens.get(sandboxID) != "" {
		return nil
	}
	_, _, err := p.get(ctx, op, sandboxID)
	return err
}
