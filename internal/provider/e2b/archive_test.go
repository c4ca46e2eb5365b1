package e2b_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// The workspace archive facts of docs/providers/e2b.md "Checkpoints"; the
// conformance rows hold the round trip.

// writes counts the Write calls it gets.
type writes struct {
	bytes.Buffer
	calls int
}

func (w *writes) Write(p []byte) (int, error) { w.calls++; return w.Buffer.Write(p) }

// An export streams: a workspace larger than envd's 32 KiB chunks reaches
// the writer in several writes, never as one whole archive.
func TestExportStreamsStdoutChunks(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb := mustRunning(t, srv, p)
	for i := range 4 {
		if err := p.WriteFile(ctx, sb.ID, "/home/user/app/f"+string(rune('a'+i)), bytes.Repeat([]byte{byte(i)}, 30<<10)); err != nil {
			t.Fatal(err)
		}
	}
	var w writes
	n, err := p.ExportTar(ctx, sb.ID, "/home/user/app", nil, &w)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(w.Len()) || w.calls < 4 {
		t.Errorf("ExportTar = %d bytes in %d writes (%d received), want them in several writes", n, w.calls, w.Len())
	}
	if err := archive.CheckTar(bytes.NewReader(w.Bytes())); err != nil {
		t.Errorf("the export is not a whole archive: %v", err)
	}
}

// GNU tar's exit 2 (here: no such folder) fails the export with its code.
func TestExportOfAMissingFolderFails(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb := mustRunning(t, srv, p)
	var exit *e2b.ExitError
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/none", nil, &bytes.Buffer{}); !errors.As(err, &exit) || exit.Code != 2 {
		t.Errorf("ExportTar of a missing folder: %v, want exit code 2", err)
	}
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/app", []string{"/abs"}, &bytes.Buffer{}); !errors.Is(err, archive.ErrBadPattern) {
		t.Errorf("ExportTar with an absolute pattern: %v, want ErrBadPattern", err)
	}
}

// An unsafe archive fails the upload, before anything is unpacked, and a
// refused upload leaves no transfer file behind.
func TestImportChecksTheStreamAndCleansUp(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv, noRetries)
	sb := mustRunning(t, srv, p)
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "./ok.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.WriteHeader(&tar.Header{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/etc"})
	_ = tw.Close()
	if err := p.ImportTar(ctx, sb.ID, "/home/user/app", &evil); !errors.Is(err, archive.ErrUnsafe) {
		t.Errorf("ImportTar of an unsafe archive: %v, want ErrUnsafe", err)
	}
	var whole bytes.Buffer
	tw = tar.NewWriter(&whole)
	_ = tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.Close()
	srv.Fail(e2btest.OpFiles, e2btest.Fault{Status: 507, Message: "not enough disk space available"})
	if err := p.ImportTar(ctx, sb.ID, "/home/user/app", &whole); err == nil || !strings.Contains(err.Error(), "disk space") {
		t.Errorf("ImportTar with a refused upload: %v, want the refusal", err)
	}
	if got, _ := srv.Sandbox(sb.ID); got.Files != nil && len(got.Files.Paths("/")) != 0 {
		t.Errorf("files left in the sandbox: %v", got.Files.Paths("/"))
	}
}
