package e2btest

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// OpFiles is envd's file API (docs/providers/e2b.md "Checkpoints"):
// POST <proxy>/{id}/files?path=P with a multipart/form-data body writes
// each part named "file" to the sandbox's files, at P, else at the part's
// file name (both relative to /home/user unless absolute), making its
// folders and replacing a file there; it answers 200 with
// [{"path","name","type":"file"}]. A body that is not multipart is a 400
// (as envd before 0.5.7, which the fake reports, takes no raw body), and
// so is a path that is a folder. The workspace archive's command lines,
// which make and read such files, run on sandboxfs.Mem (process.go).
const OpFiles Op = "files"

const homeDir = "/home/user"

func (s *Server) uploadFiles(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		fakekit.WriteJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": "error parsing multipart form: " + err.Error()})
		return
	}
	type upload struct {
		path string
		data []byte
	}
	var ups []upload
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fakekit.WriteJSON(w, http.StatusInternalServerError, map[string]any{"code": 500, "message": "error reading form: " + err.Error()})
			return
		}
		if part.FormName() != "file" {
			continue
		}
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		p := r.URL.Query().Get("path")
		if p == "" {
			p = params["filename"]
		}
		if !path.IsAbs(p) {
			p = path.Join(homeDir, p)
		}
		b, err := io.ReadAll(part)
		if err != nil {
			fakekit.WriteJSON(w, http.StatusInternalServerError, map[string]any{"code": 500, "message": "error writing file: " + err.Error()})
			return
		}
		ups = append(ups, upload{path.Clean(p), b})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.runningSandbox(w, r)
	if sb == nil {
		return
	}
	out := []map[string]string{}
	for _, u := range ups {
		if len(files(sb).Paths(u.path)) > 0 {
			fakekit.WriteJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": "path is a directory: " + u.path})
			return
		}
		files(sb).Apply(sandboxfs.Op{Path: u.path, Data: u.data})
		out = append(out, map[string]string{"path": u.path, "name": path.Base(u.path), "type": "file"})
	}
	fakekit.WriteJSON(w, http.StatusOK, out)
}
