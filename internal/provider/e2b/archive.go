package e2b

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.WorkspaceArchiver = (*Provider)(nil)

// envdFiles is envd's file API: POST uploads a file (multipart, field
// "file"; the path in the query), GET downloads one.
const envdFiles = "/files"

// ExportTar writes a tar of the folder dir in the sandbox, leaving out the
// exclude patterns, to w (lifecycle.WorkspaceArchiver): it runs
// sandboxfs.ExportCommand (GNU tar to stdout) under /bin/bash -c through
// envd's Start and writes each stdout chunk of the stream to w as it
// arrives (runStream; envd reads 32 KiB at a time and holds the command
// back while Sandman reads slowly), so the archive is never whole in
// memory. GNU tar's exit 1 (a file changed while read) still made a whole
// archive; any other code than 0 is a failure and what was written must be
// discarded. envd kills the tar after Config.ArchiveTimeout, which bounds
// the call too. Not retried: bytes written to w cannot be taken back, so
// the caller retries the whole export. Errors: gone, transient, *ExitError
// (tar failed: its exit code and stderr), w's, a bad pattern
// (archive.ErrBadPattern) or folder.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	const op = "export_tar"
	line, err := sandboxfs.ExportCommand(dir, excludes, "")
	if err != nil {
		return 0, err
	}
	if err := checkID(op, sandboxID); err != nil {
		return 0, err
	}
	var n int64
	code, stderr, err := p.runStream(ctx, op, sandboxID, line, p.cfg.ArchiveTimeout, func(b []byte) error {
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return fmt.Errorf("%s sandbox %s: write the archive: %w", op, sandboxID, err)
		}
		return nil
	})
	if err == nil && !sandboxfs.ExportOK(code) {
		err = &ExitError{Op: op, SandboxID: sandboxID, Code: code, Stderr: string(stderr)}
	}
	return n, err
}

// ImportTar unpacks the tar stream r into the folder dir in the sandbox,
// making it (lifecycle.WorkspaceArchiver, sandboxfs.Import). The stream
// goes up as one file through envd's file API, POST <envd>/files?path=…
// with a multipart/form-data body (field "file"), streamed as r is read
// and checked as a tar (archive.Checked); then GNU tar unpacks it, under
// /bin/bash -c through envd's Start, and removes it. The whole is bounded
// by Config.ArchiveTimeout; after a failure the upload is removed. Not
// retried: the caller retries the whole import. Errors: gone, transient, a
// plain error for tar's failure (its exit code and stderr) or envd's
// refusal (507: the disk is full), archive.ErrUnsafe (wrapped), r's.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error {
	const op = "import_tar"
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	if err := p.envdToken(ctx, op, sandboxID); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	defer cancel()
	return sandboxfs.Import(ctx, dir, r, sandboxfs.Steps{
		Name: provhttp.Describe(op, sandboxID),
		Log:  p.cfg.Logger,
		Run: func(ctx context.Context, line string, _ bool) (int, string, error) {
			_, err := p.runOnce(ctx, op, sandboxID, line, p.cfg.ArchiveTimeout)
			var exit *ExitError
			if errors.As(err, &exit) {
				return exit.Code, exit.Stderr, nil
			}
			return 0, "", err
		},
		Upload: func(ctx context.Context, parts string, r io.Reader) error {
			return p.upload(ctx, op, sandboxID, sandboxfs.PartName(parts, 0), r)
		},
	})
}

// upload streams r into the file path through envd's file API. Errors:
// envdError's, r's, transient.
func (p *Provider) upload(ctx context.Context, op, sandboxID, path string, r io.Reader) error {
	body, ctype := provhttp.MultipartBody(nil, "file", path, r)
	hdr := http.Header{"User-Agent": {"sandman-e2b"}}
	if tok := p.tokens.get(sandboxID); tok != "" {
		hdr.Set("X-Access-Token", tok)
	}
	resp, rep, err := provhttp.Open(ctx, p.cfg.HTTPClient, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		URL: p.envdURL(sandboxID, "") + envdFiles, Query: url.Values{"path": {path}}, Header: hdr, MaxBody: maxBody}, body, ctype)
	if err != nil {
		return err
	}
	if resp == nil {
		return p.envdError(ctx, op, sandboxID, rep)
	}
	return resp.Body.Close()
}
