//go:build linux

package local

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestExportFreezesARunningSandbox: an export of a running sandbox stops
// its processes while the tar is written and continues them after; a
// paused one stays paused; both archives hold the folder.
func TestExportFreezesARunningSandbox(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute})
	if err := p.WriteFile(ctx, sb.ID, "/home/user/app/a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	froze := false
	var buf bytes.Buffer
	w := writerFunc(func(b []byte) (int, error) {
		if st, ok := ProcState(t, MustRecord(t, p, sb.ID).PID); ok && st == 'T' {
			froze = true
		}
		return buf.Write(b)
	})
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/app", nil, w); err != nil {
		t.Fatalf("ExportTar: %v", err)
	}
	if !froze {
		t.Error("the sandbox ran while its tar was written, want it stopped")
	}
	if got, _ := p.Get(ctx, sb.ID); got.State != lifecycle.SandboxRunning {
		t.Errorf("after the export the sandbox is %s, want running", got.State)
	}
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if _, err := p.ExportTar(ctx, sb.ID, "/", nil, &buf); err != nil {
		t.Fatalf("ExportTar of a paused sandbox: %v", err)
	}
	if got, _ := p.Get(ctx, sb.ID); got.State != lifecycle.SandboxPaused {
		t.Errorf("after the export the sandbox is %s, want still paused", got.State)
	}
	dst := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute})
	if err := p.ImportTar(ctx, dst.ID, "/", &buf); err != nil {
		t.Fatalf("ImportTar: %v", err)
	}
	if got, err := p.ReadFile(ctx, dst.ID, "/home/user/app/a.txt"); err != nil || string(got) != "a" {
		t.Errorf("restored a.txt = %q, %v", got, err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestCheckpointFilesStayInTheSandbox: paths go under the files folder,
// and a link out of it is neither read, written nor exported through.
func TestCheckpointFilesStayInTheSandbox(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute})
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := filepath.Join(p.Dir(), sb.ID, filesName)
	if err := os.Symlink(outside, filepath.Join(files, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadFile(ctx, sb.ID, "/out/secret"); err == nil {
		t.Error("ReadFile followed a link out of the sandbox")
	}
	if err := p.WriteFile(ctx, sb.ID, "/out/new", []byte("x")); err == nil {
		t.Error("WriteFile followed a link out of the sandbox")
	}
	if _, err := p.ExportTar(ctx, sb.ID, "/out", nil, &bytes.Buffer{}); err == nil {
		t.Error("ExportTar exported a folder out of the sandbox")
	}
	if err := p.WriteFile(ctx, sb.ID, "/../../x.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(files, "x.txt")); err != nil {
		t.Errorf("/../../x.txt is not the files folder's x.txt: %v", err)
	}
	if _, err := p.ReadFile(ctx, sb.ID, "/missing"); !errors.Is(err, lifecycle.ErrNoFile) {
		t.Errorf("ReadFile of a missing file = %v, want ErrNoFile", err)
	}
	unsafe := tarWith(t, "../escape.txt")
	if err := p.ImportTar(ctx, sb.ID, "/", bytes.NewReader(unsafe)); !errors.Is(err, archive.ErrUnsafe) {
		t.Errorf("ImportTar of an unsafe member = %v, want ErrUnsafe", err)
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadFile(ctx, sb.ID, "/x.txt"); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("ReadFile of a killed sandbox = %v, want gone", err)
	}
	if _, err := p.ExportTar(ctx, sb.ID, "/", nil, &bytes.Buffer{}); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("ExportTar of a killed sandbox = %v, want gone", err)
	}
}

// TestExportIsCapped: an export past MaxExportBytes fails, and the
// sandbox runs on.
func TestExportIsCapped(t *testing.T) {
	p := MustProvider(t, Config{MaxExportBytes: 4096})
	ctx := MustContext(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute})
	if err := p.WriteFile(ctx, sb.ID, "/big.bin", bytes.Repeat([]byte("x"), 10_000)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ExportTar(ctx, sb.ID, "/", nil, &bytes.Buffer{}); err == nil {
		t.Error("an export over the cap succeeded")
	}
	if got, _ := p.Get(ctx, sb.ID); got.State != lifecycle.SandboxRunning {
		t.Errorf("after a failed export the sandbox is %s, want running", got.State)
	}
}

func tarWith(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := newTarWriter(&buf)
	if err := tw.add(name, []byte("x")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarWriter struct{ w *tar.Writer }

func newTarWriter(w io.Writer) tarWriter { return tarWriter{tar.NewWriter(w)} }

func (t tarWriter) add(name string, data []byte) error {
	if err := t.w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := t.w.Write(data); err != nil {
		return err
	}
	return t.w.Close()
}
