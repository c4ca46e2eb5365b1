package sandboxfs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
)

// Steps are an adapter's own calls for one workspace archive transfer,
// which Import and ExportFile put in order (lifecycle.WorkspaceArchiver).
type Steps struct {
	// Name names the operation in errors: "import_tar sandbox sb1".
	Name string
	// Run runs a command line (for sh -c) in the sandbox to its end and
	// returns its exit code and output (only its start is kept in an
	// error); retried after a transient failure only when retry (a line
	// that may run twice). Errors: the provider's.
	Run func(ctx context.Context, line string, retry bool) (exit int, output string, err error)
	// Upload writes what r yields into the folder parts of the sandbox as
	// part files (PartName), in name order, streamed as r is read: one part
	// holds it all where the provider's file API takes a stream of unknown
	// size. Errors: r's, the provider's.
	Upload func(ctx context.Context, parts string, r io.Reader) error
	// Download writes the sandbox's file path to w as it arrives and
	// returns the bytes written. Errors: w's, the provider's.
	Download func(ctx context.Context, path string, w io.Writer) (int64, error)
	// Log receives a failure to remove a transfer's temporary files.
	Log *slog.Logger
}

// removeTimeout bounds the removal of a transfer's temporary files, which
// runs on a context of its own (the transfer's may have ended).
const removeTimeout = 30 * time.Second

// remove removes the file or folder path (RemoveCommand) through Run, once;
// a failure is logged.
func (s Steps) remove(ctx context.Context, path string) {
	line, err := RemoveCommand(path)
	if err == nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		_, _, err = s.Run(rctx, line, false)
	}
	if err != nil {
		s.Log.WarnContext(ctx, "could not remove an archive transfer's files", "op", s.Name, "path", path, "error", err)
	}
}

// Import unpacks the tar stream r into the folder dir of a sandbox, making
// it: Upload puts the stream into a fresh transfer folder (Transfer) while
// archive.Checked reads it as a tar, so an archive archive.UnpackTar would
// refuse, or one cut short, fails the upload before anything is unpacked;
// then ImportCommand unpacks the parts with GNU tar and removes them. After
// any failure the parts are removed. Nothing is retried here: a retried
// `tar -x` would find its parts removed. Errors: a bad dir,
// archive.ErrUnsafe and the stream's (wrapped), the steps', tar's exit
// code other than 0 (a plain error with its output).
func Import(ctx context.Context, dir string, r io.Reader, s Steps) (err error) {
	parts := Transfer()
	line, err := ImportCommand(dir, parts)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.remove(ctx, parts)
		}
	}()
	src := archive.Checked(r)
	defer src.Close()
	if err := s.Upload(ctx, parts, src); err != nil {
		return err
	}
	code, out, err := s.Run(ctx, line, false)
	if err == nil && code != 0 {
		err = s.exited(code, out)
	}
	return err
}

// ExportFile writes the tar of the folder dir of a sandbox, leaving out the
// exclude patterns, to w, through a file: where the provider's command API
// cannot stream a command's bytes, ExportCommand writes the tar to a fresh
// file (Transfer + ".tar"), Download copies it into w as it arrives, and
// the file is removed. GNU tar's exit 1 (a file changed while read) still
// made a whole archive. Errors: a bad folder or pattern
// (archive.ErrBadPattern), the steps', tar's exit code other than 0 or 1
// (a plain error with its output).
func ExportFile(ctx context.Context, dir string, excludes []string, w io.Writer, s Steps) (int64, error) {
	file := Transfer() + ".tar"
	line, err := ExportCommand(dir, excludes, file)
	if err != nil {
		return 0, err
	}
	defer s.remove(ctx, file)
	code, out, err := s.Run(ctx, line, true) // it only rewrites its file
	switch {
	case err != nil:
		return 0, err
	case !ExportOK(code):
		return 0, s.exited(code, out)
	}
	return s.Download(ctx, file, w)
}

// exited is the error of a tar that exited with code.
func (s Steps) exited(code int, output string) error {
	if len(output) > 512 {
		output = output[:512] + "…"
	}
	return fmt.Errorf("%s: tar exited %d: %s", s.Name, code, output)
}
