package vercel_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// The workspace archive facts of docs/providers/vercel.md "Files"; the
// conformance rows hold the round trip.

// A stream larger than one part goes up as several parts in one fs/write
// and comes back whole; no transfer file is left in /tmp.
func TestArchiveOfSeveralParts(t *testing.T) {
	defer vercel.SetPartSize(64 << 10)()
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_arch", nil)
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), (200<<10)/16) // 200 KiB: four parts
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	_ = tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "./big.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(big))})
	_, _ = tw.Write(big)
	_ = tw.Close()
	if err := p.ImportTar(ctx, sb.ID, "/home/user/app", &in); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/app", nil, &out); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no ./big.bin in the export: %v", err)
		}
		if hdr.Name == "./big.bin" {
			if got, _ := io.ReadAll(tr); !bytes.Equal(got, big) {
				t.Errorf("./big.bin came back as %d bytes, want the %d sent", len(got), len(big))
			}
			break
		}
	}
	if left := f.Paths(mustSandbox(t, f, sb.ID).CurrentSessionID, "/tmp"); len(left) != 0 {
		t.Errorf("files left in /tmp: %v", left)
	}
	if n := f.Requests(verceltest.OpFileWrite); n != 1 {
		t.Errorf("%d fs/write requests, want every part in one", n)
	}
}

// tar's exit 2 fails an export; an unsafe archive fails the upload; a
// stopped session is a conflict.
func TestArchiveFailures(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_arch", nil)
	ctx := context.Background()
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/none", nil, io.Discard); err == nil || !strings.Contains(err.Error(), "tar exited 2") {
		t.Errorf("ExportTar of a missing folder: %v, want tar's exit 2", err)
	}
	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "/etc/passwd", Typeflag: tar.TypeReg, Mode: 0o644})
	_ = tw.Close()
	if err := p.ImportTar(ctx, sb.ID, "/home/user/app", &evil); !errors.Is(err, archive.ErrUnsafe) {
		t.Errorf("ImportTar of an unsafe archive: %v, want ErrUnsafe", err)
	}
	if left := f.Paths(mustSandbox(t, f, sb.ID).CurrentSessionID, "/"); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ExportTar(ctx, sb.ID, "/home/user/app", nil, io.Discard); !errors.Is(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("ExportTar of a stopped sandbox: %v, want conflict", err)
	}
}
