package sandboxfs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
)

// memSteps are Steps over a Mem, recording the lines run and whether each
// was retryable; failUpload fails the upload after it wrote.
func memSteps(m *Mem, lines *[]string, failUpload error) Steps {
	return Steps{
		Name: "op sandbox sb1",
		Log:  slog.New(slog.DiscardHandler),
		Run: func(_ context.Context, line string, retry bool) (int, string, error) {
			*lines = append(*lines, map[bool]string{true: "retry ", false: ""}[retry]+strings.Fields(line)[0])
			out, code, ok := m.Run(line)
			if !ok {
				return 0, "", errors.New("not a sandboxfs line")
			}
			return code, string(out), nil
		},
		Upload: func(_ context.Context, parts string, r io.Reader) error {
			b, err := io.ReadAll(r)
			m.Apply(Op{Path: PartName(parts, 0), Data: b})
			if err == nil {
				err = failUpload
			}
			return err
		},
		Download: func(_ context.Context, path string, w io.Writer) (int64, error) {
			b, ok := m.Apply(Op{Read: true, Path: path})
			if !ok {
				return 0, errors.New("no such file")
			}
			n, err := w.Write(b)
			return int64(n), err
		},
	}
}

// TestImportAndExportFile runs both transfers over a Mem: the lines in
// order, the export's run retryable and the import's not, the temporary
// files removed after a success and after every failure.
func TestImportAndExportFile(t *testing.T) {
	ctx := t.Context()
	var m Mem
	m.Apply(Op{Path: "/w/app/a.txt", Data: []byte("a")})
	m.Apply(Op{Path: "/w/app/cache/x", Data: []byte("x")})
	var lines []string
	steps := memSteps(&m, &lines, nil)

	var out bytes.Buffer
	n, err := ExportFile(ctx, "/w/app", []string{"cache"}, &out, steps)
	if err != nil || n != int64(out.Len()) {
		t.Fatalf("ExportFile = %d, %v (%d written)", n, err, out.Len())
	}
	if got := strings.Join(lines, ","); got != "retry umask,rm" {
		t.Errorf("export ran %s, want the retryable tar, then rm", got)
	}
	lines = nil
	if err := Import(ctx, "/w/copy", bytes.NewReader(out.Bytes()), steps); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, ","); got != "mkdir" {
		t.Errorf("import ran %s, want the unretried tar line only", got)
	}
	if got := m.Paths("/w/copy"); len(got) != 1 || got[0] != "/w/copy/a.txt" {
		t.Errorf("imported %v, want /w/copy/a.txt only", got)
	}

	var evil bytes.Buffer
	tw := tar.NewWriter(&evil)
	_ = tw.WriteHeader(&tar.Header{Name: "../x", Typeflag: tar.TypeReg, Mode: 0o644})
	_ = tw.Close()
	boom := errors.New("507 the disk is full")
	for name, c := range map[string]struct {
		r    io.Reader
		fail error
		want string
	}{
		"Unsafe":        {bytes.NewReader(evil.Bytes()), nil, archive.ErrUnsafe.Error()},
		"UploadRefused": {bytes.NewReader(out.Bytes()), boom, boom.Error()},
		"TarFails":      {bytes.NewReader(out.Bytes()), nil, "tar exited 2"},
	} {
		t.Run(name, func(t *testing.T) {
			var m Mem
			if name == "TarFails" { // a file where the folder goes: GNU tar exits 2
				m.Apply(Op{Path: "/w/copy", Data: []byte("f")})
			}
			var lines []string
			err := Import(ctx, "/w/copy", c.r, memSteps(&m, &lines, c.fail))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Import = %v, want %q", err, c.want)
			}
			if got := m.Paths("/tmp"); len(got) != 0 {
				t.Errorf("left %v after the failure", got)
			}
		})
	}
	lines = nil
	if _, err := ExportFile(ctx, "/w/none", nil, io.Discard, steps); err == nil || !strings.Contains(err.Error(), "tar exited 2") {
		t.Errorf("ExportFile of a missing folder = %v, want tar's exit 2", err)
	}
	if got := strings.Join(lines, ","); got != "retry umask,rm" || len(m.Paths("/tmp")) != 0 {
		t.Errorf("a failed export ran %s and left %v", got, m.Paths("/tmp"))
	}
}
