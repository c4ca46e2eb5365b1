package archivebench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// The mix of a synthetic workspace, as shares of its size: source-like
// text in many small files (what compresses), random bytes in a few large
// files (video, model weights, packed archives) and in many small ones
// (images), which do not.
const (
	textShare       = 0.60
	largeBlobShare  = 0.30
	smallBlobShare  = 0.10
	largeBlobs      = 3
	filesPerFolder  = 40
	maxTextFile     = 24 << 10
	maxSmallBlob    = 64 << 10
	generatedMarker = ".archivebench-complete"
)

// words are the tokens source-like lines are made of.
var words = []string{
	"func", "return", "const", "let", "import", "export", "default", "from", "if", "else", "for",
	"range", "while", "useState", "useEffect", "props", "children", "className", "=>", "{", "}",
	"(", ")", ";", "await", "async", "string", "number", "boolean", "error", "nil", "null", "ctx",
	"err", "value", "index", "items", "0", "1", "42", "\"text\"", "'./utils'", "console.log", "===",
	"+", "-", "*", "&&", "||", "true", "false", "new", "this", "self", "class", "interface", "type",
}

// generate writes a workspace of about size bytes into dir, the same for
// the same size every time (the random source is seeded with the size),
// unless dir already holds a complete one. It returns the number of files
// and their total size in bytes.
func generate(dir string, size int64) (files int, total int64, err error) {
	if _, err := os.Stat(filepath.Join(dir, generatedMarker)); err == nil {
		return count(dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(size), 0x5eed))
	g := &generator{dir: dir, rng: rng}
	// Text: many small files in nested folders.
	for g.written < int64(float64(size)*textShare) {
		if err := g.file(fmt.Sprintf("src/mod%03d/part%02d/file%03d.ts", g.files/(filesPerFolder*10), g.files/filesPerFolder%10, g.files%filesPerFolder),
			int64(512+rng.IntN(maxTextFile-512)), g.text); err != nil {
			return 0, 0, err
		}
	}
	// A few large incompressible files.
	for i := range largeBlobs {
		if err := g.file(fmt.Sprintf("assets/blob%d.bin", i), int64(float64(size)*largeBlobShare/largeBlobs), g.random); err != nil {
			return 0, 0, err
		}
	}
	// Many small incompressible ones.
	for i := 0; g.written < size; i++ {
		if err := g.file(fmt.Sprintf("public/img%02d/pic%04d.png", i/filesPerFolder, i), int64(1024+rng.IntN(maxSmallBlob-1024)), g.random); err != nil {
			return 0, 0, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, generatedMarker), nil, 0o644); err != nil {
		return 0, 0, err
	}
	return count(dir)
}

type generator struct {
	dir     string
	rng     *rand.Rand
	files   int
	written int64
}

// file writes name with n bytes from fill.
func (g *generator) file(name string, n int64, fill func(*bufio.Writer, int64) error) error {
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err := fill(w, n); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	g.files++
	g.written += n
	return f.Close()
}

// text writes n bytes of source-like lines: indented runs of tokens.
func (g *generator) text(w *bufio.Writer, n int64) error {
	var line []byte
	for n > 0 {
		line = line[:0]
		for range g.rng.IntN(4) {
			line = append(line, "  "...)
		}
		for range 3 + g.rng.IntN(9) {
			line = append(line, words[g.rng.IntN(len(words))]...)
			line = append(line, ' ')
		}
		line[len(line)-1] = '\n'
		k := min(int64(len(line)), n)
		if _, err := w.Write(line[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// random writes n random bytes.
func (g *generator) random(w *bufio.Writer, n int64) error {
	var buf [8]byte
	for n > 0 {
		v := g.rng.Uint64()
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		k := min(int64(len(buf)), n)
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// count returns the regular files under dir and their total size.
func count(dir string) (files int, total int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() == generatedMarker {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		files++
		total += fi.Size()
		return nil
	})
	return files, total, err
}
