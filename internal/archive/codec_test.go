package archive

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestCompressDecompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for name, in := range map[string][]byte{
		"Empty":   nil,
		"Text":    bytes.Repeat([]byte("func main() { println(\"hello\") }\n"), 200_000), // 7 MB, several encoder jobs
		"Random":  random,
		"OneByte": {42},
	} {
		t.Run(name, func(t *testing.T) {
			var zst bytes.Buffer
			n, err := Compress(&zst, bytes.NewReader(in))
			if err != nil || n != int64(len(in)) {
				t.Fatalf("Compress = %d, %v; want %d", n, err, len(in))
			}
			var out bytes.Buffer
			m, err := Decompress(&out, &zst)
			if err != nil || m != int64(len(in)) || !bytes.Equal(out.Bytes(), in) {
				t.Fatalf("Decompress = %d, %v; want the %d bytes back", m, err, len(in))
			}
		})
	}
}

// TestCompressFrame checks an archive is one frame with its content
// checksum and the window of the reference tool's -3 (2 MiB), so a decoder
// needs no more memory than one of `zstd -3`'s output.
func TestCompressFrame(t *testing.T) {
	var zst bytes.Buffer
	if _, err := Compress(&zst, bytes.NewReader(bytes.Repeat([]byte("const x = 42;\n"), 1<<20))); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(zst.Bytes()); err != nil {
		t.Fatal(err)
	}
	if !h.HasCheckSum || h.WindowSize > 2<<20 {
		t.Errorf("frame header = %+v; want a checksum and a window of at most 2 MiB", h)
	}
}
