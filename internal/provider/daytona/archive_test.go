package daytona_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
)

// The workspace archive facts of docs/providers/daytona.md "Checkpoints";
// the conformance rows hold the round trip.

// An export goes through a file in /tmp that is downloaded and then
// removed; tar's exit 2 fails it.
func TestExportGoesThroughAFileThatIsRemoved(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	ctx := context.Background()
	if err := e.p.WriteFile(ctx, sb.ID, "/home/user/app/a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := e.p.ExportTar(ctx, sb.ID, "/home/user/app", nil, &buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("ExportTar = %d, %v (%d bytes written)", n, err, buf.Len())
	}
	if err := archive.CheckTar(&buf); err != nil {
		t.Errorf("the export is not a whole archive: %v", err)
	}
	if left := e.srv.Paths(sb.ID, "/tmp"); len(left) != 0 {
		t.Errorf("files left in /tmp: %v", left)
	}
	if _, err := e.p.ExportTar(ctx, sb.ID, "/home/user/none", nil, &buf); err == nil || !strings.Contains(err.Error(), "tar exited 2") {
		t.Errorf("ExportTar of a missing folder: %v, want tar's exit 2", err)
	}
	if left := e.srv.Paths(sb.ID, "/tmp"); len(left) != 0 {
		t.Errorf("files left in /tmp after a failure: %v", left)
	}
}

// An unsafe archive fails the upload before anything is unpacked; a
// failed upload is transient and leaves nothing behind.
func TestImportChecksTheStreamAndCleansUp(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	ctx := context.Background()
	tarOf := func(hdrs ...*tar.Header) *bytes.Buffer {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range hdrs {
			_ = tw.WriteHeader(h)
		}
		_ = tw.Close()
		return &buf
	}
	evil := tarOf(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "dev/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3})
	if err := e.p.ImportTar(ctx, sb.ID, "/home/user/app", evil); !errors.Is(err, archive.ErrUnsafe) {
		t.Errorf("ImportTar of an unsafe archive: %v, want ErrUnsafe", err)
	}
	e.srv.Fail(daytonatest.OpToolbox, daytonatest.Fault{Status: 503})
	err := e.p.ImportTar(ctx, sb.ID, "/home/user/app", tarOf(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}))
	if !isKind(err, lifecycle.ErrProviderTransient) {
		t.Errorf("ImportTar with a refused upload: %v, want transient", err)
	}
	if left := e.srv.Paths(sb.ID, "/"); len(left) != 0 {
		t.Errorf("files left in the sandbox: %v", left)
	}
	if err := e.p.ImportTar(ctx, "nope", "/home/user/app", tarOf()); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Errorf("ImportTar into an unknown sandbox: %v, want gone", err)
	}
}
