package archivebench

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestGenerateIsDeterministic checks that a size gives the same workspace
// every time, near the size asked for, with the mix of many small files and
// a few large ones.
func TestGenerateIsDeterministic(t *testing.T) {
	const size = 2_000_000
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	fa, ta, err := generate(a, size)
	if err != nil {
		t.Fatal(err)
	}
	fb, tb, err := generate(b, size)
	if err != nil {
		t.Fatal(err)
	}
	if fa != fb || ta != tb || digest(t, a) != digest(t, b) {
		t.Errorf("two workspaces of one size differ: %d files %d bytes vs %d files %d bytes", fa, ta, fb, tb)
	}
	if ta < size || ta > size+maxSmallBlob {
		t.Errorf("total %d bytes, want %d to %d", ta, size, size+maxSmallBlob)
	}
	if fa < 100 {
		t.Errorf("%d files, want many", fa)
	}
	for i := range largeBlobs {
		fi, err := os.Stat(filepath.Join(a, "assets", fmt.Sprintf("blob%d.bin", i)))
		if err != nil || fi.Size() != int64(size*largeBlobShare/largeBlobs) {
			t.Errorf("large blob %d: %v, %v", i, fi, err)
		}
	}
	// A second call finds the complete workspace and keeps it.
	if f, n, err := generate(a, size); err != nil || f != fa || n != ta {
		t.Errorf("regenerate = %d, %d, %v; want %d, %d", f, n, err, fa, ta)
	}
}

// digest hashes every file's path and content under dir, in walk order.
func digest(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		io.WriteString(h, rel)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
