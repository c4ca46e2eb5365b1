package archive

import (
	"bytes"
	"math/rand/v2"
	"testing"
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
