package vercel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.Files = (*Provider)(nil)

// WriteFile writes data to the absolute path in the sandbox's current
// session, making its folders: sandboxfs's write line run to completion
// (runLine). Retried: writing the same bytes again is harmless. Errors:
// conflict (no running session: paused, stopping or snapshotting), gone,
// transient; a plain error for a path or size sandboxfs refuses, or a
// command that fails.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, path string, data []byte) error {
	line, err := sandboxfs.WriteCommand(path, data)
	if err != nil {
		return fmt.Errorf("write a file in sandbox %s: %w", sandboxID, err)
	}
	st, err := p.runLine(ctx, "write_file", sandboxID, line)
	if err == nil && *st.exit != 0 {
		err = fmt.Errorf("write %s in sandbox %s: exit code %d: %s", path, sandboxID, *st.exit, st.output)
	}
	return err
}

// ReadFile reads the absolute path whole from the sandbox's current
// session: sandboxfs's read line run to completion (runLine), its output
// decoded. Retried. Errors: lifecycle.ErrNoFile (wrapped) when the file
// does not exist (the line's sandboxfs.NoFileExit), and as WriteFile.
func (p *Provider) ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error) {
	line, err := sandboxfs.ReadCommand(path)
	if err != nil {
		return nil, fmt.Errorf("read a file in sandbox %s: %w", sandboxID, err)
	}
	st, err := p.runLine(ctx, "read_file", sandboxID, line)
	switch {
	case err != nil:
		return nil, err
	case *st.exit == sandboxfs.NoFileExit:
		return nil, fmt.Errorf("read %s in sandbox %s: %w", path, sandboxID, lifecycle.ErrNoFile)
	case *st.exit != 0:
		return nil, fmt.Errorf("read %s in sandbox %s: exit code %d: %s", path, sandboxID, *st.exit, st.output)
	}
	return sandboxfs.DecodeRead([]byte(st.stdout))
}

// runLine runs line with sh -c in the sandbox's current session and waits
// for it (runIn), retried, each attempt bounded by RequestTimeout.
// Errors: conflict (no running session, or it stopped meanwhile: 410
// sandbox_stopped, 422), gone, transient (a stream that ends before the
// exit code).
func (p *Provider) runLine(ctx context.Context, op, sandboxID, line string) (stream, error) {
	if !validName(sandboxID) {
		return stream{}, fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if err != nil {
		return stream{}, err
	}
	return p.runIn(ctx, op, sandboxID, orString(a.Sandbox.CurrentSessionID, a.Session.ID), line, p.cfg.RequestTimeout, true)
}

// runIn runs line with sh -c in the session sessionID and waits for it:
// POST /v2/sandboxes/sessions/{sessionId}/cmd with "wait" and "logs",
// whose answer is an NDJSON stream of the command, its output lines and
// the command again with its exit code (what the SDK's runCommand does
// without detached). Each attempt is bounded by timeout; retried only
// when retried. Errors: as runLine's.
func (p *Provider) runIn(ctx context.Context, op, sandboxID, sessionID, line string, timeout time.Duration, retried bool) (stream, error) {
	var st stream
	attempt := func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			Path:    []string{"v2", "sandboxes", "sessions", sessionID, "cmd"},
			Body:    commandBody{Command: "sh", Args: []string{"-c", line}, Env: map[string]string{}, Wait: true, Logs: true},
			Timeout: timeout})
		if err != nil {
			return err
		}
		if !r.OK() {
			return p.sessionError(op, sandboxID, r)
		}
		if st, err = readStream(r.Body); err != nil {
			return err
		}
		if st.exit == nil {
			return lifecycle.Transientf(op, sandboxID, 0, "the command's stream ended before its exit code")
		}
		return nil
	}
	var err error
	if retried {
		err = p.retry(ctx, op, sandboxID, attempt)
	} else {
		err = attempt(ctx)
	}
	return st, err
}

// sessionError classifies a failed answer to a call on a session: 410
// other than snapshot_not_found (sandbox_stopped: the session is over, the
// sandbox is fine) and 422 (stopping, snapshotting) are conflicts, never
// gone (docs/providers/vercel.md "Checkpoints", the gone table); the rest
// as statusError.
func (p *Provider) sessionError(op, sandboxID string, r reply) error {
	if r.Status == http.StatusGone && parseAPIError(r).Code != codeSnapshotNotFound {
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, parseAPIError(r))
	}
	return p.statusError(op, sandboxID, r)
}

// stream is a command's NDJSON output as Vercel streams it (logs, and a
// run with "wait"): stdout and stderr lines {"stream","data"}, an error
// line {"stream":"error","data":{code,message}}, and {"command":{…}}
// lines, the last of which carries the exit code.
type stream struct {
	stdout, output string // output: stdout and stderr in order
	exit           *int
}

// readStream reads an NDJSON stream; on an error line or a line that does
// not decode it returns what it read so far and the error (plain: a
// stream Vercel documents otherwise).
func readStream(body []byte) (stream, error) {
	var st stream
	for dec := json.NewDecoder(bytes.NewReader(body)); ; {
		var line struct {
			Command *struct {
				ExitCode *int `json:"exitCode"`
			} `json:"command"`
			Stream string          `json:"stream"`
			Data   json.RawMessage `json:"data"`
		}
		if err := dec.Decode(&line); errors.Is(err, io.EOF) {
			return st, nil
		} else if err != nil {
			return st, fmt.Errorf("vercel: a command stream line does not decode: %w", err)
		}
		var data string
		switch {
		case line.Command != nil:
			st.exit = line.Command.ExitCode
		case line.Stream == "error":
			return st, fmt.Errorf("vercel: the command stream failed: %s", line.Data)
		case (line.Stream == "stdout" || line.Stream == "stderr") && json.Unmarshal(line.Data, &data) == nil:
			st.output += data
			if line.Stream == "stdout" {
				st.stdout += data
			}
		}
	}
}
