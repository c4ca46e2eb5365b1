package dirstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/archivetest"
	"github.com/sandmanhq/sandman/internal/archive/dirstore"
)

func newStore(t *testing.T) archive.Store {
	s, err := dirstore.New(filepath.Join(t.TempDir(), "archives"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoTemporaryFiles(t, s.Root()) })
	return s
}

func TestStoreContract(t *testing.T) {
	archivetest.Run(t, newStore)
}

// TestArchivesContract runs archive.Archives (lifecycle.Archives) over the
// folder store.
func TestArchivesContract(t *testing.T) {
	archivetest.RunArchives(t, newStore)
}

// checkNoTemporaryFiles fails when a put left a temporary file behind:
// each failed or cancelled put must remove its own.
func checkNoTemporaryFiles(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

func TestObjectIsAFileUnderTheRoot(t *testing.T) {
	root := t.TempDir()
	s, err := dirstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := archive.Key("acct", "ses", "chk")
	archivetest.MustPut(t, s, key, []byte("archive"))
	p := filepath.Join(root, "acct", "ses", "chk.tar.zst")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("mode = %v, want %v", got, want)
	}
}

func TestNewNeedsARoot(t *testing.T) {
	if _, err := dirstore.New(""); err == nil {
		t.Error("New(\"\") succeeded")
	}
}
