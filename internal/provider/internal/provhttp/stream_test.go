package provhttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// TestOpen streams a multipart body up and an answer down, returns a
// refusal read in full, tells a failing body from no answer, and makes
// no answer transient.
func TestOpen(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"message":"no"}`)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var got []string
		for {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(p)
			got = append(got, p.FormName()+"|"+p.FileName()+"|"+string(b)) // FileName: the base name
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = io.WriteString(w, strings.Join(got, ";"))
	}))
	defer srv.Close()
	rq := provhttp.Request{Op: "import_tar", SandboxID: "sb1", Method: http.MethodPost, URL: srv.URL + "/up", MaxBody: 1 << 10}

	body, ctype := provhttp.MultipartBody([][2]string{{"files[0].path", "/tmp/p"}}, "files[0].file", "/tmp/p",
		iotest.OneByteReader(strings.NewReader("tar bytes")))
	resp, _, err := provhttp.Open(t.Context(), srv.Client(), rq, body, ctype)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "files[0].path||/tmp/p;files[0].file|p|tar bytes"; string(got) != want {
		t.Errorf("the server read %q, want %q", got, want)
	}

	refused := rq
	refused.URL = srv.URL + "/refuse"
	if resp, r, err := provhttp.Open(t.Context(), srv.Client(), refused, nil, ""); err != nil || resp != nil || r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "no") {
		t.Errorf("a refusal: %v %+v %v", resp, r, err)
	}

	boom := errors.New("not a whole tar stream")
	body, ctype = provhttp.MultipartBody(nil, "file", "/tmp/p", io.MultiReader(strings.NewReader("x"), iotest.ErrReader(boom)))
	_, _, err = provhttp.Open(t.Context(), srv.Client(), rq, body, ctype)
	if !errors.Is(err, boom) || errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Errorf("a failing body: %v, want its own error, not transient", err)
	}

	srv.Close()
	if _, _, err := provhttp.Open(t.Context(), srv.Client(), rq, strings.NewReader("x"), "application/gzip"); !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Errorf("no answer: %v, want transient", err)
	}
}

// TestDownload copies an answer to a writer, passes the writer's own
// failure through, and makes a body that breaks off transient.
func TestDownload(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/short" {
			w.Header().Set("Content-Length", "100")
		}
		_, _ = io.WriteString(w, "tar bytes")
	}))
	defer srv.Close()
	open := func(path string) *http.Response {
		resp, _, err := provhttp.Open(t.Context(), srv.Client(), provhttp.Request{Op: "export_tar", SandboxID: "sb1",
			Method: http.MethodGet, URL: srv.URL + path, MaxBody: 1 << 10}, nil, "")
		if err != nil || resp == nil {
			t.Fatalf("Open: %v", err)
		}
		return resp
	}
	var buf strings.Builder
	if n, err := provhttp.Download(&buf, open("/"), "export_tar", "sb1"); n != 9 || err != nil || buf.String() != "tar bytes" {
		t.Errorf("Download = %d, %v, %q", n, err, buf.String())
	}
	full := errors.New("the store is full")
	if _, err := provhttp.Download(failingWriter{full}, open("/"), "export_tar", "sb1"); !errors.Is(err, full) || errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Errorf("Download into a failing writer: %v, want its error", err)
	}
	if _, err := provhttp.Download(io.Discard, open("/short"), "export_tar", "sb1"); !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Errorf("Download of a body cut short: %v, want transient", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }
