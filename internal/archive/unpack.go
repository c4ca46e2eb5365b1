package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// ErrUnsafe is the error Unpack and UnpackTar return (wrapped, naming the
// member) for a member they refuse to write: an absolute name, a ".."
// component, a member under a symbolic link, a symbolic or hard link
// pointing outside the folder, a device file, or a folder that would
// replace a file (or the reverse).
var ErrUnsafe = errors.New("unsafe archive member")

// UnpackStats counts what Unpack or UnpackTar wrote.
type UnpackStats struct {
	Files    int   // regular files
	Dirs     int   // folders, the top one included when the archive names it
	Symlinks int   // symbolic links
	Links    int   // hard links
	Bytes    int64 // regular files' content, in bytes
	Skipped  int   // named pipes, not recreated
}

// Unpack writes the tar.zst stream src (what Pack or Compress made) into
// dir; see UnpackTar.
func Unpack(ctx context.Context, src io.Reader, dir string) (UnpackStats, error) {
	dec, err := NewDecompressor(src)
	if err != nil {
		return UnpackStats{}, err
	}
	defer dec.Close()
	return UnpackTar(ctx, dec, dir)
}

// UnpackTar writes the members of the tar stream into dir, creating dir if
// needed. Names are taken relative to dir ("./src/app.js" and
// "src/app.js" alike). Regular files, folders, symbolic links and hard
// links are written with their permission bits (setuid and setgid
// dropped) and the modification times of files and folders; owners are not
// changed (the files belong to the caller), and a symbolic link's own time
// is not restored. Existing files are replaced, existing folders kept.
// Named pipes are skipped and counted.
//
// Nothing is written outside dir: every write goes through an os.Root of
// dir, and a member is refused with ErrUnsafe when its name is absolute or
// has a ".." component, when a folder on its path is a symbolic link, when
// it is a symbolic link whose target is absolute or climbs out of dir
// (resolved from the link's folder, by its text), when it is a hard link
// to something that is not a regular file already in dir, or when it is a
// device file. The stream is read to its end, past the end-of-archive
// blocks. On an error (ErrUnsafe, a corrupt stream, ctx ending) the
// members before it stay written: unpack into a fresh folder and move it
// into place once UnpackTar succeeds.
func UnpackTar(ctx context.Context, tarStream io.Reader, dir string) (UnpackStats, error) {
	var st UnpackStats
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("unpack into %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return st, fmt.Errorf("unpack into %s: %w", dir, err)
	}
	defer root.Close()
	u := &unpacker{ctx: ctx, root: root, dirs: map[string]bool{".": true}, buf: make([]byte, copyBufferSize)}
	in := &ctxReader{ctx: ctx, r: tarStream}
	tr := tar.NewReader(in)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			// Read what follows the end-of-archive blocks too (GNU tar pads
			// to a whole record): a writer on a pipe is not left blocked,
			// and a compressed stream is read to its checksum.
			if _, err := io.Copy(io.Discard, in); err != nil {
				return u.st, fmt.Errorf("unpack into %s: %w", dir, err)
			}
			break
		}
		if err != nil {
			return u.st, fmt.Errorf("unpack into %s: %w", dir, err)
		}
		if err := u.member(hdr, tr); err != nil {
			return u.st, fmt.Errorf("unpack into %s: %w", dir, err)
		}
	}
	// Folders last, deepest first: writing into a folder changes its time.
	slices.SortFunc(u.dirTimes, func(a, b dirTime) int { return strings.Compare(b.name, a.name) })
	for _, d := range u.dirTimes {
		if err := root.Chmod(d.name, d.mode); err != nil {
			return u.st, fmt.Errorf("unpack into %s: %w", dir, err)
		}
		if err := root.Chtimes(d.name, d.atime, d.mtime); err != nil {
			return u.st, fmt.Errorf("unpack into %s: %w", dir, err)
		}
	}
	return u.st, nil
}

type unpacker struct {
	ctx      context.Context
	root     *os.Root
	dirs     map[string]bool // folders known to be real folders (not links)
	dirTimes []dirTime
	buf      []byte
	st       UnpackStats
}

type dirTime struct {
	name         string
	mode         fs.FileMode
	atime, mtime time.Time
}

// memberName returns the member's name relative to the folder ("." for
// the folder itself), or ErrUnsafe.
func memberName(raw string) (string, error) {
	if raw == "" || strings.ContainsRune(raw, 0) {
		return "", fmt.Errorf("%w: empty name or NUL byte in %q", ErrUnsafe, raw)
	}
	if strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("%w %q: absolute name", ErrUnsafe, raw)
	}
	for _, c := range strings.Split(raw, "/") {
		if c == ".." {
			return "", fmt.Errorf("%w %q: '..' in the name", ErrUnsafe, raw)
		}
	}
	return path.Clean(raw), nil
}

func (u *unpacker) member(hdr *tar.Header, r io.Reader) error {
	name, err := memberName(hdr.Name)
	if err != nil {
		return err
	}
	if err := u.parentsAreFolders(name); err != nil {
		return err
	}
	mode := fs.FileMode(hdr.Mode).Perm()
	if hdr.Mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if name != "." {
			if err := u.makeFolder(name); err != nil {
				return err
			}
		}
		u.dirTimes = append(u.dirTimes, dirTime{name: name, mode: mode, atime: atime, mtime: hdr.ModTime})
		u.st.Dirs++
		return nil
	case tar.TypeReg, tar.TypeGNUSparse:
		// Into a fresh folder the exclusive create succeeds at once; only
		// when something is there is it looked at and removed. Each path
		// operation through the root costs a lookup per component, so the
		// mode is set on the open file.
		f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			if err := u.clear(name); err != nil {
				return err
			}
			f, err = u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if err != nil {
			return err
		}
		n, err := io.CopyBuffer(f, r, u.buf)
		if err == nil {
			err = f.Chmod(mode)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := u.root.Chtimes(name, atime, hdr.ModTime); err != nil {
			return err
		}
		u.st.Files++
		u.st.Bytes += n
		return nil
	case tar.TypeSymlink:
		if err := checkLinkTarget(name, hdr.Linkname); err != nil {
			return err
		}
		if err := u.clear(name); err != nil {
			return err
		}
		if err := u.root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		u.st.Symlinks++
		return nil
	case tar.TypeLink:
		target, err := memberName(hdr.Linkname)
		if err != nil {
			return fmt.Errorf("%w %q: hard link to %q outside the folder", ErrUnsafe, hdr.Name, hdr.Linkname)
		}
		if err := u.parentsAreFolders(target); err != nil {
			return err
		}
		if fi, err := u.root.Lstat(target); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("%w %q: hard link to %q, which is not a file unpacked before it", ErrUnsafe, hdr.Name, hdr.Linkname)
		}
		if err := u.clear(name); err != nil {
			return err
		}
		if err := u.root.Link(target, name); err != nil {
			return err
		}
		u.st.Links++
		return nil
	case tar.TypeFifo:
		u.st.Skipped++
		return nil
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("%w %q: device file", ErrUnsafe, hdr.Name)
	default:
		return fmt.Errorf("%w %q: unknown member type %q", ErrUnsafe, hdr.Name, hdr.Typeflag)
	}
}

// parentsAreFolders returns ErrUnsafe when a folder on name's path exists
// as anything but a real folder, and creates those missing.
func (u *unpacker) parentsAreFolders(name string) error {
	parent := path.Dir(name)
	if u.dirs[parent] {
		return nil
	}
	if err := u.parentsAreFolders(parent); err != nil {
		return err
	}
	return u.makeFolder(parent)
}

// makeFolder makes name a folder (owner-writable until its mode is set at
// the end), keeping one that exists; anything else there is ErrUnsafe.
func (u *unpacker) makeFolder(name string) error {
	if u.dirs[name] {
		return nil
	}
	fi, err := u.root.Lstat(name)
	switch {
	case err == nil && fi.IsDir():
	case err == nil:
		return fmt.Errorf("%w %q: a %s is where a folder goes", ErrUnsafe, name, kind(fi.Mode()))
	case errors.Is(err, fs.ErrNotExist):
		if err := u.root.Mkdir(name, 0o755); err != nil {
			return err
		}
	default:
		return err
	}
	u.dirs[name] = true
	return nil
}

// clear removes what is at name so a file or link can be written there; a
// folder is ErrUnsafe.
func (u *unpacker) clear(name string) error {
	if name == "." {
		return fmt.Errorf("%w: the folder itself as a file or link", ErrUnsafe)
	}
	fi, err := u.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%w %q: a folder is where a file or link goes", ErrUnsafe, name)
	}
	return u.root.Remove(name)
}

// checkLinkTarget refuses a symbolic link whose target, read as text from
// the link's folder, is absolute or leaves the folder being unpacked.
func checkLinkTarget(name, target string) error {
	if target == "" || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%w %q: empty link target", ErrUnsafe, name)
	}
	if strings.HasPrefix(target, "/") {
		return fmt.Errorf("%w %q: link to the absolute path %q", ErrUnsafe, name, target)
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("%w %q: link to %q, outside the folder", ErrUnsafe, name, target)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsRegular():
		return "file"
	default:
		return "special file"
	}
}
