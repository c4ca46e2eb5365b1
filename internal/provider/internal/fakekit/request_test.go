package fakekit_test

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestPreviewOf(t *testing.T) {
	for _, c := range []struct {
		host, path string
		port       int
		id         string
		ok         bool
	}{
		{"3000-abc.p.test", "/x", 3000, "abc", true},
		{"127.0.0.1:80", "/preview/5173-abc/index.html", 5173, "abc", true},
		{"127.0.0.1:80", "/preview/nope/", 0, "", false},
		{"127.0.0.1:80", "/sandbox/abc", 0, "", false},
	} {
		r := httptest.NewRequest("GET", c.path, nil)
		r.Host = c.host
		port, id, ok := fakekit.PreviewOf(r, "p.test")
		if ok != c.ok || port != c.port || id != c.id {
			t.Errorf("PreviewOf(%s%s) = %d %q %v, want %d %q %v", c.host, c.path, port, id, ok, c.port, c.id, c.ok)
		}
	}
}

func TestJSONFields(t *testing.T) {
	type body struct {
		A      string `json:"a,omitempty"`
		B      int
		Hidden int `json:"-"`
		_      int
	}
	if got, want := fakekit.JSONFields(&body{}), []string{"a", "B"}; !slices.Equal(got, want) {
		t.Errorf("JSONFields = %v, want %v", got, want)
	}
}
