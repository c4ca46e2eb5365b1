package archive

import (
	"archive/tar"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// PackStats counts what PackTar or Pack wrote.
type PackStats struct {
	Files    int   // regular files
	Dirs     int   // folders, the top one included
	Symlinks int   // symbolic links
	Bytes    int64 // regular files' content, in bytes
	Excluded int   // members an exclude pattern left out (an excluded folder counts once)
	Skipped  int   // sockets, named pipes and device files, never archived
	Changed  int   // files whose size changed while read (stored as long as they first were)
	Written  int64 // bytes written to the destination
}

// copyBufferSize is the read size of a file's content: large enough that a
// big file costs few system calls.
const copyBufferSize = 256 << 10

// PackTar writes an uncompressed tar stream of dir to w, leaving out what
// ex excludes: the pure-Go twin of TarCommand, for the local provider and
// the tests. Members are named as GNU tar names them with `-C dir .`
// ("./", "./src/", "./src/app.js"), in lexical order, with their
// permission bits, owner ids and modification time (whole seconds);
// symbolic links keep their target; a file with several hard links is
// stored once per name. Sockets, named pipes and device files are skipped
// and counted. A file that grows or shrinks while read is stored at the
// size it had when it was reached (padded with zero bytes if it shrank)
// and counted in Changed, as GNU tar does. ctx is checked between reads.
func PackTar(ctx context.Context, w io.Writer, dir string, ex Excludes) (PackStats, error) {
	cw := &countingWriter{w: w}
	st, err := packTar(ctx, cw, dir, ex)
	st.Written = cw.n
	return st, err
}

// Pack writes dir to w as a tar stream compressed with zstd, the object a
// Store keeps: PackTar in one goroutine, its stream through a chunkPipe
// (up to 4 MiB ahead) into Compress in another, which compresses each
// block in goroutines of its own, so that reading the files and
// compressing overlap as `tar | zstd` and the sandbox path (TarCommand's
// stdout into Compress) do. PackStats.Written counts the compressed bytes.
func Pack(ctx context.Context, w io.Writer, dir string, ex Excludes) (PackStats, error) {
	p := newChunkPipe(packChunks, packChunkSize)
	done := make(chan struct{})
	var st PackStats
	var packErr error
	go func() {
		defer close(done)
		st, packErr = packTar(ctx, p, dir, ex)
		p.closeWrite(packErr)
	}()
	cw := &countingWriter{w: w}
	_, err := Compress(cw, p)
	// A failed write to w stops the walk too.
	p.closeRead(cmp.Or(err, errors.New("archive: the compressor stopped reading")))
	<-done
	st.Written = cw.n
	if packErr != nil {
		return st, packErr
	}
	if err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	return st, nil
}

func packTar(ctx context.Context, w io.Writer, dir string, ex Excludes) (PackStats, error) {
	var st PackStats
	info, err := os.Stat(dir)
	if err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	if !info.IsDir() {
		return st, fmt.Errorf("pack %s: not a folder", dir)
	}
	tw := tar.NewWriter(w)
	buf := make([]byte, copyBufferSize)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ex.Match(rel) {
			st.Excluded++
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the folder was listed, as tar does
		}
		if err != nil {
			return err
		}
		name := "./"
		if rel != "." {
			name += rel
		}
		hdr := &tar.Header{
			Name:    name,
			Mode:    tarMode(fi.Mode()),
			ModTime: fi.ModTime(),
		}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(sys.Uid), int(sys.Gid)
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			hdr.Typeflag = tar.TypeDir
			if rel != "." {
				hdr.Name += "/"
			}
			st.Dirs++
			return tw.WriteHeader(hdr)
		case m&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
			st.Symlinks++
			return tw.WriteHeader(hdr)
		case m.IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
			changed, err := packFile(ctx, tw, hdr, p, buf)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			if changed {
				st.Changed++
			}
			st.Files++
			st.Bytes += hdr.Size
			return nil
		default:
			st.Skipped++
			return nil
		}
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return st, fmt.Errorf("pack %s: %w", dir, err)
	}
	return st, nil
}

// packFile writes hdr and exactly hdr.Size bytes of the file at p: what it
// holds, cut short or padded with zeros when its size changed since it was
// listed (changed is then true). The file is opened before the header is
// written, so a file gone meanwhile is left out whole. Each read asks for
// one byte more than is left to store: a read that brings it says the file
// grew, and a short read with nothing left says it ended where it was
// listed to (a regular file reads short only at its end), so a small file
// costs one read, not a second one to find its end.
func packFile(ctx context.Context, tw *tar.Writer, hdr *tar.Header, p string, buf []byte) (changed bool, err error) {
	f, err := openFile(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return false, err
	}
	left := hdr.Size
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		want := min(int64(len(buf)), left+1)
		n, err := f.Read(buf[:want])
		if n > 0 {
			k := min(int64(n), left)
			if _, err := tw.Write(buf[:k]); err != nil {
				return false, err
			}
			left -= k
			if int64(n) > k {
				return true, nil // it grew
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, err
		}
		if left == 0 && int64(n) < want {
			return false, nil
		}
	}
	if left > 0 {
		if _, err := io.CopyBuffer(tw, io.LimitReader(zeros{}, left), buf); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// file is a file opened for reading with plain system calls: os.Open
// also offers every file to the runtime's poller and sets and clears its
// non-blocking mode, five more calls per file, which a walk of thousands of
// small files pays for.
type file struct {
	fd   int
	name string
}

// openFile opens the file at p for reading. Errors: *fs.PathError (one
// gone is fs.ErrNotExist).
func openFile(p string) (file, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return file{}, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return file{fd: fd, name: p}, nil
	}
}

// Read reads into b; io.EOF at the file's end.
func (f file) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f file) Close() error { return syscall.Close(f.fd) }

// tarMode returns the tar mode bits of m: permissions, plus the setuid,
// setgid and sticky bits.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// ctxReader fails reads once ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
