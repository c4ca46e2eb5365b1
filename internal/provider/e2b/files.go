package e2b

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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
// stream to the command's end (readProcess). envd kills the command after
// Config.RequestTimeout (Connect-Timeout-Ms), which bounds the whole call
// too. It returns the stdout. Retried: callers pass lines that may run
// twice. Errors: *ExitError, gone, transient (envd ended the stream
// without the command's end, or killed it).
func (p *Provider) runLine(ctx context.Context, op, sandboxID, line string) ([]byte, error) {
	var stdout []byte
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		var err error
		stdout, err = p.runOnce(ctx, op, sandboxID, line, p.cfg.RequestTimeout)
		return err
	})
	return stdout, err
}

// runOnce is one attempt of runLine, killed and bounded after timeout:
// the stdout whole (up to maxOutput), or *ExitError for an exit code other
// than 0.
func (p *Provider) runOnce(ctx context.Context, op, sandboxID, line string, timeout time.Duration) ([]byte, error) {
	var stdout []byte
	code, stderr, err := p.runStream(ctx, op, sandboxID, line, timeout, func(b []byte) error {
		if stdout = append(stdout, b...); len(stdout) > maxOutput {
			return fmt.Errorf("%s sandbox %s: over %d bytes of output", op, sandboxID, maxOutput)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case code != 0:
		return nil, &ExitError{Op: op, SandboxID: sandboxID, Code: code, Stderr: string(stderr)}
	}
	return stdout, nil
}

// runStream runs line under /bin/bash -c through envd's Start, killed and
// bounded after timeout, and reads the stream to the command's end: data
// events carry its stdout, handed to onStdout chunk by chunk as envd sends
// them (protobuf bytes, base64 in JSON), and stderr, of which the first
// 512 bytes are kept; the end event carries the exit code (left out when
// 0). Not retried. Errors: onStdout's, gone, transient (envd ended the
// stream without the command's end, or killed it).
func (p *Provider) runStream(ctx context.Context, op, sandboxID, line string, timeout time.Duration,
	onStdout func([]byte) error) (code int, stderr []byte, err error) {
	if err := p.envdToken(ctx, op, sandboxID); err != nil {
		return 0, nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := p.openStart(rctx, op, sandboxID,
		startRequest{Process: processConfig{Cmd: "/bin/bash", Args: []string{"-c", line}}}, timeout)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		msg, end, err := readFrame(br)
		switch {
		case err != nil:
			return 0, nil, lifecycle.Transientf(op, sandboxID, 0, "the command's stream broke: %w", err)
		case end:
			return 0, nil, lifecycle.Transientf(op, sandboxID, 0, "envd ended the stream before the command's end: %s",
				strings.TrimSpace(string(msg)))
		}
		var ev processEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			return 0, nil, decodeError(op, sandboxID, err)
		}
		switch e := ev.Event; {
		case e.Data != nil:
			if room := 512 - len(stderr); room > 0 {
				stderr = append(stderr, e.Data.Stderr[:min(room, len(e.Data.Stderr))]...)
			}
			if len(e.Data.Stdout) > 0 {
				if err := onStdout(e.Data.Stdout); err != nil {
					return 0, nil, err
				}
			}
		case e.End != nil && !e.End.Exited:
			return 0, nil, lifecycle.Transientf(op, sandboxID, 0, "envd ended the command: %s %s", e.End.Status, e.End.Error)
		case e.End != nil:
			return e.End.ExitCode, stderr, nil
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
