package archivetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// RunArchives runs the contract of archive.Archives (lifecycle.Archives)
// over the stores newStore makes: a tar stream saved comes back whole, is
// stored compressed, a missing key opens as lifecycle.ErrCheckpointGone,
// deleting is idempotent, and a stream that fails midway leaves nothing.
func RunArchives(t *testing.T, newStore NewStore) {
	key := lifecycle.ArchiveKey("acct_1", "ses_1", lifecycle.NewCheckpointID(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)))
	t.Run("RoundTrip", func(t *testing.T) {
		store := newStore(t)
		a := archive.NewArchives(store)
		want := bytes.Repeat([]byte("a workspace compresses well. "), 50_000)
		n, err := a.Save(t.Context(), key, bytes.NewReader(want))
		if err != nil {
			t.Fatalf("Save: %v", err)
		}
		if info, err := store.Head(t.Context(), key); err != nil || info.Size != n || n >= int64(len(want))/10 {
			t.Errorf("stored %d bytes (head %+v, %v) of %d: want the compressed size, far smaller", n, info, err, len(want))
		}
		r, err := a.Open(t.Context(), key)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		got, err := io.ReadAll(r)
		if cerr := r.Close(); err != nil || cerr != nil || !bytes.Equal(got, want) {
			t.Errorf("Open read %d bytes (%v, close %v), want the %d saved", len(got), err, cerr, len(want))
		}
		for range 2 {
			if err := a.Delete(t.Context(), key); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}
		if _, err := a.Open(t.Context(), key); !errors.Is(err, lifecycle.ErrCheckpointGone) {
			t.Errorf("Open after Delete = %v, want ErrCheckpointGone", err)
		}
	})
	t.Run("FailedStreamLeavesNothing", func(t *testing.T) {
		a := archive.NewArchives(newStore(t))
		r := io.MultiReader(strings.NewReader("part of a tar"), iotest.ErrReader(errors.New("the sandbox went away")))
		if _, err := a.Save(t.Context(), key, r); err == nil {
			t.Fatal("Save of a failing stream succeeded")
		}
		if _, err := a.Open(t.Context(), key); !errors.Is(err, lifecycle.ErrCheckpointGone) {
			t.Errorf("Open after a failed Save = %v, want ErrCheckpointGone", err)
		}
	})
	t.Run("CancelledSave", func(t *testing.T) {
		a := archive.NewArchives(newStore(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := a.Save(ctx, key, bytes.NewReader(Bytes(1, SmallSize))); err == nil {
			t.Error("Save with a cancelled context succeeded")
		}
	})
	t.Run("InvalidKey", func(t *testing.T) {
		a := archive.NewArchives(newStore(t))
		if _, err := a.Save(t.Context(), "../escape", strings.NewReader("x")); !errors.Is(err, archive.ErrInvalidKey) {
			t.Errorf("Save of a bad key = %v, want ErrInvalidKey", err)
		}
	})
}
