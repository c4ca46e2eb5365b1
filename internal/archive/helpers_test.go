package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// mtime is the modification time every fixture member gets (whole seconds,
// as tar keeps them).
var mtime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// mustTree writes a small workspace into dir: files of several modes,
// nested folders (one not writable by others, one read-only), an empty file
// and folder, names with spaces and quotes, relative symbolic links, a hard
// link, and the caches the default excludes leave out.
func mustTree(tb testing.TB, dir string) {
	tb.Helper()
	files := map[string]struct {
		body string
		mode fs.FileMode
	}{
		"package.json":                        {`{"name":"app"}`, 0o644},
		"run.sh":                              {"#!/bin/sh\necho hi\n", 0o755},
		"secret.env":                          {"TOKEN=x\n", 0o600},
		"src/app.js":                          {strings.Repeat("console.log('x');\n", 500), 0o644},
		"src/empty.txt":                       {"", 0o644},
		"src/it's a \"name\" with spaces.txt": {"quoted", 0o644},
		"ro/readonly.txt":                     {"ro", 0o444},
		"node_modules/.cache/big":             {"cache", 0o644},
		"node_modules/left-pad/index.js":      {"module.exports = 1\n", 0o644},
		".git/objects/pack/tmp_pack_1":        {"partial", 0o644},
		".git/HEAD":                           {"ref: refs/heads/main\n", 0o644},
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "empty", "deeper"), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "src", "app.js"), filepath.Join(dir, "src", "app-hardlink.js")); err != nil {
		tb.Fatal(err)
	}
	for link, target := range map[string]string{"current": "src", "src/pkg.json": "../package.json", "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			tb.Fatal(err)
		}
	}
	// Times last: writing into a folder changes its time.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, mtime, mtime)
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o555); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "ro"), 0o755) })
}

// entry is what a tree holds at one path, for comparing trees.
type entry struct {
	mode  fs.FileMode
	mtime int64 // seconds; 0 for symbolic links
	body  string
	link  string
}

// snapshot returns every path under dir (slash-separated, "." the top)
// with what it holds.
func snapshot(tb testing.TB, dir string) map[string]entry {
	tb.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode(), mtime: fi.ModTime().Unix()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.mtime = 0
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.body = string(b)
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// without returns snap less the given paths and everything under them.
func without(snap map[string]entry, paths ...string) map[string]entry {
	out := map[string]entry{}
	for k, v := range snap {
		drop := false
		for _, p := range paths {
			if k == p || strings.HasPrefix(k, p+"/") {
				drop = true
			}
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}

// sameTree fails the test with each path whose content differs.
func sameTree(tb testing.TB, got, want map[string]entry) {
	tb.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			tb.Errorf("%s: missing, want %+v", k, w)
		case !wok:
			tb.Errorf("%s: unexpected %+v", k, g)
		case g != w:
			tb.Errorf("%s: got %+v, want %+v", k, g, w)
		}
	}
}

// members lists the member names of a tar stream.
func members(tb testing.TB, tarStream []byte) []string {
	tb.Helper()
	tr := tar.NewReader(bytes.NewReader(tarStream))
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatalf("read tar: %v", err)
		}
		names = append(names, hdr.Name)
	}
	sort.Strings(names)
	return names
}

// tarOf builds a tar stream of the given headers; a regular file's body is
// its Linkname field's text unless Size is 0.
func tarOf(tb testing.TB, hdrs ...*tar.Header) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body, h.Linkname = h.Linkname, ""
			h.Size = int64(len(body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func newTarWriterForTest(w io.Writer) *tar.Writer { return tar.NewWriter(w) }

func regHeader(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: mtime}
}
