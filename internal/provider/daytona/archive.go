package daytona

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

var _ lifecycle.WorkspaceArchiver = (*Provider)(nil)

// ExportTar writes a tar of the folder dir in the sandbox, leaving out the
// exclude patterns, to w (lifecycle.WorkspaceArchiver). The toolbox's
// process/execute answers a command's output whole, and as text, so the
// tar goes through a file (sandboxfs.ExportFile): GNU tar writes it to
// /tmp/sandman-archive-<random>.tar through process/execute (retried: it
// only rewrites that file), GET <toolbox>/files/download?path=… streams it
// into w as it arrives, and it is removed. GNU tar's exit 1 (a file
// changed while read) still made a whole archive. The whole is bounded by
// Config.ArchiveTimeout. The download is not retried: bytes written to w
// cannot be taken back, so the caller retries the whole export. The
// sandbox needs free disk for one copy of the archive. Errors: gone,
// transient, a plain error for tar's failure (its exit code and output) or
// the toolbox's refusal (400: not started), w's, a bad pattern
// (archive.ErrBadPattern) or folder.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	steps, ctx, cancel, err := p.archiveSteps(ctx, "export_tar", sandboxID)
	if err != nil {
		return 0, err
	}
	defer cancel()
	return sandboxfs.ExportFile(ctx, dir, excludes, w, steps)
}

// ImportTar unpacks the tar stream r into the folder dir in the sandbox,
// making it (lifecycle.WorkspaceArchiver, sandboxfs.Import). The stream
// goes up as one file through the toolbox's POST
// <toolbox>/files/bulk-upload, a multipart/form-data body of the fields
// files[0].path and files[0].file (what the SDK's uploadFileStream sends),
// streamed as r is read and checked as a tar (archive.Checked); then GNU
// tar unpacks it through process/execute and removes it. The whole is
// bounded by Config.ArchiveTimeout; after a failure the upload is removed.
// Not retried: the caller retries the whole import. Errors: gone,
// transient, a plain error for tar's failure or the toolbox's refusal,
// archive.ErrUnsafe (wrapped), r's.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error {
	steps, ctx, cancel, err := p.archiveSteps(ctx, "import_tar", sandboxID)
	if err != nil {
		return err
	}
	defer cancel()
	return sandboxfs.Import(ctx, dir, r, steps)
}

// archiveSteps finds the sandbox's toolbox and returns the transfer's
// steps over it, with ctx bounded by Config.ArchiveTimeout (call cancel).
// Errors: gone, transient.
func (p *Provider) archiveSteps(ctx context.Context, op, sandboxID string) (sandboxfs.Steps, context.Context, context.CancelFunc, error) {
	if err := checkID(op, sandboxID); err != nil {
		return sandboxfs.Steps{}, nil, nil, err
	}
	tb, err := p.toolbox(ctx, op, sandboxID)
	if err != nil {
		return sandboxfs.Steps{}, nil, nil, err
	}
	actx, cancel := context.WithTimeout(ctx, p.cfg.ArchiveTimeout)
	call := func(method string, path ...string) request {
		return p.prepare(request{Op: op, SandboxID: sandboxID, Method: method, URL: tb.String(), Path: path})
	}
	return sandboxfs.Steps{
		Name: provhttp.Describe(op, sandboxID),
		Run: func(ctx context.Context, line string, retry bool) (code int, out string, err error) {
			attempt := func(ctx context.Context) error {
				out, code, err = p.executeOnce(ctx, op, sandboxID, tb, line, p.cfg.ArchiveTimeout)
				return err
			}
			if retry {
				err = p.retry(ctx, op, sandboxID, 0, attempt)
			} else {
				err = attempt(ctx)
			}
			return code, out, err
		},
		Upload: func(ctx context.Context, parts string, r io.Reader) error {
			part := sandboxfs.PartName(parts, 0)
			body, ctype := provhttp.MultipartBody([][2]string{{"files[0].path", part}}, "files[0].file", part, r)
			resp, rep, err := provhttp.Open(ctx, p.cfg.HTTPClient, call(http.MethodPost, "files", "bulk-upload"), body, ctype)
			if err == nil && resp == nil {
				return p.statusError(op, sandboxID, rep)
			}
			if err == nil {
				err = resp.Body.Close()
			}
			return err
		},
		Download: func(ctx context.Context, path string, w io.Writer) (int64, error) {
			rq := call(http.MethodGet, "files", "download")
			rq.Query = url.Values{"path": {path}}
			resp, r, err := provhttp.Open(ctx, p.cfg.HTTPClient, rq, nil, "")
			switch {
			case err != nil:
				return 0, err
			case resp == nil && r.Status == http.StatusNotFound: // the file, not the sandbox
				return 0, fmt.Errorf("%s: the archive file %s is missing", provhttp.Describe(op, sandboxID), path)
			case resp == nil:
				return 0, p.statusError(op, sandboxID, r)
			}
			return provhttp.Download(w, resp, op, sandboxID)
		},
		Log: p.cfg.Logger,
	}, actx, cancel, nil
}
