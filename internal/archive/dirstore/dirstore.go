// Package dirstore keeps archives as files in a folder (by default
// .sandman/archives), for the local stack and the tests: an archive.Store
// whose object under "acct/ses/chk.tar.zst" is the file
// <root>/acct/ses/chk.tar.zst.
package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandmanhq/sandman/internal/archive"
)

var _ archive.Store = (*Store)(nil)

// Store is an archive.Store in a folder. A put writes a hidden temporary
// file (".tmp-…", a name no key can have) beside the object, syncs it to
// disk, renames it over the key and syncs the folder, so an object is
// either whole or absent, also across a crash (a crash can leave a
// temporary file behind; nothing reads it). Folders are made as keys need
// them and never removed. A key cannot be both an object and the folder of
// another key ("a/b" and "a/b/c"); archive.Key's keys never are.
type Store struct {
	root string
}

// New returns the store rooted at root, creating the folder (mode 0700)
// if needed.
func New(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("archive folder store: no root folder")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("archive folder store: %w", err)
	}
	return &Store{root: root}, nil
}

// Root returns the store's folder.
func (s *Store) Root() string { return s.root }

func (s *Store) path(key string) (string, error) {
	if err := archive.ValidateKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put writes r to the object under key (archive.Store). Files are 0600.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := s.path(key)
	if err != nil {
		return 0, err
	}
	n, err := s.put(ctx, p, r)
	if err != nil {
		return n, fmt.Errorf("put archive %s: %w", key, err)
	}
	return n, nil
}

func (s *Store) put(ctx context.Context, p string, r io.Reader) (n int64, err error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err = io.Copy(tmp, &ctxReader{ctx: ctx, r: r})
	if err != nil {
		return n, err
	}
	if err := tmp.Sync(); err != nil {
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	// The last moment to give up: after the rename the object is visible.
	if err := ctx.Err(); err != nil {
		return n, err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return n, err
	}
	return n, syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Get opens the object under key (archive.Store). Reads fail once ctx
// ends.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get archive %s: %w", key, err)
	}
	f, err := os.Open(p)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && !fi.Mode().IsRegular() {
			f.Close()
			err = fs.ErrNotExist
		}
	}
	if err != nil {
		return nil, fmt.Errorf("get archive %s: %w", key, notFound(err))
	}
	return &ctxFile{ctxReader: ctxReader{ctx: ctx, r: f}, f: f}, nil
}

// Head returns the size of the object under key (archive.Store).
func (s *Store) Head(ctx context.Context, key string) (archive.Info, error) {
	p, err := s.path(key)
	if err != nil {
		return archive.Info{}, err
	}
	fi, err := os.Stat(p)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return archive.Info{}, fmt.Errorf("head archive %s: %w", key, notFound(err))
	}
	return archive.Info{Key: key, Size: fi.Size()}, nil
}

// Delete removes the object under key; a missing one is not an error
// (archive.Store).
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir()) {
		return nil
	}
	if err == nil {
		err = os.Remove(p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete archive %s: %w", key, err)
	}
	return nil
}

// notFound maps a missing file (or a missing folder on its path) to
// archive.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return fmt.Errorf("%w (%v)", archive.ErrNotFound, err)
	}
	return err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

type ctxFile struct {
	ctxReader
	f *os.File
}

func (c *ctxFile) Close() error { return c.f.Close() }
