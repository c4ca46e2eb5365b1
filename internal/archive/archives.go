package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Archives is lifecycle.Archives over a Store: the checkpoint service
// hands it a workspace's uncompressed tar stream and it keeps it
// compressed with zstd (NewCompressor) under the checkpoint's key
// (lifecycle.ArchiveKey, the same as Key), and gives it back decompressed.
// It is safe for concurrent use.
type Archives struct {
	store Store
}

var _ lifecycle.Archives = (*Archives)(nil)

// NewArchives returns the Archives kept in store (a folder locally, S3 in
// AWS).
func NewArchives(store Store) *Archives { return &Archives{store: store} }

// Save compresses the tar stream r as it reads it and stores it under key,
// whole or not at all (Store.Put), returning the stored (compressed)
// size. Errors: ErrInvalidKey (wrapped), r's, ctx's, the store's.
func (a *Archives) Save(ctx context.Context, key string, r io.Reader) (int64, error) {
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := Compress(pw, r)
		pw.CloseWithError(err) // nil: EOF, the end of a whole object
	}()
	n, err := a.store.Put(ctx, key, pr)
	pr.CloseWithError(errors.New("the archive store stopped reading")) // unblocks the compressor after a failed put
	wg.Wait()
	if err != nil {
		return 0, fmt.Errorf("save archive %s: %w", key, err)
	}
	return n, nil
}

// Open returns the tar stream stored under key, decompressed as it is
// read; closing it closes the stored object. Errors: a
// *lifecycle.ProviderError of kind lifecycle.ErrCheckpointGone when
// nothing is stored there, ErrInvalidKey, the store's; reading fails on a
// damaged object.
func (a *Archives) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := a.store.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, "open_archive", "", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open archive %s: %w", key, err)
	}
	dec, err := NewDecompressor(obj)
	if err != nil {
		_ = obj.Close()
		return nil, err
	}
	return &decompressed{ReadCloser: dec, obj: obj}, nil
}

// Delete removes key's object; a missing one is no error. Errors:
// ErrInvalidKey, the store's.
func (a *Archives) Delete(ctx context.Context, key string) error {
	if err := a.store.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete archive %s: %w", key, err)
	}
	return nil
}

// decompressed closes the decompressor and the object under it.
type decompressed struct {
	io.ReadCloser
	obj io.Closer
}

func (d *decompressed) Close() error {
	return errors.Join(d.ReadCloser.Close(), d.obj.Close())
}
