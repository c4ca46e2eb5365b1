package archive

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var excluded = []string{"node_modules/.cache", ".git/objects/pack/tmp_pack_1"}

func TestPackUnpackRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "restored")
	mustTree(t, src)
	var buf bytes.Buffer
	st, err := Pack(t.Context(), &buf, src, MustExcludes(DefaultExcludes()...))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st, (PackStats{Files: 10, Dirs: 10, Symlinks: 3, Bytes: st.Bytes, Excluded: 2, Written: int64(buf.Len())}); got != want {
		t.Errorf("pack stats = %+v, want %+v", got, want)
	}
	ust, err := Unpack(t.Context(), &buf, dst)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ust, (UnpackStats{Files: 10, Dirs: 10, Symlinks: 3, Bytes: st.Bytes}); got != want {
		t.Errorf("unpack stats = %+v, want %+v", got, want)
	}
	sameTree(t, snapshot(t, dst), without(snapshot(t, src), excluded...))
}

// TestTarCommandMatchesPackTar runs the command a sandbox runs (GNU tar
// through sh -c) on a folder whose name needs quoting, and checks that it
// archives the same members as PackTar and that its stream, compressed by
// Compress, unpacks to the same tree (GNU tar stores the hard link as a
// link).
func TestTarCommandMatchesPackTar(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Fatal("GNU tar is needed on PATH (Debian: apt-get install tar)")
	}
	src := filepath.Join(t.TempDir(), `it's a "$(workspace)"`)
	mustTree(t, src)
	ex := MustExcludes(append(DefaultExcludes(), "./secret.env", "it's*")...)
	cmdline, err := TarCommand(src, ex)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), "sh", "-c", cmdline)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, stderr.String())
	}
	var goTar bytes.Buffer
	if _, err := PackTar(t.Context(), &goTar, src, ex); err != nil {
		t.Fatal(err)
	}
	gnu, ours := members(t, stdout.Bytes()), members(t, goTar.Bytes())
	if !slices.Equal(gnu, ours) {
		t.Errorf("GNU tar members:\n%s\nPackTar members:\n%s", strings.Join(gnu, "\n"), strings.Join(ours, "\n"))
	}
	if slices.Contains(ours, "./secret.env") || !slices.Contains(ours, "./src/") {
		t.Errorf("members %q: want ./src/ and not ./secret.env", ours)
	}

	var zst bytes.Buffer
	if n, err := Compress(&zst, &stdout); err != nil || n == 0 {
		t.Fatalf("compress = %d, %v", n, err)
	}
	dst := t.TempDir()
	st, err := Unpack(t.Context(), &zst, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Links != 1 {
		t.Errorf("unpacked %d hard links, want 1", st.Links)
	}
	want := without(snapshot(t, src), append(excluded, "secret.env", `src/it's a "name" with spaces.txt`)...)
	sameTree(t, snapshot(t, dst), want)
}

func TestTarCommandQuoting(t *testing.T) {
	got, err := TarCommand("/home/user/app", MustExcludes("node_modules/.cache", "it's"))
	want := `tar -C '/home/user/app' --wildcards --no-anchored --no-wildcards-match-slash '--exclude=node_modules/.cache' '--exclude=it'\''s' -cf - .`
	if err != nil || got != want {
		t.Errorf("TarCommand =\n%s, %v\nwant\n%s", got, err, want)
	}
	if _, err := TarCommand("relative/app", Excludes{}); err == nil {
		t.Error("TarCommand of a relative folder: want an error")
	}
}

func TestPackTarStopsWhenContextEnds(t *testing.T) {
	src := t.TempDir()
	mustTree(t, src)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := PackTar(ctx, &bytes.Buffer{}, src, Excludes{}); !errors.Is(err, context.Canceled) {
		t.Errorf("PackTar with an ended context = %v, want context.Canceled", err)
	}
}

func TestPackTarSkipsSpecialFiles(t *testing.T) {
	src := t.TempDir()
	if err := exec.Command("mkfifo", filepath.Join(src, "pipe")).Run(); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	var buf bytes.Buffer
	st, err := PackTar(t.Context(), &buf, src, Excludes{})
	if err != nil || st.Skipped != 1 {
		t.Errorf("PackTar = %+v, %v; want one skipped", st, err)
	}
	if got := members(t, buf.Bytes()); !slices.Equal(got, []string{"./"}) {
		t.Errorf("members = %q, want only ./", got)
	}
}

// TestPackFileChangedSize checks the size a file had when listed is the
// size stored: a file that shrank is padded with zeros, one that grew is
// cut, and both are reported, whatever the listed size is against the
// read buffer's (8 bytes here: a read that ends on its edge, one past it,
// several reads).
func TestPackFileChangedSize(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "abcd", "abcdefgh", "abcdefghijklmnopqrst"} {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, listed := range []int64{0, 2, 4, 6, 7, 8, 9, 16, 19, 20, 21, 24} {
			want := []byte(content)[:min(listed, int64(len(content)))]
			want = append(want, make([]byte, listed-int64(len(want)))...)
			var buf bytes.Buffer
			tw := newTarWriterForTest(&buf)
			changed, err := packFile(t.Context(), tw, regHeader("./f", listed), p, make([]byte, 8))
			if err != nil || changed != (listed != int64(len(content))) {
				t.Errorf("%q listed %d: changed = %v, %v; want %v", content, listed, changed, err, listed != int64(len(content)))
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			dst := t.TempDir()
			if _, err := UnpackTar(t.Context(), &buf, dst); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dst, "f")); !bytes.Equal(b, want) {
				t.Errorf("%q listed %d: stored %q, want %q", content, listed, b, want)
			}
		}
	}
}

// TestPackFileGone checks a file removed between its listing and its
// reading is fs.ErrNotExist, which the walk leaves out.
func TestPackFileGone(t *testing.T) {
	var buf bytes.Buffer
	_, err := packFile(t.Context(), newTarWriterForTest(&buf), regHeader("./f", 3), filepath.Join(t.TempDir(), "f"), make([]byte, 8))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("packFile of a missing file = %v, want fs.ErrNotExist", err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes for a missing file, want none", buf.Len())
	}
}

type failingWriter struct{ left int }

var errDisk = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n := f.left
		f.left = 0
		return n, errDisk
	}
	f.left -= len(p)
	return len(p), nil
}

// TestPackStopsWhenTheDestinationFails checks that a failing destination
// ends Pack with its error, the packing goroutine included.
func TestPackStopsWhenTheDestinationFails(t *testing.T) {
	src := t.TempDir()
	mustTree(t, src)
	if err := os.WriteFile(filepath.Join(src, "big"), bytes.Repeat([]byte("incompressible? no, but long "), 1<<17), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(t.Context(), &failingWriter{left: 100}, src, Excludes{}); !errors.Is(err, errDisk) {
		t.Errorf("Pack to a failing writer = %v, want its error", err)
	}
}
