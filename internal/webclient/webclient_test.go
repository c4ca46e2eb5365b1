package webclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func TestHandler(t *testing.T) {
	h := Handler()
	cases := []struct {
		path, contentType, contains string
	}{
		{"/sandman.js", "text/javascript", "export function connect("},
		{"/console/", "text/html", `<script type="module" src="console.js">`},
		{"/console/console.js", "text/javascript", `from "./api.js"`},
		{"/console/console.css", "text/css", "@media"},
		{"/console/preview.html", "text/html", `<script type="module" src="preview.js">`},
		{"/console/preview.js", "text/javascript", `from "/sandman.js"`},
		{"/console/preview.css", "text/css", ".sleeping"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			res := get(t, h, http.MethodGet, c.path)
			body, _ := io.ReadAll(res.Body)
			if got, want := res.StatusCode, http.StatusOK; got != want {
				t.Fatalf("status = %d, want %d", got, want)
			}
			if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, c.contentType) {
				t.Errorf("Content-Type = %q, want %s", got, c.contentType)
			}
			if got, want := res.Header.Get("X-Content-Type-Options"), "nosniff"; got != want {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			if !strings.Contains(string(body), c.contains) {
				t.Errorf("body does not contain %q", c.contains)
			}
		})
	}
	t.Run("RedirectConsole", func(t *testing.T) {
		res := get(t, h, http.MethodGet, "/console")
		if got, want := res.StatusCode, http.StatusMovedPermanently; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
		if got, want := res.Header.Get("Location"), "/console/"; got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
	})
	for _, path := range []string{"/", "/static/sandman.js", "/console/missing.js", "/v1/sessions"} {
		t.Run("NotFound"+path, func(t *testing.T) {
			if got, want := get(t, h, http.MethodGet, path).StatusCode, http.StatusNotFound; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
		})
	}
	t.Run("PostRefused", func(t *testing.T) {
		if got, want := get(t, h, http.MethodPost, "/sandman.js").StatusCode, http.StatusMethodNotAllowed; got != want {
			t.Errorf("status = %d, want %d", got, want)
		}
	})
}
