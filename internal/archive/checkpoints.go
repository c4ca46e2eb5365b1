package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoints is lifecycle.Archives over a Store: it compresses the tar
// stream a checkpoint saves with zstd (Compress) on its way into the store,
// and decompresses it on its way out. Build it with NewCheckpoints.
type Checkpoints struct{ store Store }

var _ lifecycle.Archives = (*Checkpoints)(nil)

// NewCheckpoints returns the archives of checkpoints kept in store (the
// folder store locally, S3 in AWS).
func NewCheckpoints(store Store) *Checkpoints { return &Checkpoints{store: store} }

// objectKey is the store's key of key: key itself when it ends in
// Extension (a Key), else key + Extension (a checkpoint id).
func objectKey(key string) string {
	if strings.HasSuffix(key, Extension) {
		return key
	}
	return key + Extension
}

// Save compresses the tar stream r into the object of key and returns its
// stored (compressed) size in bytes (lifecycle.Archives). Nothing is
// visible under key until r is whole (Store.Put). Errors: ErrInvalidKey,
// r's, ctx's, the store's.
func (c *Checkpoints) Save(ctx context.Context, key string, r io.Reader) (int64, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := Compress(pw, r)
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	n, err := c.store.Put(ctx, objectKey(key), pr)
	pr.CloseWithError(errors.New("archive put ended")) // unblocks a compressor the put stopped reading
	<-done
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Open returns the tar stream stored under key; closing it closes the
// object (lifecycle.Archives). Errors: a *lifecycle.ProviderError of kind
// lifecycle.ErrCheckpointGone when nothing is stored there, ErrInvalidKey,
// the store's. A corrupt object fails while reading.
func (c *Checkpoints) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := c.store.Get(ctx, objectKey(key))
	if errors.Is(err, ErrNotFound) {
		return nil, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, "open archive", "", err)
	}
	if err != nil {
		return nil, err
	}
	dec, err := NewDecompressor(obj)
	if err != nil {
		_ = obj.Close()
		return nil, err
	}
	return &tarReader{ReadCloser: dec, obj: obj}, nil
}

// Delete removes key's object; a missing one is no error
// (lifecycle.Archives). Errors: ErrInvalidKey, the store's.
func (c *Checkpoints) Delete(ctx context.Context, key string) error {
	if err := c.store.Delete(ctx, objectKey(key)); err != nil {
		return fmt.Errorf("delete archive: %w", err)
	}
	return nil
}

// tarReader is the decompressed stream of an object: closing it closes
// both.
type tarReader struct {
	io.ReadCloser
	obj io.Closer
}

func (r *tarReader) Close() error {
	return errors.Join(r.ReadCloser.Close(), r.obj.Close())
}
