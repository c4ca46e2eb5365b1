package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestCheckedPassesAWholeArchive reads a packed workspace through Checked
// in small reads: the bytes come out as they went in, then io.EOF.
func TestCheckedPassesAWholeArchive(t *testing.T) {
	dir := t.TempDir()
	mustTree(t, dir)
	var packed bytes.Buffer
	if _, err := PackTar(t.Context(), &packed, dir, Excludes{}); err != nil {
		t.Fatal(err)
	}
	c := Checked(iotest.HalfReader(bytes.NewReader(packed.Bytes())))
	defer c.Close()
	got, err := io.ReadAll(c)
	if err != nil || !bytes.Equal(got, packed.Bytes()) {
		t.Fatalf("read %d bytes, %v; want the %d packed, nil", len(got), err, packed.Len())
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("a read past the end = %d, %v; want 0, EOF", n, err)
	}
}

// TestCheckedRefuses: every archive UnpackTar refuses fails its read with
// ErrUnsafe, and so does Checker; a truncated, an empty and a damaged
// stream fail, and a failing source's error comes through.
func TestCheckedRefuses(t *testing.T) {
	for name, hdrs := range unsafeArchives() {
		t.Run(name, func(t *testing.T) {
			_, err := io.ReadAll(Checked(bytes.NewReader(tarOf(t, hdrs...))))
			if !errors.Is(err, ErrUnsafe) {
				t.Errorf("Checked = %v, want ErrUnsafe", err)
			}
			if err := CheckTar(bytes.NewReader(tarOf(t, hdrs...))); !errors.Is(err, ErrUnsafe) {
				t.Errorf("CheckTar = %v, want ErrUnsafe", err)
			}
		})
	}
	whole := tarOf(t, &tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "./a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "hello"})
	boom := errors.New("boom")
	for name, src := range map[string]io.Reader{
		"Truncated": bytes.NewReader(whole[:700]),
		"Empty":     bytes.NewReader(nil),
		"Damaged":   bytes.NewReader(bytes.Repeat([]byte("x"), 2048)),
		"Failing":   io.MultiReader(bytes.NewReader(whole[:600]), iotest.ErrReader(boom)),
	} {
		t.Run(name, func(t *testing.T) {
			c := Checked(src)
			defer c.Close()
			if _, err := io.ReadAll(c); err == nil || (name == "Failing" && !errors.Is(err, boom)) {
				t.Errorf("Checked = %v, want a failure", err)
			}
		})
	}
}

// TestCheckedClosedEarly: closing before the end ends the checking, and a
// later read fails.
func TestCheckedClosedEarly(t *testing.T) {
	whole := tarOf(t, &tar.Header{Name: "./a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Linkname: "hello"})
	c := Checked(bytes.NewReader(whole))
	if _, err := c.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := io.ReadAll(c); err == nil {
		t.Error("a read after Close succeeded")
	}
}
