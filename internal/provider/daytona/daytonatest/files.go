package daytonatest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// The toolbox's file API (docs/providers/daytona.md "Checkpoints"), on the
// sandbox's files (a started sandbox only, as every toolbox call):
//   - GET /files/download?path=P answers the file's bytes
//     (application/octet-stream); 400 without a path or for a folder, 404
//     for a missing file;
//   - POST /files/bulk-upload, multipart/form-data: a field files[i].path
//     names where the following part files[i].file goes (folders made, a
//     file there replaced); 200 {"files":[{"path","bytes"}]}, or 400
//     {"errors":[…],"files":[…]} naming what failed (a file part without
//     its path, a path that is a folder), the others still written.
//
// The workspace archive's command lines, which make and read such files,
// run on the same sandboxfs.Mem (toolbox.go).

func (s *Server) fileRoutes(route func(pattern string, h func(http.ResponseWriter, *http.Request))) {
	route("GET /files/download", s.download)
	route("POST /files/bulk-upload", s.bulkUpload)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	sb := s.started(w, r)
	if sb == nil {
		return
	}
	p := r.URL.Query().Get("path")
	b, ok := sb.fs().Apply(sandboxfs.Op{Read: true, Path: path.Clean(p)})
	switch {
	case p == "" || len(sb.fs().Paths(path.Clean(p))) > 0:
		s.writeError(w, r, http.StatusBadRequest, "path must be a file")
	case !ok:
		s.writeError(w, r, http.StatusNotFound, "stat "+p+": no such file or directory")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", "attachment; filename="+path.Base(p))
		_, _ = w.Write(b)
	}
}

func (s *Server) bulkUpload(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		s.writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []string{"invalid multipart form"}})
		return
	}
	sb := s.started(w, r)
	if sb == nil {
		return
	}
	dests := map[string]string{}
	errs, files := []string{}, []map[string]any{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("reading part: %v", err))
			break
		}
		name := part.FormName()
		idx := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(name, "files["), "].path"), "].file")
		b, err := io.ReadAll(part)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		case strings.HasSuffix(name, ".path"):
			dests[idx] = strings.TrimSpace(string(b))
		case !strings.HasSuffix(name, ".file"):
		case dests[idx] == "":
			errs = append(errs, fmt.Sprintf("file[%s]: missing .path metadata", idx))
		case len(sb.fs().Paths(path.Clean(dests[idx]))) > 0:
			errs = append(errs, fmt.Sprintf("%s: rename: is a directory", dests[idx]))
		default:
			sb.fs().Apply(sandboxfs.Op{Path: path.Clean(dests[idx]), Data: b})
			files = append(files, map[string]any{"path": dests[idx], "bytes": len(b)})
		}
	}
	if len(errs) > 0 {
		s.writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs, "files": files})
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"files": files})
}

// Paths lists the files under dir ("/" for all) in sandboxID, sorted (nil
// for an unknown sandbox).
func (s *Server) Paths(sandboxID, dir string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb, ok := s.sandboxes.Get(sandboxID); ok {
		return sb.fs().Paths(dir)
	}
	return nil
}
