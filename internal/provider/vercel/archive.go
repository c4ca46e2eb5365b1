package vercel

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.WorkspaceArchiver = (*Provider)(nil)

// partSize is how much of an imported tar stream one part file holds: 8
// MiB. The file API takes a gzipped tar of files, and a tar member's size
// comes before its bytes, so each part is read whole into memory before it
// is sent: this bounds an import's memory. A variable for the tests.
var partSize = 8 << 20

// ExportTar writes a tar of the folder dir in the sandbox's current
// session, leaving out the exclude patterns, to w
// (lifecycle.WorkspaceArchiver). A command's logs carry its output as JSON
// text, which cannot hold a tar's bytes, so the tar goes through a file
// (sandboxfs.ExportFile): GNU tar writes it to
// /tmp/sandman-archive-<random>.tar through the run-command API (runIn,
// retried: it only rewrites that file), POST
// /v2/sandboxes/sessions/{id}/fs/read {"path"} streams it
// (application/octet-stream) into w as it arrives, and it is removed. GNU
// tar's exit 1 (a file changed while read) still made a whole archive. The
// whole is bounded by Config.ArchiveTimeout. The read is not retried:
// bytes written to w cannot be taken back, so the caller retries the whole
// export. The session needs free disk for one copy of the archive. Errors:
// conflict (no running session), gone, transient, a plain error for tar's
// failure (its exit code and output), w's, a bad pattern
// (archive.ErrBadPattern) or folder.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	steps, ctx, cancel, err := p.archiveSteps(ctx, "export_tar", sandboxID)
	if err != nil {
		return 0, err
	}
	defer cancel()
	return sandboxfs.ExportFile(ctx, dir, excludes, w, steps)
}

// ImportTar unpacks the tar stream r into the folder dir in the sandbox's
// current session, making it (lifecycle.WorkspaceArchiver,
// sandboxfs.Import). The stream goes up through the file API, POST
// /v2/sandboxes/sessions/{id}/fs/write (what the SDK's writeFiles sends): a
// gzipped tar (application/gzip) of regular files, which Vercel writes
// under the folder the x-cwd header names ("/"; each member's name
// relative to it, folders made). The files are the parts of the stream,
// partSize bytes each (sandboxfs.PartName), all sent in one request as r
// is read and checked as a tar (archive.Checked); then GNU tar unpacks
// their concatenation and removes them. The whole is bounded by
// Config.ArchiveTimeout; after a failure the parts are removed. Not
// retried: the caller retries the whole import. Errors: conflict, gone,
// transient, a plain error for tar's failure, archive.ErrUnsafe (wrapped),
// r's.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error {
	steps, ctx, cancel, err := p.archiveSteps(ctx, "import_tar", sandboxID)
	if err != nil {
		return err
	}
	defer cancel()
	return sandboxfs.Import(ctx, dir, r, steps)
}

// archiveSteps finds the sandbox's running session and returns the
// transfer's steps in it, with ctx bounded by Config.ArchiveTimeout (call
// cancel). Errors: conflict (none runs), gone, transient, a plain error
// for a bad name.
func (p *Provider) archiveSteps(ctx context.Context, op, sandboxID string) (sandboxfs.Steps, context.Context, context.CancelFunc, error) {
	if !validName(sandboxID) {
		return sandboxfs.Steps{}, nil, nil, fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if err != nil {
		return sandboxfs.Steps{}, nil, nil, err
	}
	sessionID := orString(a.Sandbox.CurrentSessionID, a.Session.ID)
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	call := func(fsOp string, body any, header http.Header) request {
		return p.prepare(request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			Path: []string{"v2", "sandboxes", "sessions", sessionID, "fs", fsOp}, Body: body, Header: header})
	}
	return sandboxfs.Steps{
		Name: provhttp.Describe(op, sandboxID),
		Run: func(ctx context.Context, line string, retry bool) (int, string, error) {
			st, err := p.runIn(ctx, op, sandboxID, sessionID, line, p.cfg.ArchiveTimeout, retry)
			if err != nil {
				return 0, "", err
			}
			return *st.exit, st.output, nil
		},
		Upload: func(ctx context.Context, parts string, r io.Reader) error {
			body := partsBody(r, parts)
			defer body.Close()
			resp, rep, err := provhttp.Open(ctx, p.cfg.HTTPClient, call("write", nil, http.Header{"X-Cwd": {"/"}}), body, "application/gzip")
			if err == nil && resp == nil {
				return p.sessionError(op, sandboxID, rep)
			}
			if err == nil {
				err = resp.Body.Close()
			}
			return err
		},
		Download: func(ctx context.Context, path string, w io.Writer) (int64, error) {
			resp, r, err := provhttp.Open(ctx, p.cfg.HTTPClient, call("read", map[string]string{"path": path}, nil), nil, "")
			switch {
			case err != nil:
				return 0, err
			case resp == nil && r.Status == http.StatusNotFound: // the file, not the sandbox
				return 0, fmt.Errorf("%s: the archive file %s is missing", provhttp.Describe(op, sandboxID), path)
			case resp == nil:
				return 0, p.sessionError(op, sandboxID, r)
			}
			if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/octet-stream" {
				resp.Body.Close()
				return 0, decodeError(op, sandboxID, fmt.Errorf("fs/read answered %q, not a file", ct))
			}
			return provhttp.Download(w, resp, op, sandboxID)
		},
		Log: p.cfg.Logger,
	}, actx, cancel, nil
}

// partsBody returns the gzipped tar stream of the parts of r in the
// folder parts, written as it is read (a goroutine: close the body to end
// it early). A failure of r fails the body's read with r's error.
func partsBody(r io.Reader, parts string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		gz, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		tw := tar.NewWriter(gz)
		buf := make([]byte, partSize)
		err := func() error {
			for i := 0; ; i++ {
				n, err := io.ReadFull(r, buf)
				last := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
				if err != nil && !last {
					return err
				}
				if n == 0 && i > 0 {
					break
				}
				name := strings.TrimPrefix(sandboxfs.PartName(parts, i), "/")
				if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(n)}); err != nil {
					return err
				}
				if _, err := tw.Write(buf[:n]); err != nil {
					return err
				}
				if last {
					break
				}
			}
			if err := tw.Close(); err != nil {
				return err
			}
			return gz.Close()
		}()
		pw.CloseWithError(err)
	}()
	return pr
}
