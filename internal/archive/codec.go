package archive

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// The zstd settings of every archive. Level: zstd's default, the
// reference tool's -3, the speed/ratio point `tar | zstd -3` is measured
// at; window: that level's too (the reference tool's -3 has a window log
// of 21, 2 MiB), where the Go encoder's own default is 8 MiB: at 2 MiB it
// spends about 5 % less processor time on a workspace's mix and 40 % less
// on random bytes, for the same size within 0.1 % (internal/lab/archivebench's
// 100 MB workspace), and a decoder needs 2 MiB for it, not 8. Concurrency:
// a Lambda function or a small host has about two cores; the encoder
// compresses independent sections of the stream (zstd.WithConcurrentBlocks:
// 8 MiB each, four times the window) on both, the way the reference tool's
// -T2 would, the frame and its checksum unchanged and the size within
// 0.1 %. Measured on two cores with nothing else taking them (each run
// holding the processors), it took 0.86× the time of `tar | zstd -3` to
// pack a 1 GB workspace where compressing one block at a time while the
// next is read took 1.64× (the sandbox path: 1.01× against 1.49×); on
// cores busy with other work it measured the slower of the two, by 20 to 40 %
// (docs/ARCHIVES.md "Speed"). Decoding with two blocks in flight is about
// twice as fast as with one (BenchmarkDecompress).
const (
	encoderLevel       = zstd.SpeedDefault
	encoderWindow      = 2 << 20
	encoderConcurrency = 2
	decoderConcurrency = 2
)

// NewCompressor returns a writer that compresses what is written to it into
// dst as one zstd frame; Close flushes the end of the frame (it does not
// close dst). The caller must Close it, also after a failure, to release
// its goroutines.
func NewCompressor(dst io.Writer) (io.WriteCloser, error) {
	enc, err := zstd.NewWriter(dst,
		zstd.WithEncoderLevel(encoderLevel),
		zstd.WithWindowSize(encoderWindow),
		zstd.WithEncoderConcurrency(encoderConcurrency),
		zstd.WithConcurrentBlocks(true),
	)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	return enc, nil
}

// NewDecompressor returns a reader of the bytes the zstd stream src holds;
// reading fails on a corrupt or truncated stream. The caller must Close it
// (closing does not close src).
func NewDecompressor(src io.Reader) (io.ReadCloser, error) {
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(decoderConcurrency))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return dec.IOReadCloser(), nil
}

// Compress reads tarStream to its end (in production the stdout of
// TarCommand run in the sandbox) and writes it to dst compressed with zstd.
// It returns the number of bytes read from tarStream. On an error of either
// side the output is incomplete and must be discarded.
func Compress(dst io.Writer, tarStream io.Reader) (int64, error) {
	enc, err := NewCompressor(dst)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(enc, tarStream)
	if cerr := enc.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("compress: %w", err)
	}
	return n, nil
}

// Decompress reads the zstd stream src to its end and writes what it holds
// (a tar stream, for an archive) to dst, for example to the stdin of
// `tar -x` in a sandbox. It returns the number of bytes written to dst. A
// corrupt or truncated src is an error.
func Decompress(dst io.Writer, src io.Reader) (int64, error) {
	dec, err := NewDecompressor(src)
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	n, err := io.Copy(dst, dec)
	if err != nil {
		return n, fmt.Errorf("decompress: %w", err)
	}
	return n, nil
}
