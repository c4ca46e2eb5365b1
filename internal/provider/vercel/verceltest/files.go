package verceltest

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// The file API of a running session (docs/providers/vercel.md "Files"),
// on the session's files; a session that is not running answers as every
// session call does (410 sandbox_stopped, 422):
//   - POST /v2/sandboxes/sessions/{id}/fs/read {"path","cwd"?} answers the
//     file's bytes as application/octet-stream, or an empty 404 when it
//     does not exist; a relative path is taken from cwd, else the session's
//     /vercel/sandbox;
//   - POST /v2/sandboxes/sessions/{id}/fs/write, a gzipped tar
//     (Content-Type application/gzip) of files, each written under the
//     folder the x-cwd header names ("/" when absent), folders made, a
//     file there replaced; other members are ignored, as Vercel's mock
//     does. It answers {}; a body that is not a gzipped tar is a 400, and
//     nothing is written.
//
// The workspace archive's command lines, which make and read such files,
// run on the same sandboxfs.Mem (commands.go).
const (
	OpFileRead  Op = "fs-read"
	OpFileWrite Op = "fs-write"
)

const sessionCwd = "/vercel/sandbox"

func (s *Server) fileRoutes(mux *http.ServeMux) {
	mux.Handle("POST /v2/sandboxes/sessions/{id}/fs/read", s.api(OpFileRead, s.readFile))
	mux.Handle("POST /v2/sandboxes/sessions/{id}/fs/write", s.api(OpFileWrite, s.writeFiles))
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil || notRunning(w, se) {
		return
	}
	var body struct {
		Path string `json:"path"`
		Cwd  string `json:"cwd"`
	}
	if !decode(w, r, &body, false, "path", "cwd") {
		return
	}
	p := body.Path
	if !path.IsAbs(p) {
		p = path.Join(cmp.Or(body.Cwd, sessionCwd), p)
	}
	b, ok := se.files.Apply(sandboxfs.Op{Read: true, Path: path.Clean(p)})
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}

func (s *Server) writeFiles(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil || notRunning(w, se) {
		return
	}
	type file struct {
		path string
		data []byte
	}
	var files []file
	err := func() error {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/gzip" {
			return errors.New("content-type must be application/gzip")
		}
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			return err
		}
		tr := tar.NewReader(gz)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				b, err := io.ReadAll(tr)
				if err != nil {
					return err
				}
				files = append(files, file{path.Join(cmp.Or(r.Header.Get("X-Cwd"), "/"), hdr.Name), b})
			}
		}
	}()
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid body: "+err.Error())
		return
	}
	for _, f := range files {
		se.files.Apply(sandboxfs.Op{Path: f.path, Data: f.data})
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{})
}

// Paths lists the files under dir ("/" for all) in session sessionID,
// sorted (nil for an unknown session).
func (s *Server) Paths(sessionID, dir string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[sessionID]; ok {
		return se.files.Paths(dir)
	}
	return nil
}
