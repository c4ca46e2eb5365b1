package providertest

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The archive rows (docs/ARCHIVES.md): run for a Provider that implements
// lifecycle.WorkspaceArchiver and lifecycle.Files. A workspace exported
// from one running sandbox, with exclude patterns, and imported into a
// fresh one holds the files written before the export there, less the
// excluded ones and none written after it; the source keeps running and
// the two are independent; an archive with a member outside the folder is
// refused and writes nothing outside it.

func archiveRows() []Behaviour {
	return []Behaviour{
		{Name: "WorkspaceArchiveRoundTrip", Needs: "WorkspaceArchiver", Run: workspaceRoundTrip},
		{Name: "WorkspaceImportRefusesUnsafe", Needs: "WorkspaceArchiver", Run: workspaceImportRefuses},
	}
}

func archiver(e Env) lifecycle.WorkspaceArchiver { return e.Provider.(lifecycle.WorkspaceArchiver) }

func hasArchiver(e Env) bool {
	_, arch := e.Provider.(lifecycle.WorkspaceArchiver)
	_, files := e.Provider.(lifecycle.Files)
	return arch && files
}

func workspaceRoundTrip(t *testing.T, e Env) {
	kept := map[string]string{
		"package.json":        `{"name":"app"}`,
		"src/deep/app.js":     "console.log(1)\n",
		"a name, spaced.bin":  "\x00\x01\xff'\"$HOME`x`\n",
		"cache-not/kept.txt":  "a folder named like a pattern's part is kept",
		"logs/readme.txt":     "kept beside an excluded file",
		"node_modules/x/i.js": "module.exports = 1\n",
	}
	excluded := []string{"node_modules/.cache/junk", "web/node_modules/.cache/deep/junk", "logs/app.log"}
	src := mustCreate(t, e, 10*time.Minute, nil)
	for name, body := range kept {
		mustWrite(t, e, src.ID, name, body)
	}
	for _, name := range excluded {
		mustWrite(t, e, src.ID, name, "left out")
	}

	var buf bytes.Buffer
	n, err := archiver(e).ExportTar(ctx(t), src.ID, workDir, []string{"node_modules/.cache", "*.log"}, &buf)
	if err != nil {
		t.Fatalf("ExportTar: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("ExportTar returned %d bytes, wrote %d", n, buf.Len())
	}
	if got := mustGet(t, e, src.ID).State; got != lifecycle.SandboxRunning {
		t.Errorf("the source after an export is %q, want running", got)
	}
	mustWrite(t, e, src.ID, "after.txt", "written after the export")
	names := tarMembers(t, buf.Bytes())
	for name := range kept {
		if !names["./"+name] {
			t.Errorf("the archive lacks ./%s: %v", name, names)
		}
	}
	for name := range names {
		if strings.Contains(name, "node_modules/.cache") || strings.HasSuffix(name, ".log") {
			t.Errorf("the archive holds %s, which an exclude pattern leaves out", name)
		}
	}

	dst := mustCreate(t, e, 10*time.Minute, nil)
	if err := archiver(e).ImportTar(ctx(t), dst.ID, workDir, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("ImportTar: %v", err)
	}
	for name, body := range kept {
		wantFile(t, e, dst.ID, name, body)
	}
	for _, name := range append(excluded, "after.txt") {
		wantFile(t, e, dst.ID, name, "")
	}
	mustWrite(t, e, dst.ID, "only-in-dst.txt", "x")
	wantFile(t, e, src.ID, "only-in-dst.txt", "")

	if err := e.Provider.Kill(ctx(t), src.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := archiver(e).ExportTar(ctx(t), src.ID, workDir, nil, io.Discard); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("ExportTar of a killed sandbox: %v, want ErrSandboxGone", err)
	}
}

func workspaceImportRefuses(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustWrite(t, e, sb.ID, "keep.txt", "k")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"./ok.txt", "../evil.txt"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte("x"))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := archiver(e).ImportTar(ctx(t), sb.ID, workDir, &buf); err == nil {
		t.Error("ImportTar of a member outside the folder succeeded")
	}
	evil := workDir[:strings.LastIndex(workDir, "/")] + "/evil.txt"
	if got, err := files(e).ReadFile(ctx(t), sb.ID, evil); !errors.Is(err, lifecycle.ErrNoFile) {
		t.Errorf("ReadFile %s = %q, %v; want ErrNoFile", evil, got, err)
	}
	wantFile(t, e, sb.ID, "keep.txt", "k")
}

// tarMembers returns the member names of a tar stream.
func tarMembers(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("the export is not a tar stream: %v", err)
		}
		names[strings.TrimSuffix(hdr.Name, "/")] = true
	}
}
