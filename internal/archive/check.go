package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
)

// Checker applies UnpackTar's refusals to the members of one tar stream,
// in order, writing nothing: a cloud adapter checks on Sandman's side what
// it hands to a `tar -x` in a sandbox (Checked), and the providers' fakes
// unpack into memory under the same rules. It sees the stream only, so a
// member that would land under a symbolic link, or replace a folder,
// already in the destination folder is not caught. The zero value is ready.
type Checker struct {
	kinds map[string]byte // member name → 'd' folder, 'f' file, 'l' symbolic link
}

// Member checks hdr, the stream's next member, against the members before
// it. It returns the member's name relative to the folder ("." for the
// folder itself) and write, false for a member UnpackTar skips (a named
// pipe). Errors: ErrUnsafe naming the member, as UnpackTar refuses it (an
// absolute or ".." name, a member under a file or a symbolic link, a link
// out of the folder, a hard link to anything but a file before it, a
// device file, a folder where a file was or the reverse).
func (c *Checker) Member(hdr *tar.Header) (name string, write bool, err error) {
	if c.kinds == nil {
		c.kinds = map[string]byte{".": 'd'}
	}
	if name, err = memberName(hdr.Name); err != nil {
		return "", false, err
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		switch c.kinds[dir] {
		case 'f', 'l':
			return "", false, fmt.Errorf("%w %q: a file or a symbolic link is where its folder %q goes", ErrUnsafe, hdr.Name, dir)
		case 0:
			c.kinds[dir] = 'd'
		}
	}
	kind := byte('f')
	switch hdr.Typeflag {
	case tar.TypeDir:
		kind = 'd'
	case tar.TypeReg, tar.TypeGNUSparse:
	case tar.TypeSymlink:
		if err := checkLinkTarget(name, hdr.Linkname); err != nil {
			return "", false, err
		}
		kind = 'l'
	case tar.TypeLink:
		target, err := memberName(hdr.Linkname)
		if err != nil || c.kinds[target] != 'f' {
			return "", false, fmt.Errorf("%w %q: hard link to %q, which is not a file unpacked before it", ErrUnsafe, hdr.Name, hdr.Linkname)
		}
	case tar.TypeFifo:
		return name, false, nil
	case tar.TypeChar, tar.TypeBlock:
		return "", false, fmt.Errorf("%w %q: device file", ErrUnsafe, hdr.Name)
	default:
		return "", false, fmt.Errorf("%w %q: unknown member type %q", ErrUnsafe, hdr.Name, hdr.Typeflag)
	}
	switch was := c.kinds[name]; {
	case kind == 'd' && (was == 'f' || was == 'l'):
		return "", false, fmt.Errorf("%w %q: a file or a symbolic link is where a folder goes", ErrUnsafe, hdr.Name)
	case kind != 'd' && (was == 'd' || name == "."):
		return "", false, fmt.Errorf("%w %q: a folder is where a file or link goes", ErrUnsafe, hdr.Name)
	}
	c.kinds[name] = kind
	return name, true, nil
}

// CheckTar reads the tar stream r to its end, past the end-of-archive
// blocks, checking every member with a Checker. A stream without a single
// member (empty, or only end-of-archive blocks) is refused too, as GNU
// tar refuses it. Errors: ErrUnsafe, a damaged or truncated stream,
// io.ErrUnexpectedEOF for one with no member, r's.
func CheckTar(r io.Reader) error {
	tr := tar.NewReader(r)
	var c Checker
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) && n == 0 {
			return fmt.Errorf("no member: %w", io.ErrUnexpectedEOF)
		}
		if errors.Is(err, io.EOF) {
			_, err = io.Copy(io.Discard, r)
			return err
		}
		if err != nil {
			return err
		}
		if _, _, err := c.Member(hdr); err != nil {
			return err
		}
	}
}

// errCheckClosed ends the checking goroutine of a Checked reader closed
// before its end.
var errCheckClosed = errors.New("archive: checked reader closed")

// Checked returns a reader of src's bytes that reads them as a tar stream
// while they pass (CheckTar, in a goroutine): a read fails with the
// stream's error (ErrUnsafe for a refused member, or a damaged stream)
// as soon as it is known, and src's end is io.EOF only when src held a
// whole tar archive (a truncated one fails). Close it when done, also
// before its end, to end the goroutine; closing does not close src.
func Checked(src io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	c := &checked{src: src, pw: pw, done: make(chan error, 1)}
	go func() {
		err := CheckTar(pr)
		pr.CloseWithError(err)
		c.done <- err
	}()
	return c
}

type checked struct {
	src  io.Reader
	pw   *io.PipeWriter
	done chan error
	err  error // sticky: the stream's failure, or io.EOF once whole
}

func (c *checked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.src.Read(p)
	if n > 0 {
		if _, werr := c.pw.Write(p[:n]); werr != nil {
			c.err = c.verdict()
			return 0, c.err
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		c.pw.Close()
		if c.err = c.verdict(); c.err == nil {
			c.err = io.EOF
		}
		return n, c.err
	case err != nil:
		c.pw.CloseWithError(err)
		_ = c.verdict()
		c.err = err
	}
	return n, err
}

// verdict waits for the checker's end: nil for a whole, safe stream.
func (c *checked) verdict() error {
	switch err := <-c.done; {
	case err == nil, errors.Is(err, errCheckClosed):
		return err
	default:
		return fmt.Errorf("archive: not a whole tar stream: %w", err)
	}
}

// Close ends the checking: a read after it fails. It may be called while
// a read is under way in another goroutine.
func (c *checked) Close() error {
	c.pw.CloseWithError(errCheckClosed)
	return nil
}
