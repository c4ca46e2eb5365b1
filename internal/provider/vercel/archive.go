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

	"github.com/sandmanhq/sandman/internal/archive"
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
// text, which cannot hold a tar's bytes, so the tar goes through a file:
// sandboxfs.ExportCommand writes it with GNU tar to
// /tmp/sandman-archive-<random>.tar (runIn, retried: it only rewrites that
// file), then POST /v2/sandboxes/sessions/{id}/fs/read {"path"} streams
// that file (application/octet-stream) into w as it arrives, and the file
// is removed. GNU tar's exit 1 (a file changed while read) still made a
// whole archive; any other code than 0 fails. The whole is bounded by
// Config.ArchiveTimeout. The read is not retried: bytes written to w
// cannot be taken back, so the caller retries the whole export. The
// session needs free disk for one copy of the archive. Errors: conflict
// (no running session), gone, transient, a plain error for tar's failure
// (its exit code and output), w's, a bad pattern (archive.ErrBadPattern)
// or folder.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	const op = "export_tar"
	file := sandboxfs.Transfer() + ".tar"
	line, err := sandboxfs.ExportCommand(dir, excludes, file)
	if err != nil {
		return 0, err
	}
	sessionID, err := p.sessionFor(ctx, op, sandboxID)
	if err != nil {
		return 0, err
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	defer cancel()
	defer p.removeTransfer(ctx, op, sandboxID, sessionID, file)
	st, err := p.runIn(actx, op, sandboxID, sessionID, line, p.cfg.ArchiveTimeout, true)
	switch {
	case err != nil:
		return 0, err
	case !sandboxfs.ExportOK(*st.exit):
		return 0, fmt.Errorf("%s: tar exited %d: %s", provhttp.Describe(op, sandboxID), *st.exit, provhttp.Snippet([]byte(st.output)))
	}
	resp, r, err := provhttp.Open(actx, p.cfg.HTTPClient, p.prepare(request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path: []string{"v2", "sandboxes", "sessions", sessionID, "fs", "read"}, Body: map[string]string{"path": file}}), nil, "")
	switch {
	case err != nil:
		return 0, err
	case resp == nil && r.Status == http.StatusNotFound: // the file, not the sandbox
		return 0, fmt.Errorf("%s: the archive file %s is missing", provhttp.Describe(op, sandboxID), file)
	case resp == nil:
		return 0, p.sessionError(op, sandboxID, r)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "application/octet-stream" {
		resp.Body.Close()
		return 0, decodeError(op, sandboxID, fmt.Errorf("fs/read answered %q, not a file", ct))
	}
	return provhttp.Download(w, resp, op, sandboxID)
}

// ImportTar unpacks the tar stream r into the folder dir in the sandbox's
// current session, making it (lifecycle.WorkspaceArchiver). The stream
// goes up through the file API, POST /v2/sandboxes/sessions/{id}/fs/write
// (what the SDK's writeFiles sends): a gzipped tar (application/gzip) of
// regular files, which Vercel writes under the folder the x-cwd header
// names ("/"; each member's name relative to it, folders made). The files
// are the parts of the stream, partSize bytes each (sandboxfs.PartName),
// in a fresh folder under /tmp (sandboxfs.Transfer), all sent in one
// request as r is read; then sandboxfs.ImportCommand concatenates them
// into GNU tar's `tar -x` and removes them. While it goes up, r is read as
// a tar stream (archive.Checked): an archive that UnpackTar would refuse,
// or one cut short, fails the upload before anything is unpacked; after
// any failure the parts are removed. The whole is bounded by
// Config.ArchiveTimeout. Not retried: the caller retries the whole import
// (a retried tar would find its parts removed). Errors: conflict, gone,
// transient, a plain error for tar's failure, archive.ErrUnsafe (wrapped),
// r's.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) (err error) {
	const op = "import_tar"
	parts := sandboxfs.Transfer()
	line, err := sandboxfs.ImportCommand(dir, parts)
	if err != nil {
		return err
	}
	sessionID, err := p.sessionFor(ctx, op, sandboxID)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			p.removeTransfer(ctx, op, sandboxID, sessionID, parts)
		}
	}()
	src := archive.Checked(r)
	defer src.Close()
	body := partsBody(src, parts)
	defer body.Close()
	resp, rep, err := provhttp.Open(actx, p.cfg.HTTPClient, p.prepare(request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path: []string{"v2", "sandboxes", "sessions", sessionID, "fs", "write"}, Header: http.Header{"X-Cwd": {"/"}}}),
		body, "application/gzip")
	switch {
	case err != nil:
		return err
	case resp == nil:
		return p.sessionError(op, sandboxID, rep)
	}
	resp.Body.Close()
	st, err := p.runIn(actx, op, sandboxID, sessionID, line, p.cfg.ArchiveTimeout, false)
	if err == nil && *st.exit != 0 {
		err = fmt.Errorf("%s: tar exited %d: %s", provhttp.Describe(op, sandboxID), *st.exit, provhttp.Snippet([]byte(st.output)))
	}
	return err
}

// sessionFor returns the running session of sandboxID. Errors: conflict
// (none runs), gone, transient, a plain error for a bad name.
func (p *Provider) sessionFor(ctx context.Context, op, sandboxID string) (string, error) {
	if !validName(sandboxID) {
		return "", fmt.Errorf("%s: invalid sandbox name %q", op, sandboxID)
	}
	a, err := p.current(ctx, op, sandboxID)
	if err != nil {
		return "", err
	}
	return orString(a.Sandbox.CurrentSessionID, a.Session.ID), nil
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

// removeTransfer removes a transfer's temporary files, once, on a context
// of its own (ctx may have ended); a failure is logged.
func (p *Provider) removeTransfer(ctx context.Context, op, sandboxID, sessionID, path string) {
	line, err := sandboxfs.RemoveCommand(path)
	if err == nil {
		_, err = p.runIn(context.WithoutCancel(ctx), op, sandboxID, sessionID, line, p.cfg.RequestTimeout, false)
	}
	if err != nil {
		p.cfg.Logger.WarnContext(ctx, "vercel: could not remove an archive transfer's files", "sandbox_id", sandboxID,
			"path", path, "error", err)
	}
}
