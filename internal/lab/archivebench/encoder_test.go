package archivebench

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sandmanhq/sandman/internal/archive"
)

// benchInput is 64 MiB of a workspace's mix: three parts source-like text
// to one part random bytes, interleaved in 1 MiB runs.
func benchInput() []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	words := []string{"func", "return", "const", "import", "export", "default", "if", "else", "for", "range",
		"useState", "props", "children", "className", "=>", "{", "}", "(", ")", ";", "await", "async",
		"string", "number", "error", "nil", "ctx", "err", "value", "index", "0", "1", "42", "\"text\""}
	var b bytes.Buffer
	for b.Len() < 64<<20 {
		if rng.IntN(4) == 0 {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			b.Write(chunk)
			continue
		}
		end := b.Len() + 1<<20
		for b.Len() < end {
			for range 4 + rng.IntN(8) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// BenchmarkEncoderSettings compares the zstd encoder settings an archive
// could use on a two-core machine (internal/archive uses Blocks2Window2M:
// concurrent sections, and the window of `zstd -3`, 2 MiB, where the Go
// encoder's default is 8; on cores other work keeps busy, Async2Window2M
// measures faster):
//
//	go test -run - -bench EncoderSettings ./internal/lab/archivebench/
func BenchmarkEncoderSettings(b *testing.B) {
	in := benchInput()
	for _, tc := range []struct {
		name string
		opts []zstd.EOption
	}{
		{"Sync", []zstd.EOption{zstd.WithEncoderConcurrency(1)}},
		{"Async2", []zstd.EOption{zstd.WithEncoderConcurrency(2)}},
		{"Async2Window2M", []zstd.EOption{zstd.WithEncoderConcurrency(2), zstd.WithWindowSize(2 << 20)}},
		{"Blocks2Window2M", []zstd.EOption{zstd.WithEncoderConcurrency(2), zstd.WithConcurrentBlocks(true), zstd.WithWindowSize(2 << 20)}},
		{"Blocks2", []zstd.EOption{zstd.WithEncoderConcurrency(2), zstd.WithConcurrentBlocks(true)}},
		{"Blocks4", []zstd.EOption{zstd.WithEncoderConcurrency(4), zstd.WithConcurrentBlocks(true)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var size int64
			for b.Loop() {
				cw := &counter{}
				enc, err := zstd.NewWriter(cw, append([]zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedDefault)}, tc.opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := enc.ReadFrom(bytes.NewReader(in)); err != nil {
					b.Fatal(err)
				}
				if err := enc.Close(); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.ReportMetric(float64(size)/float64(len(in)), "ratio")
		})
	}
}

// BenchmarkDecompress measures decoding benchInput's archive with one and
// two blocks in flight (internal/archive uses two).
func BenchmarkDecompress(b *testing.B) {
	in := benchInput()
	var zst bytes.Buffer
	if _, err := archive.Compress(&zst, bytes.NewReader(in)); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				dec, err := zstd.NewReader(bytes.NewReader(zst.Bytes()), zstd.WithDecoderConcurrency(n))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, dec); err != nil {
					b.Fatal(err)
				}
				dec.Close()
			}
		})
	}
}
