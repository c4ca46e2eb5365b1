package sandboxfs

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
)

// A Mem holds regular files only: a folder exists while a file is under
// it, and every file and folder has one mode, owner and time. So Tar makes
// what GNU tar would of such a tree, and Untar keeps the files of an
// archive (hard links as copies) and checks, but drops, its folders and
// symbolic links.
const (
	memFileMode = 0o644
	memDirMode  = 0o755
	memOwner    = 1000 // E2B's and the fakes' "user"
)

// memTime is every member's modification time.
var memTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrNoFolder is Tar's error for a folder that holds no file.
var ErrNoFolder = errors.New("sandboxfs: no such folder")

// Tar writes a tar stream of the folder dir to w as archive.TarCommand's
// GNU tar names its members ("./", "./src/", "./src/app.js"), folders
// before what they hold, in name order, leaving out what ex excludes (an
// excluded folder with everything under it). Errors: ErrNoFolder when no
// file is under dir, w's.
func (m *Mem) Tar(w io.Writer, dir string, ex archive.Excludes) error {
	dir = path.Clean(dir)
	paths := m.Paths(dir)
	if len(paths) == 0 {
		return fmt.Errorf("%w: %s", ErrNoFolder, dir)
	}
	files := map[string][]byte{}
	entries := map[string]bool{".": true} // rel → is a folder
	for _, p := range paths {
		rel := strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			if !excluded(ex, d) {
				entries[d] = true
			}
		}
		if !excluded(ex, rel) {
			entries[rel] = false
			files[rel], _ = m.Apply(Op{Read: true, Path: p})
		}
	}
	names := slices.SortedFunc(maps.Keys(entries), func(a, b string) int {
		return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
	})
	tw := tar.NewWriter(w)
	for _, rel := range names {
		hdr := &tar.Header{Name: "./" + strings.TrimPrefix(rel, "."), Typeflag: tar.TypeDir, Mode: memDirMode,
			Uid: memOwner, Gid: memOwner, ModTime: memTime}
		if rel != "." && entries[rel] {
			hdr.Name += "/"
		}
		if !entries[rel] {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, memFileMode, int64(len(files[rel]))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(files[rel]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// excluded reports whether ex leaves out rel or a folder above it.
func excluded(ex archive.Excludes, rel string) bool {
	for p := rel; p != "."; p = path.Dir(p) {
		if ex.Match(p) {
			return true
		}
	}
	return false
}

// Untar writes the files of the tar stream r into the folder dir, under
// archive.UnpackTar's refusals (archive.Checker), reading r to its end.
// A file replaces the one at its path; a member where a folder of m's
// stands, or under one of m's files, is refused too. As with UnpackTar,
// the members before a refused one stay written. Errors: archive.ErrUnsafe
// (wrapped), a damaged or truncated stream, an empty one (as CheckTar), r's.
func (m *Mem) Untar(r io.Reader, dir string) error {
	dir = strings.TrimSuffix(path.Clean(dir), "/")
	tr := tar.NewReader(r)
	var ck archive.Checker
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF) && n == 0:
			return fmt.Errorf("untar into %s: no member: %w", dir, io.ErrUnexpectedEOF)
		case errors.Is(err, io.EOF):
			_, err = io.Copy(io.Discard, r)
			return err
		case err != nil:
			return fmt.Errorf("untar into %s: %w", dir, err)
		}
		name, write, err := ck.Member(hdr)
		if err != nil {
			return fmt.Errorf("untar into %s: %w", dir, err)
		}
		p := path.Join(dir, name)
		if err := m.fitsIn(p, hdr.Typeflag == tar.TypeDir); err != nil {
			return fmt.Errorf("untar into %s: %w %q: %v", dir, archive.ErrUnsafe, hdr.Name, err)
		}
		switch {
		case !write:
		case hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeGNUSparse:
			b, err := io.ReadAll(tr)
			if err != nil {
				return fmt.Errorf("untar into %s: %w", dir, err)
			}
			m.Apply(Op{Path: p, Data: b})
		case hdr.Typeflag == tar.TypeLink: // a copy: Mem has no links
			b, _ := m.Apply(Op{Read: true, Path: path.Join(dir, path.Clean(hdr.Linkname))})
			m.Apply(Op{Path: p, Data: b})
		}
	}
}

// fitsIn refuses a member at p that m's own files contradict: a folder
// where a file is, a file where a folder is, anything under a file.
func (m *Mem) fitsIn(p string, folder bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
		if _, ok := m.files[d]; ok {
			return fmt.Errorf("a file is where its folder %s goes", d)
		}
	}
	_, isFile := m.files[p]
	hasUnder := false
	for q := range m.files {
		if strings.HasPrefix(q, p+"/") {
			hasUnder = true
			break
		}
	}
	switch {
	case folder && isFile:
		return errors.New("a file is where a folder goes")
	case !folder && hasUnder:
		return errors.New("a folder is where a file goes")
	}
	return nil
}

// runArchive carries out an archive line (ParseArchive) on m as the
// sandbox's shell and GNU tar would, for Run: an export prints the tar
// (Tar; exit 2 without the folder) or writes it to its file; an import
// unpacks the concatenated parts (Untar; exit 2 on a refusal or a damaged
// stream) and removes them; a remove deletes the path and all under it.
func (m *Mem) runArchive(op ArchiveOp) (stdout []byte, exit int) {
	switch op.Kind {
	case "export":
		ex, err := archive.ParseExcludes(op.Excludes)
		var buf bytes.Buffer
		if err == nil {
			err = m.Tar(&buf, op.Dir, ex)
		}
		switch {
		case err != nil:
			return nil, 2
		case op.Path == "":
			return buf.Bytes(), 0
		}
		m.Apply(Op{Path: op.Path, Data: buf.Bytes()})
		return nil, 0
	case "import":
		var parts []io.Reader
		for _, p := range m.Paths(op.Path) {
			if strings.HasPrefix(path.Base(p), "part-") && path.Dir(p) == op.Path {
				b, _ := m.Apply(Op{Read: true, Path: p})
				parts = append(parts, bytes.NewReader(b))
			}
		}
		err := m.Untar(io.MultiReader(parts...), op.Dir)
		m.remove(op.Path)
		if err != nil {
			return nil, 2
		}
		return nil, 0
	}
	m.remove(op.Path)
	return nil, 0
}

// remove deletes the file p and every file under it.
func (m *Mem) remove(p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for q := range m.files {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(m.files, q)
		}
	}
}
