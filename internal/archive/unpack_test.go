package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// unsafeArchives are archives that try to write outside the folder, by
// name: UnpackTar and Checker refuse each with ErrUnsafe.
func unsafeArchives() map[string][]*tar.Header {
	dir := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
	file := func(name, body string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Linkname: body}
	}
	symlink := func(name, target string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
	}
	return map[string][]*tar.Header{
		"AbsoluteName":         {file("/tmp/evil", "x")},
		"DotDotName":           {file("../evil", "x")},
		"DotDotInside":         {file("./a/../../evil", "x")},
		"AbsoluteSymlink":      {symlink("etc", "/etc")},
		"SymlinkClimbsOut":     {symlink("sub/up", "../../evil")},
		"FileThroughSymlink":   {symlink("in", "."), file("in/x", "x")},
		"FolderThroughSymlink": {dir("real/"), symlink("l", "real"), dir("l/deeper/")},
		"HardLinkOutside":      {{Name: "h", Typeflag: tar.TypeLink, Linkname: "../sibling/keep"}},
		"HardLinkToNothing":    {{Name: "h", Typeflag: tar.TypeLink, Linkname: "missing"}},
		"HardLinkToSymlink":    {symlink("s", "x"), {Name: "h", Typeflag: tar.TypeLink, Linkname: "s"}},
		"CharDevice":           {{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}},
		"BlockDevice":          {{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8}},
		"FolderOverFile":       {file("f", "x"), dir("f/")},
		"FileOverFolder":       {dir("d/"), file("d", "x")},
		"SymlinkOverFolder":    {dir("d/"), symlink("d", "x")},
		"FileAsTheFolder":      {file(".", "x")},
	}
}

// TestUnpackRefusesUnsafe unpacks archives that try to write outside the
// folder, each into a folder with a sibling, and checks each is refused
// with ErrUnsafe and nothing appears beside the folder.
func TestUnpackRefusesUnsafe(t *testing.T) {
	for name, hdrs := range unsafeArchives() {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			sibling := filepath.Join(parent, "sibling")
			if err := os.MkdirAll(sibling, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sibling, "keep"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, parent)
			_, err := UnpackTar(t.Context(), bytes.NewReader(tarOf(t, hdrs...)), filepath.Join(parent, "dst"))
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("UnpackTar = %v, want ErrUnsafe", err)
			}
			sameTree(t, without(snapshot(t, parent), "dst"), without(before, "dst"))
			if _, err := os.Lstat("/tmp/evil"); err == nil {
				t.Error("/tmp/evil was written")
			}
		})
	}
}

func TestUnpackSkipsNamedPipes(t *testing.T) {
	dst := t.TempDir()
	st, err := UnpackTar(t.Context(), bytes.NewReader(tarOf(t, &tar.Header{Name: "./pipe", Typeflag: tar.TypeFifo})), dst)
	if err != nil || st.Skipped != 1 {
		t.Fatalf("UnpackTar = %+v, %v; want one skipped", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "pipe")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pipe was created (%v)", err)
	}
}

// TestUnpackOverExisting unpacks over a folder that already holds files: a
// file and a link are replaced, a folder is kept, a file not in the
// archive stays, and the modes and times come from the archive.
func TestUnpackOverExisting(t *testing.T) {
	dst := t.TempDir()
	for name, body := range map[string]string{"a.txt": "old", "keep.txt": "keep"} {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(dst, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dst, "d"), 0o777); err != nil {
		t.Fatal(err)
	}
	stream := tarOf(t,
		&tar.Header{Name: "./a.txt", Typeflag: tar.TypeReg, Linkname: "new", Mode: 0o640, ModTime: mtime},
		&tar.Header{Name: "./l", Typeflag: tar.TypeSymlink, Linkname: "d"},
		&tar.Header{Name: "./d/", Typeflag: tar.TypeDir, Mode: 0o750, ModTime: mtime},
		&tar.Header{Name: "./d/x", Typeflag: tar.TypeReg, Linkname: "x", Mode: 0o4755, ModTime: mtime},
	)
	if _, err := UnpackTar(t.Context(), bytes.NewReader(stream), dst); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dst)
	for name, want := range map[string]entry{
		"a.txt":    {mode: 0o640, mtime: mtime.Unix(), body: "new"},
		"l":        {mode: os.ModeSymlink | 0o777, link: "d"},
		"d":        {mode: os.ModeDir | 0o750, mtime: mtime.Unix()},
		"d/x":      {mode: 0o755, mtime: mtime.Unix(), body: "x"}, // setuid dropped
		"keep.txt": {mode: got["keep.txt"].mode, mtime: got["keep.txt"].mtime, body: "keep"},
	} {
		if got[name] != want {
			t.Errorf("%s = %+v, want %+v", name, got[name], want)
		}
	}
}

func TestUnpackCorruptStream(t *testing.T) {
	var zst bytes.Buffer
	if _, err := Compress(&zst, bytes.NewReader(tarOf(t, &tar.Header{Name: "./f", Typeflag: tar.TypeReg, Linkname: "body"}))); err != nil {
		t.Fatal(err)
	}
	whole := zst.Bytes()
	for name, stream := range map[string][]byte{
		"Truncated": whole[:len(whole)-6],
		"NotZstd":   []byte("this is not a zstd stream at all"),
		"Flipped":   append(append([]byte(nil), whole[:len(whole)/2]...), append([]byte{whole[len(whole)/2] ^ 0xff}, whole[len(whole)/2+1:]...)...),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Unpack(t.Context(), bytes.NewReader(stream), t.TempDir()); err == nil {
				t.Error("Unpack of a damaged stream succeeded")
			}
		})
	}
}
