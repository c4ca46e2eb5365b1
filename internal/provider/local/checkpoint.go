package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoints of the local provider (docs/providers/local.md
// "Checkpoints"): Sandman keeps them as archives (kind archive) of the
// sandbox's files folder, which is the sandbox's file system as its
// commands see it: the absolute path /home/user/app is
// <Dir>/<id>/files/home/user/app. Files reads and writes there (the
// identity marker, the conformance rows); WorkspaceArchiver streams a
// folder of it out as a tar (internal/archive's PackTar: regular files,
// folders and symbolic links, never followed; sockets, pipes and devices
// skipped) and unpacks one in (UnpackTar: nothing is written outside the
// folder). Processes are not kept: a restore or fork starts from the
// folder, and readiness starts the app.

var (
	_ lifecycle.Files             = (*Provider)(nil)
	_ lifecycle.WorkspaceArchiver = (*Provider)(nil)
)

// Operation names of the checkpoint calls.
const (
	opWriteFile = "write_file"
	opReadFile  = "read_file"
	opExport    = "export_tar"
	opImport    = "import_tar"
)

// DefaultMaxExportBytes is Config.MaxExportBytes's default: an export
// larger than 1 GiB fails rather than filling the disk.
const DefaultMaxExportBytes = 1 << 30

// filesPath returns the name under the files folder of the absolute
// sandbox path p ("." for "/"). Errors: a relative path (an error wrapping
// a CodeInvalid *Error).
func filesPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", lifecycle.Errorf(lifecycle.CodeInvalid, "path %q must be absolute", p)
	}
	rel := strings.TrimPrefix(path.Clean(p), "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}

// filesRoot opens the files folder of live sandbox id as an os.Root, so
// no name resolves outside it. Errors: gone.
func (p *Provider) filesRoot(op, id string) (*os.Root, error) {
	if _, _, err := p.load(op, id); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(filepath.Join(p.sandboxDir(id), filesName))
	if err != nil {
		return nil, p.gone(op, id, err)
	}
	return root, nil
}

// WriteFile writes data to the absolute path pth in the sandbox, making
// its folders. Errors: gone; a plain error for a path that leaves the
// sandbox (through a symbolic link) or cannot be written.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, pth string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return p.transient(opWriteFile, sandboxID, err)
	}
	rel, err := filesPath(pth)
	if err != nil {
		return fmt.Errorf("write %s in sandbox %s: %w", pth, sandboxID, err)
	}
	root, err := p.filesRoot(opWriteFile, sandboxID)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("write %s in sandbox %s: %w", pth, sandboxID, err)
	}
	if err := root.WriteFile(rel, data, 0o644); err != nil {
		return fmt.Errorf("write %s in sandbox %s: %w", pth, sandboxID, err)
	}
	return nil
}

// ReadFile reads the absolute path pth in the sandbox whole. Errors:
// lifecycle.ErrNoFile (wrapped) when it does not exist, gone.
func (p *Provider) ReadFile(ctx context.Context, sandboxID, pth string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, p.transient(opReadFile, sandboxID, err)
	}
	rel, err := filesPath(pth)
	if err != nil {
		return nil, fmt.Errorf("read %s in sandbox %s: %w", pth, sandboxID, err)
	}
	root, err := p.filesRoot(opReadFile, sandboxID)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s in sandbox %s: %w", pth, sandboxID, lifecycle.ErrNoFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s in sandbox %s: %w", pth, sandboxID, err)
	}
	return data, nil
}

// ExportTar writes a tar of the sandbox's folder dir (absolute, "/" for
// all its files), leaving out the excludes (internal/archive's patterns),
// to w, and returns the bytes written. It holds the sandbox's lock, and a
// running sandbox's processes are stopped (SIGSTOP) while the tar is
// written, then continued, so the copy is consistent; a paused one needs
// no signal. Errors: gone; transient when ctx is done or the processes do
// not stop; a plain error for a bad pattern, a folder that is missing or
// not a folder, a tar over Config.MaxExportBytes, or w's error.
func (p *Provider) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	ex, err := archive.ParseExcludes(excludes)
	if err != nil {
		return 0, fmt.Errorf("export sandbox %s: %w", sandboxID, err)
	}
	folder, err := p.workspaceFolder(sandboxID, dir)
	if err != nil {
		return 0, err
	}
	if err := p.exportFault(ctx, sandboxID); err != nil {
		return 0, err
	}
	unlock, err := p.lock(ctx, opExport, sandboxID)
	if err != nil {
		return 0, err
	}
	defer unlock()
	rec, state, err := p.load(opExport, sandboxID)
	if err != nil {
		return 0, err
	}
	if err := p.isFolder(sandboxID, dir); err != nil {
		return 0, err
	}
	if state == lifecycle.SandboxRunning {
		if err := p.freeze(ctx, rec); err != nil {
			return 0, err
		}
		defer p.thaw(rec)
	}
	lw := &limitedWriter{w: w, left: p.cfg.MaxExportBytes}
	stats, err := archive.PackTar(ctx, lw, folder, ex)
	switch {
	case lw.over:
		return stats.Written, fmt.Errorf("export sandbox %s: the archive is over %d bytes (Config.MaxExportBytes)", sandboxID, p.cfg.MaxExportBytes)
	case err != nil && ctx.Err() != nil:
		return stats.Written, p.transient(opExport, sandboxID, err)
	case err != nil:
		return stats.Written, fmt.Errorf("export sandbox %s: %w", sandboxID, err)
	}
	return stats.Written, nil
}

// ImportTar unpacks the tar stream r into the sandbox's folder dir
// (absolute), which it makes, under the sandbox's lock. Errors: gone;
// transient when ctx is done; a plain error for an unsafe member
// (archive.ErrUnsafe) or a damaged stream.
func (p *Provider) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error {
	folder, err := p.workspaceFolder(sandboxID, dir)
	if err != nil {
		return err
	}
	if err := p.importFault(ctx, sandboxID); err != nil {
		return err
	}
	unlock, err := p.lock(ctx, opImport, sandboxID)
	if err != nil {
		return err
	}
	defer unlock()
	if _, _, err := p.load(opImport, sandboxID); err != nil {
		return err
	}
	root, err := os.OpenRoot(filepath.Join(p.sandboxDir(sandboxID), filesName))
	if err != nil {
		return p.gone(opImport, sandboxID, err)
	}
	defer root.Close()
	// Through the root: a folder on the way that is a link leaving the
	// sandbox is refused, not followed.
	if rel, _ := filesPath(dir); rel != "." {
		if err := root.MkdirAll(rel, 0o755); err != nil {
			return fmt.Errorf("import into sandbox %s: %w", sandboxID, err)
		}
	}
	if _, err := archive.UnpackTar(ctx, r, folder); err != nil {
		if ctx.Err() != nil {
			return p.transient(opImport, sandboxID, err)
		}
		return fmt.Errorf("import into sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// workspaceFolder returns the host folder of the sandbox's absolute path
// dir. Errors: a relative dir (wrapping a CodeInvalid *Error), gone.
func (p *Provider) workspaceFolder(sandboxID, dir string) (string, error) {
	rel, err := filesPath(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox %s: %w", sandboxID, err)
	}
	if !validID(sandboxID) {
		return "", p.gone(opExport, sandboxID, errors.New("not a local sandbox id"))
	}
	return filepath.Join(p.sandboxDir(sandboxID), filesName, filepath.FromSlash(rel)), nil
}

// isFolder checks that the sandbox's absolute path dir is a folder of the
// sandbox, resolved through its files folder's os.Root: a link on the way
// that leaves the sandbox is an error, as is a last component that is a
// link. Errors: gone, a plain error naming dir.
func (p *Provider) isFolder(sandboxID, dir string) error {
	rel, err := filesPath(dir)
	if err != nil {
		return err
	}
	root, err := p.filesRoot(opExport, sandboxID)
	if err != nil {
		return err
	}
	defer root.Close()
	if info, err := root.Lstat(rel); err != nil || !info.IsDir() {
		return fmt.Errorf("export sandbox %s: %s is not a folder of the sandbox", sandboxID, dir)
	}
	return nil
}

// freeze stops a running sandbox's process group and its commands and
// waits until it is stopped. Errors: gone, transient.
func (p *Provider) freeze(ctx context.Context, rec record) error {
	p.signalCommands(rec, sigStop)
	if err := signalGroup(rec.PGID, sigStop); err != nil {
		p.thaw(rec)
		return p.classify(opExport, rec.ID, err)
	}
	if err := p.await(ctx, opExport, rec, procStat.stopped); err != nil {
		p.thaw(rec)
		return err
	}
	return nil
}

// thaw continues what freeze stopped.
func (p *Provider) thaw(rec record) {
	if err := signalGroup(rec.PGID, sigCont); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Warn("continue a sandbox after its export", "sandbox_id", rec.ID, "err", err)
	}
	p.signalCommands(rec, sigCont)
}

// limitedWriter passes at most left bytes to w, then fails.
type limitedWriter struct {
	w    io.Writer
	left int64
	over bool
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > l.left {
		l.over = true
		return 0, errors.New("the archive is over its size limit")
	}
	n, err := l.w.Write(b)
	l.left -= int64(n)
	return n, err
}
