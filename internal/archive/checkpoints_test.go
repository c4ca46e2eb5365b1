package archive_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/dirstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// newCheckpoints returns archives over a fresh folder store and its root.
func newCheckpoints(t *testing.T) (*archive.Checkpoints, string) {
	root := t.TempDir()
	store, err := dirstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return archive.NewCheckpoints(store), root
}

func mustRead(t *testing.T, a *archive.Checkpoints, key string) []byte {
	t.Helper()
	r, err := a.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func mustGone(t *testing.T, a *archive.Checkpoints, key string) {
	t.Helper()
	_, err := a.Open(t.Context(), key)
	var pe *lifecycle.ProviderError
	if !errors.Is(err, lifecycle.ErrCheckpointGone) || !errors.As(err, &pe) {
		t.Errorf("Open(%s) = %v, want a provider error of kind ErrCheckpointGone", key, err)
	}
}

// TestCheckpointsRoundTrip: what Save is given, Open gives back; the store
// holds it compressed under the checkpoint id plus .tar.zst, and Save
// reports that stored size.
func TestCheckpointsRoundTrip(t *testing.T) {
	a, root := newCheckpoints(t)
	tarStream := []byte(strings.Repeat("a workspace file\n", 10_000))
	n, err := a.Save(t.Context(), "chk_1", bytes.NewReader(tarStream))
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(root, "chk_1"+archive.Extension))
	if err != nil {
		t.Fatal(err)
	}
	if n != info.Size() || n >= int64(len(tarStream)) {
		t.Errorf("Save = %d bytes, object %d bytes, input %d: want the object's, compressed", n, info.Size(), len(tarStream))
	}
	if got := mustRead(t, a, "chk_1"); !bytes.Equal(got, tarStream) {
		t.Errorf("Open gave %d bytes, want the %d saved", len(got), len(tarStream))
	}

	key, err := archive.Key("acct_1", "ses_a", "chk_2") // a key already ending in .tar.zst is used as is
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Save(t.Context(), key, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(key))); err != nil {
		t.Errorf("object of %s: %v", key, err)
	}
}

// TestCheckpointsGone: Open of a key never saved or deleted is
// ErrCheckpointGone; deleting twice is no error.
func TestCheckpointsGone(t *testing.T) {
	a, _ := newCheckpoints(t)
	mustGone(t, a, "chk_never")
	if _, err := a.Save(t.Context(), "chk_1", strings.NewReader("tar")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Delete(t.Context(), "chk_1"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	mustGone(t, a, "chk_1")
}

// failAfter yields n bytes, then fails.
type failAfter struct{ n int }

var errDisk = errors.New("sandbox stream broke")

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errDisk
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

// TestCheckpointsFailedSaveLeavesNothing: a stream that breaks fails the
// save with its error and stores nothing; an invalid key fails before
// reading.
func TestCheckpointsFailedSaveLeavesNothing(t *testing.T) {
	a, _ := newCheckpoints(t)
	if _, err := a.Save(t.Context(), "chk_1", &failAfter{n: 1 << 20}); !errors.Is(err, errDisk) {
		t.Errorf("Save = %v, want the stream's error", err)
	}
	mustGone(t, a, "chk_1")
	if _, err := a.Save(t.Context(), "../chk", &failAfter{n: 1 << 20}); !errors.Is(err, archive.ErrInvalidKey) {
		t.Errorf("Save(../chk) = %v, want ErrInvalidKey", err)
	}
}
