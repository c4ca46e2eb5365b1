package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// ErrNotFound is the error Get and Head return (wrapped, test it with
// errors.Is) when no object has the key.
var ErrNotFound = errors.New("archive object not found")

// ErrInvalidKey is the error every Store method returns (wrapped) for a key
// ValidateKey refuses; nothing is read or written.
var ErrInvalidKey = errors.New("invalid archive key")

// Store keeps archive objects by key. Keys are made by Key or at least pass
// ValidateKey. Implementations are safe for concurrent use; operations on
// different keys do not interfere, and concurrent Puts of one key leave one
// of the objects whole.
type Store interface {
	// Put stores everything r yields up to io.EOF under key, replacing any
	// object there, and returns the number of bytes stored. The size need
	// not be known in advance. The object becomes visible only once r is
	// exhausted and the whole object is durable: when r fails, ctx ends or
	// the store fails, Put returns the error and the key keeps what it held
	// before (nothing, or the previous object). Errors: ErrInvalidKey, r's
	// error, ctx's error, the store's.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)

	// Get opens the object under key for reading; the caller reads it to the
	// end or stops early, and closes it. Errors: ErrNotFound, ErrInvalidKey,
	// the store's (reading may fail too, with the store's or ctx's error).
	Get(ctx context.Context, key string) (io.ReadCloser, error)

	// Head says whether an object is stored under key, and its size.
	// Errors: ErrNotFound when there is none, ErrInvalidKey, the store's.
	Head(ctx context.Context, key string) (Info, error)

	// Delete removes the object under key. Deleting a key that holds nothing
	// is not an error. Errors: ErrInvalidKey, the store's.
	Delete(ctx context.Context, key string) error
}

// Info describes a stored object.
type Info struct {
	Key  string // the object's key
	Size int64  // its size in bytes
}

// Extension ends every archive key: a tar stream compressed with zstd.
const Extension = ".tar.zst"

// keySegment is one slash-separated part of a key: letters, digits, '.',
// '_' and '-', not starting with '.' (so "..", "." and a store's own
// hidden temporary names can never be keys).
var keySegment = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// MaxKeyLength is the longest key ValidateKey accepts, in bytes: well
// under S3's 1,024 and a file system's 255 per name.
const MaxKeyLength = 512

// Key returns the key of a checkpoint's archive:
// "<account>/<session>/<checkpoint>.tar.zst". One session's archives share
// the prefix "<account>/<session>/", so they can be listed or expired
// together. Each part must be a valid key segment (letters, digits, '.',
// '_', '-'; not starting with '.'); otherwise the error wraps
// ErrInvalidKey.
func Key(account, session, checkpoint string) (string, error) {
	key := account + "/" + session + "/" + checkpoint + Extension
	for _, part := range []string{account, session, checkpoint} {
		if !keySegment.MatchString(part) {
			return "", fmt.Errorf("%w: %q: each of account, session and checkpoint is letters, digits, '.', '_' or '-', not starting with '.'", ErrInvalidKey, key)
		}
	}
	return key, ValidateKey(key)
}

// ValidateKey returns nil for a key a Store accepts: 1 to MaxKeyLength
// bytes of slash-separated segments, each of letters, digits, '.', '_' and
// '-' and not starting with '.'; no leading, trailing or doubled slash.
// Otherwise the error wraps ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" || len(key) > MaxKeyLength {
		return fmt.Errorf("%w: %q: want 1 to %d bytes", ErrInvalidKey, key, MaxKeyLength)
	}
	for _, seg := range strings.Split(key, "/") {
		if !keySegment.MatchString(seg) {
			return fmt.Errorf("%w: %q: segments are letters, digits, '.', '_' or '-', not starting with '.', separated by single slashes", ErrInvalidKey, key)
		}
	}
	return nil
}
