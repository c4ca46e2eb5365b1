// Package archivetest is the contract every archive.Store passes
// (internal/archive/dirstore, internal/archive/s3store): round trips of
// empty, small and multi-part-sized objects of unknown size, the
// not-found error, idempotent deletes, overwrites, concurrent puts, and
// puts that fail or are cancelled midway leaving nothing visible.
package archivetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/archive"
)

// NewStore returns an empty store for one test, cleaned up by the test's
// Cleanup.
type NewStore func(t *testing.T) archive.Store

// Sizes of the objects the contract puts, in bytes. MultipartSize is past
// two parts of S3's smallest part (5 MiB), so an S3 store uploads it in
// several parts; CancelAfter is past the first part.
const (
	SmallSize     = 1000
	MultipartSize = 12 << 20
	CancelAfter   = 6 << 20
)

// Run runs the contract on the stores newStore makes.
func Run(t *testing.T, newStore NewStore) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("ErrNotFound", func(t *testing.T) { testNotFound(t, newStore(t)) })
	t.Run("DeleteIsIdempotent", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, newStore(t)) })
	t.Run("ConcurrentPuts", func(t *testing.T) { testConcurrentPuts(t, newStore(t)) })
	t.Run("CancelledPutLeavesNothing", func(t *testing.T) { testCancelledPut(t, newStore(t)) })
	t.Run("FailedReaderLeavesNothing", func(t *testing.T) { testFailedReader(t, newStore(t)) })
	t.Run("ErrInvalidKey", func(t *testing.T) { testInvalidKey(t, newStore(t)) })
	t.Run("GetClosedEarly", func(t *testing.T) { testGetClosedEarly(t, newStore(t)) })
}

// Bytes returns n pseudo-random (incompressible) bytes of the given seed.
func Bytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n - n%8; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// stream hands data out in chunks of at most 100,000 bytes and hides its
// length, as a sandbox's stdout does.
type stream struct {
	data []byte
	// at, when set, is called once when the reader has handed out atBytes.
	at      func()
	atBytes int
	sent    int
}

func (s *stream) Read(p []byte) (int, error) {
	if s.at != nil && s.sent >= s.atBytes {
		s.at()
		s.at = nil
	}
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(s.data), 100_000)
	if s.at != nil {
		n = min(n, s.atBytes-s.sent)
	}
	copy(p, s.data[:n])
	s.data, s.sent = s.data[n:], s.sent+n
	return n, nil
}

// MustPut puts data under key and checks the size Put returns.
func MustPut(tb testing.TB, s archive.Store, key string, data []byte) {
	tb.Helper()
	n, err := s.Put(tb.Context(), key, &stream{data: data})
	if err != nil {
		tb.Fatalf("put %s (%d bytes): %v", key, len(data), err)
	}
	if n != int64(len(data)) {
		tb.Fatalf("put %s returned size %d, want %d", key, n, len(data))
	}
}

// MustGet returns what is stored under key.
func MustGet(tb testing.TB, s archive.Store, key string) []byte {
	tb.Helper()
	r, err := s.Get(tb.Context(), key)
	if err != nil {
		tb.Fatalf("get %s: %v", key, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		tb.Fatalf("read %s: %v", key, err)
	}
	return b
}

// checkObject fails unless key holds exactly want, by Get and by Head.
func checkObject(tb testing.TB, s archive.Store, key string, want []byte) {
	tb.Helper()
	if got := MustGet(tb, s, key); !bytes.Equal(got, want) {
		tb.Errorf("get %s: %d bytes (sha256 %x), want %d bytes (sha256 %x)", key, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
	info, err := s.Head(tb.Context(), key)
	if err != nil {
		tb.Fatalf("head %s: %v", key, err)
	}
	if info.Size != int64(len(want)) || info.Key != key {
		tb.Errorf("head %s = %+v, want size %d", key, info, len(want))
	}
}

// checkMissing fails unless Get and Head of key give ErrNotFound.
func checkMissing(tb testing.TB, s archive.Store, key string) {
	tb.Helper()
	ctx := context.WithoutCancel(tb.Context())
	if r, err := s.Get(ctx, key); !errors.Is(err, archive.ErrNotFound) {
		if err == nil {
			r.Close()
		}
		tb.Errorf("get %s = %v, want ErrNotFound", key, err)
	}
	if info, err := s.Head(ctx, key); !errors.Is(err, archive.ErrNotFound) {
		tb.Errorf("head %s = %+v, %v; want ErrNotFound", key, info, err)
	}
}

func key(t *testing.T, checkpoint string) string {
	k, err := archive.Key("acct_test", "ses_contract", checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testRoundTrip(t *testing.T, s archive.Store) {
	for _, tc := range []struct {
		name string
		size int
	}{{"Empty", 0}, {"Small", SmallSize}, {"Multipart", MultipartSize}} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "chk_"+tc.name)
			data := Bytes(uint64(tc.size)+1, tc.size)
			MustPut(t, s, k, data)
			checkObject(t, s, k, data)
		})
	}
}

func testNotFound(t *testing.T, s archive.Store) {
	checkMissing(t, s, key(t, "chk_never"))
	// A key whose prefix holds objects is still missing.
	MustPut(t, s, key(t, "chk_1"), []byte("x"))
	checkMissing(t, s, key(t, "chk_2"))
	checkMissing(t, s, "acct_test/ses_contract")
}

func testDelete(t *testing.T, s archive.Store) {
	k := key(t, "chk_del")
	if err := s.Delete(t.Context(), k); err != nil {
		t.Errorf("delete of a missing key = %v, want nil", err)
	}
	MustPut(t, s, k, Bytes(7, SmallSize))
	MustPut(t, s, key(t, "chk_other"), []byte("other"))
	if err := s.Delete(t.Context(), k); err != nil {
		t.Fatalf("delete = %v", err)
	}
	checkMissing(t, s, k)
	if err := s.Delete(t.Context(), k); err != nil {
		t.Errorf("second delete = %v, want nil", err)
	}
	checkObject(t, s, key(t, "chk_other"), []byte("other"))
}

func testOverwrite(t *testing.T, s archive.Store) {
	k := key(t, "chk_over")
	MustPut(t, s, k, Bytes(1, 2*SmallSize))
	second := Bytes(2, SmallSize)
	MustPut(t, s, k, second)
	checkObject(t, s, k, second)
	MustPut(t, s, k, nil)
	checkObject(t, s, k, nil)
}

func testConcurrentPuts(t *testing.T, s archive.Store) {
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			k := key(t, fmt.Sprintf("chk_c%d", i))
			data := Bytes(uint64(100+i), SmallSize*(i+1))
			if _, err := s.Put(t.Context(), k, &stream{data: data}); err != nil {
				errs <- fmt.Errorf("put %s: %w", k, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range n {
		checkObject(t, s, key(t, fmt.Sprintf("chk_c%d", i)), Bytes(uint64(100+i), SmallSize*(i+1)))
	}
}

// testCancelledPut cancels the put's context once CancelAfter bytes are
// read (past S3's first part) while the reader goes on giving data: the
// put fails and the key keeps what it held, nothing or the old object.
func testCancelledPut(t *testing.T, s archive.Store) {
	for _, tc := range []struct {
		name string
		old  []byte
	}{{"New", nil}, {"OverExisting", Bytes(3, SmallSize)}} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "chk_cancel"+tc.name)
			if tc.old != nil {
				MustPut(t, s, k, tc.old)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			n, err := s.Put(ctx, k, &stream{data: Bytes(4, MultipartSize), at: cancel, atBytes: CancelAfter})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("put with its context cancelled midway = %d, %v; want context.Canceled", n, err)
			}
			if tc.old == nil {
				checkMissing(t, s, k)
			} else {
				checkObject(t, s, k, tc.old)
			}
		})
	}
}

var errSource = errors.New("the sandbox's stream broke")

type failing struct {
	stream
}

func (f *failing) Read(p []byte) (int, error) {
	n, err := f.stream.Read(p)
	if err == io.EOF {
		return n, errSource
	}
	return n, err
}

func testFailedReader(t *testing.T, s archive.Store) {
	for _, size := range []int{SmallSize, CancelAfter} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			k := key(t, fmt.Sprintf("chk_fail%d", size))
			if _, err := s.Put(t.Context(), k, &failing{stream{data: Bytes(5, size)}}); !errors.Is(err, errSource) {
				t.Errorf("put from a failing reader = %v, want its error", err)
			}
			checkMissing(t, s, k)
		})
	}
}

func testInvalidKey(t *testing.T, s archive.Store) {
	ctx := t.Context()
	for _, k := range []string{"", "../escape", "/abs/key", "a//b", "a/.tmp-x"} {
		if _, err := s.Put(ctx, k, bytes.NewReader([]byte("x"))); !errors.Is(err, archive.ErrInvalidKey) {
			t.Errorf("put %q = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Get(ctx, k); !errors.Is(err, archive.ErrInvalidKey) {
			t.Errorf("get %q = %v, want ErrInvalidKey", k, err)
		}
		if _, err := s.Head(ctx, k); !errors.Is(err, archive.ErrInvalidKey) {
			t.Errorf("head %q = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, archive.ErrInvalidKey) {
			t.Errorf("delete %q = %v, want ErrInvalidKey", k, err)
		}
	}
}

func testGetClosedEarly(t *testing.T, s archive.Store) {
	k := key(t, "chk_early")
	data := Bytes(6, 3<<20)
	MustPut(t, s, k, data)
	r, err := s.Get(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 1000)
	if _, err := io.ReadFull(r, head); err != nil || !bytes.Equal(head, data[:1000]) {
		t.Errorf("first 1000 bytes: %v, equal %v", err, bytes.Equal(head, data[:1000]))
	}
	if err := r.Close(); err != nil {
		t.Errorf("close after a partial read = %v", err)
	}
	checkObject(t, s, k, data)
}
