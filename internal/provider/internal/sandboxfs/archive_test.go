package sandboxfs

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
)

// workspace is the tree both sides of TestArchiveLinesInAShellAndInMem
// hold: relative path → content.
var workspace = map[string]string{
	"package.json":              `{"name":"app"}`,
	"src/app.js":                "console.log('x')\n",
	"src/it's \"quoted\".txt":   "q",
	"node_modules/.cache/big":   "cache",
	"web/node_modules/.cache/x": "cache",
	"logs/app.log":              "log",
	"bin\x01ary":                "\x00\xff",
}

var excludes = []string{"node_modules/.cache", "*.log"}

// TestArchiveLinesInAShellAndInMem runs the export, import and remove lines
// in a real sh with GNU tar and on a Mem holding the same files: both
// export the same members, both import what the other exported, and both
// remove the transfer's files.
func TestArchiveLinesInAShellAndInMem(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "it's app")
	var m Mem
	for rel, body := range workspace {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		m.Apply(Op{Path: p, Data: []byte(body)})
	}

	line, err := ExportCommand(dir, excludes, "")
	if err != nil {
		t.Fatal(err)
	}
	shTar := mustSh(t, line)
	memTar, code, handled := m.Run(line)
	if !handled || code != 0 {
		t.Fatalf("Mem export: exit %d, handled %v", code, handled)
	}
	want := tarFiles(t, shTar)
	if got := tarFiles(t, memTar); !maps.Equal(got, want) {
		t.Errorf("Mem exported %v, GNU tar %v", got, want)
	}
	if slices.Contains(tarNames(t, shTar), "./node_modules/") == false || slices.Contains(tarNames(t, memTar), "./logs/") == false {
		t.Errorf("the folders above excluded members are missing: sh %v, Mem %v", tarNames(t, shTar), tarNames(t, memTar))
	}

	out := filepath.Join(root, "export.tar")
	fileLine, err := ExportCommand(dir, excludes, out)
	if err != nil {
		t.Fatal(err)
	}
	mustSh(t, fileLine)
	if b, err := os.ReadFile(out); err != nil || !maps.Equal(tarFiles(t, b), want) {
		t.Errorf("sh export to a file: %v", err)
	}
	if _, code, _ := m.Run(fileLine); code != 0 {
		t.Fatalf("Mem export to a file: exit %d", code)
	}
	if b, ok := m.Apply(Op{Read: true, Path: out}); !ok || !maps.Equal(tarFiles(t, b), want) {
		t.Error("Mem export to a file: not the archive")
	}

	// Each side imports the other's archive, in two parts, into a folder
	// that does not exist yet.
	dst := filepath.Join(root, "restored", "app")
	parts := filepath.Join(root, "parts")
	imp, err := ImportCommand(dst, parts)
	if err != nil {
		t.Fatal(err)
	}
	writeParts(t, memTar, parts, func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	mustSh(t, imp)
	for rel, body := range want {
		if b, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(b) != body {
			t.Errorf("sh import: %s = %q, %v; want %q", rel, b, err, body)
		}
	}
	if _, err := os.Stat(parts); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sh import left its parts: %v", err)
	}
	writeParts(t, shTar, parts, func(p string, b []byte) { m.Apply(Op{Path: p, Data: b}) })
	if _, code, _ := m.Run(imp); code != 0 {
		t.Fatalf("Mem import: exit %d", code)
	}
	for rel, body := range want {
		if b, ok := m.Apply(Op{Read: true, Path: filepath.Join(dst, rel)}); !ok || string(b) != body {
			t.Errorf("Mem import: %s = %q, %v; want %q", rel, b, ok, body)
		}
	}
	if got := m.Paths(parts); len(got) != 0 {
		t.Errorf("Mem import left its parts: %v", got)
	}

	rm, err := RemoveCommand(out)
	if err != nil {
		t.Fatal(err)
	}
	mustSh(t, rm)
	mustSh(t, rm) // absent: still exit 0
	m.Run(rm)
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Error("sh remove left the file")
	}
	if _, ok := m.Apply(Op{Read: true, Path: out}); ok {
		t.Error("Mem remove left the file")
	}

	// A missing folder fails the export in both (GNU tar exits 2).
	missing, _ := ExportCommand(filepath.Join(root, "missing"), nil, "")
	if err := exec.Command("sh", "-c", missing).Run(); exitCode(err) != 2 {
		t.Errorf("sh export of a missing folder: %v, want exit 2", err)
	}
	if _, code, _ := m.Run(missing); code != 2 {
		t.Errorf("Mem export of a missing folder: exit %d, want 2", code)
	}
}

// TestMemImportRefuses: an import of an unsafe or damaged archive exits 2
// and writes nothing outside the folder, as GNU tar exits 2.
func TestMemImportRefuses(t *testing.T) {
	file := func(name, body string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), Linkname: body}
	}
	for name, hdrs := range map[string][]*tar.Header{
		"DotDot":          {file("../evil", "x")},
		"AbsoluteSymlink": {{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "/etc"}},
		"UnderAFile":      {file("keep.txt/x", "x")},
		"FolderOverFile":  {{Name: "keep.txt/", Typeflag: tar.TypeDir, Mode: 0o755}},
		"FileOverFolder":  {file("sub", "x")},
		"Empty":           {},
	} {
		t.Run(name, func(t *testing.T) {
			var m Mem
			m.Apply(Op{Path: "/w/app/keep.txt", Data: []byte("k")})
			m.Apply(Op{Path: "/w/app/sub/in.txt", Data: []byte("i")})
			var buf bytes.Buffer
			if len(hdrs) > 0 {
				buf.Write(tarOf(t, hdrs...))
			}
			m.Apply(Op{Path: PartName("/tmp/t", 0), Data: buf.Bytes()})
			imp, _ := ImportCommand("/w/app", "/tmp/t")
			if _, code, _ := m.Run(imp); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if got := m.Paths("/"); !slices.Equal(got, []string{"/w/app/keep.txt", "/w/app/sub/in.txt"}) {
				t.Errorf("files after the refused import: %v", got)
			}
		})
	}
	if err := new(Mem).Untar(bytes.NewReader(tarOf(t, file("../x", "x"))), "/w"); !errors.Is(err, archive.ErrUnsafe) {
		t.Errorf("Untar = %v, want ErrUnsafe", err)
	}
}

func TestParseArchive(t *testing.T) {
	exp, _ := ExportCommand("/home/user/it's app", []string{"a b", "it's*"}, "")
	expFile, _ := ExportCommand("/home/user/app", nil, "/tmp/x.tar")
	imp, _ := ImportCommand("/home/user/app", "/tmp/parts")
	rm, _ := RemoveCommand("/tmp/x.tar")
	for line, want := range map[string]ArchiveOp{
		exp:     {Kind: "export", Dir: "/home/user/it's app", Excludes: []string{"a b", "it's*"}},
		expFile: {Kind: "export", Dir: "/home/user/app", Path: "/tmp/x.tar"},
		imp:     {Kind: "import", Dir: "/home/user/app", Path: "/tmp/parts"},
		rm:      {Kind: "remove", Path: "/tmp/x.tar"},
	} {
		got, ok := ParseArchive(line)
		if !ok || got.Kind != want.Kind || got.Dir != want.Dir || got.Path != want.Path || !slices.Equal(got.Excludes, want.Excludes) {
			t.Errorf("ParseArchive(%q) = %+v, %v; want %+v", line, got, ok, want)
		}
	}
	w, _ := WriteCommand("/tmp/x", []byte("x"))
	for _, line := range []string{"", "tar -xf x", "npm run dev", w, exp + " ", strings.Replace(imp, "rm -rf", "rm -f", 1),
		strings.Replace(exp, "-cf", "-xf", 1), "rm -rf -- '/tmp/x'; reboot", "tar -C '/x' 'unclosed"} {
		if op, ok := ParseArchive(line); ok {
			t.Errorf("ParseArchive(%q) took it: %+v", line, op)
		}
	}
	for _, bad := range [][2]string{{"relative", ""}, {"/ok", "/it's"}} {
		if _, err := ExportCommand(bad[0], nil, bad[1]); err == nil {
			t.Errorf("ExportCommand(%q, %q) took it", bad[0], bad[1])
		}
	}
	if _, err := ExportCommand("/ok", []string{"/abs"}, ""); !errors.Is(err, archive.ErrBadPattern) {
		t.Errorf("ExportCommand with an absolute pattern: %v", err)
	}
	if _, err := ImportCommand("rel", "/tmp/p"); err == nil {
		t.Error("ImportCommand took a relative folder")
	}
	if a, b := Transfer(), Transfer(); a == b || !strings.HasPrefix(a, "/tmp/sandman-archive-") || checkPath(a) != nil {
		t.Errorf("Transfer() = %q, %q", a, b)
	}
}

// writeParts splits a tar stream into two parts of the folder parts.
func writeParts(t *testing.T, b []byte, parts string, write func(p string, b []byte)) {
	t.Helper()
	half := len(b) / 2
	write(PartName(parts, 0), b[:half])
	write(PartName(parts, 1), b[half:])
}

func mustSh(t *testing.T, line string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("sh", "-c", line)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v: %s", line, err, stderr.String())
	}
	return out
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// tarFiles returns the regular files of a tar stream: name → content.
func tarFiles(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		if hdr.Typeflag == tar.TypeReg {
			body, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(hdr.Name, "./")] = string(body)
		}
	}
}

func tarNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err != nil {
			return names
		}
		names = append(names, hdr.Name)
	}
}

// tarOf builds a tar stream of hdrs; a regular file's body is its Linkname.
func tarOf(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
