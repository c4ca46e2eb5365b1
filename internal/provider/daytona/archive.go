package daytona

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.WorkspaceArchiver = (*Provider)(nil)

// ExportTar writes a tar of the folder dir in the sandbox, leaving out the
// exclude patterns, to w (lifecycle.WorkspaceArchiver). The toolbox's
// process/execute answers a command's output whole, and as text, so the
// tar goes through a file: sandboxfs.ExportCommand writes it with GNU tar
// to /tmp/sandman-archive-<random>.tar (retried: it only rewrites that
// file), then GET <toolbox>/files/download?path=… streams that file into
// w as it arrives, and the file is removed. GNU tar's exit 1 (a file
// changed while read) still made a whole archive; any other code than 0
// fails. Each step is bounded by Config.ArchiveTimeout. The download is not
// retried: bytes written to w cannot be taken back, so the caller retries
// the whole export. The sandbox needs free disk for one copy of the
// archive. Errors: gone, transient, a plain error for tar's failure (its
// exit code and output) or the toolbox's refusal (400: not started), w's,
// a bad pattern (archive.ErrBadPattern) or folder.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	const op = "export_tar"
	file := sandboxfs.Transfer() + ".tar"
	line, err := sandboxfs.ExportCommand(dir, excludes, file)
	if err != nil {
		return 0, err
	}
	if err := checkID(op, sandboxID); err != nil {
		return 0, err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return 0, err
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	defer cancel()
	defer p.removeTransfer(ctx, op, sandboxID, tb, file)
	var out string
	var code int
	err = p.retry(actx, op, sandboxID, 0, func(ctx context.Context) error {
		out, code, err = p.executeOnce(ctx, op, sandboxID, tb, line, p.cfg.ArchiveTimeout)
		return err
	})
	switch {
	case err != nil:
		return 0, err
	case !sandboxfs.ExportOK(code):
		return 0, fmt.Errorf("%s: tar exited %d: %s", provhttp.Describe(op, sandboxID), code, provhttp.Snippet([]byte(out)))
	}
	resp, r, err := provhttp.Open(actx, p.cfg.HTTPClient, p.prepare(request{Op: op, SandboxID: sandboxID,
		Method: http.MethodGet, URL: tb.String(), Path: []string{"files", "download"}, Query: url.Values{"path": {file}}}), nil, "")
	switch {
	case err != nil:
		return 0, err
	case resp == nil && r.Status == http.StatusNotFound: // the file, not the sandbox
		return 0, fmt.Errorf("%s: the archive file %s is missing: %s", provhttp.Describe(op, sandboxID), file, provhttp.Snippet(r.Body))
	case resp == nil:
		return 0, p.statusError(op, sandboxID, r)
	}
	return provhttp.Download(w, resp, op, sandboxID)
}

// ImportTar unpacks the tar stream r into the folder dir in the sandbox,
// making it (lifecycle.WorkspaceArchiver). The stream goes up as one file
// through the toolbox's POST <toolbox>/files/bulk-upload, a
// multipart/form-data body of the fields files[0].path and files[0].file
// (what the SDK's uploadFileStream sends), streamed as r is read, into a
// fresh folder under /tmp (sandboxfs.Transfer); then
// sandboxfs.ImportCommand unpacks it with GNU tar through process/execute
// and removes it. While it goes up, r is read as a tar stream
// (archive.Checked): an archive that UnpackTar would refuse, or one cut
// short, fails the upload before anything is unpacked. Each step is
// bounded by Config.ArchiveTimeout; on a failure the upload is removed.
// Not retried: the caller retries the whole import (a retried tar would
// find its upload removed). Errors: gone, transient, a plain error for
// tar's failure or the toolbox's refusal, archive.ErrUnsafe (wrapped), r's.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) (err error) {
	const op = "import_tar"
	parts := sandboxfs.Transfer()
	line, err := sandboxfs.ImportCommand(dir, parts)
	if err != nil {
		return err
	}
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			p.removeTransfer(ctx, op, sandboxID, tb, parts)
		}
	}()
	src := archive.Checked(r)
	defer src.Close()
	part := sandboxfs.PartName(parts, 0)
	body, ctype := provhttp.MultipartBody([][2]string{{"files[0].path", part}}, "files[0].file", part, src)
	resp, rep, err := provhttp.Open(actx, p.cfg.HTTPClient, p.prepare(request{Op: op, SandboxID: sandboxID,
		Method: http.MethodPost, URL: tb.String(), Path: []string{"files", "bulk-upload"}}), body, ctype)
	switch {
	case err != nil:
		return err
	case resp == nil:
		return p.statusError(op, sandboxID, rep)
	}
	resp.Body.Close()
	out, code, err := p.executeOnce(actx, op, sandboxID, tb, line, p.cfg.ArchiveTimeout)
	if err == nil && code != 0 {
		err = fmt.Errorf("%s: tar exited %d: %s", provhttp.Describe(op, sandboxID), code, provhttp.Snippet([]byte(out)))
	}
	return err
}

// removeTransfer removes a transfer's temporary files, once, on a context
// of its own (ctx may have ended); a failure is logged.
func (p *Provider) removeTransfer(ctx context.Context, op, sandboxID string, tb *url.URL, path string) {
	line, err := sandboxfs.RemoveCommand(path)
	if err == nil {
		_, _, err = p.executeOnce(context.WithoutCancel(ctx), op, sandboxID, tb, line, p.cfg.RequestTimeout)
	}
	if err != nil {
		p.cfg.Logger.WarnContext(ctx, "daytona: could not remove an archive transfer's files", "sandbox_id", sandboxID,
			"path", path, "error", err)
	}
}
