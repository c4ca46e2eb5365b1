package fakekit_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestSplitFields(t *testing.T) {
	known, unknown, err := fakekit.SplitFields([]byte(`{"templateID":"a","TemplateID":"b","zeta":1,"alpha":{}}`), "templateID")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(known), `{"templateID":"a"}`; got != want {
		t.Errorf("known = %s, want %s", got, want)
	}
	if want := []string{"TemplateID", "alpha", "zeta"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown = %v, want %v (case-sensitive, sorted)", unknown, want)
	}
	for _, bad := range []string{"", "[1]", "nope"} {
		if _, _, err := fakekit.SplitFields([]byte(bad)); err == nil {
			t.Errorf("SplitFields(%q) succeeded, want an error", bad)
		}
	}
}

func TestReadBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", fakekit.MaxBody)))
	if b, err := fakekit.ReadBody(httptest.NewRecorder(), r); err != nil || len(b) != fakekit.MaxBody {
		t.Errorf("a body of MaxBody bytes: %d bytes, %v", len(b), err)
	}
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", fakekit.MaxBody+1)))
	if _, err := fakekit.ReadBody(httptest.NewRecorder(), r); err == nil {
		t.Error("a body over MaxBody was read")
	}
}

func TestWriteJSON(t *testing.T) {
	w := httptest.NewRecorder()
	fakekit.WriteJSON(w, http.StatusCreated, map[string]int{"a": 1})
	if w.Code != http.StatusCreated || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != "{\"a\":1}\n" {
		t.Errorf("answer = %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	w = httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fakekit.WriteJSON(w, http.StatusOK, nil)
	if got := w.Header().Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q, want the handler's own", got)
	}
}

func TestFaults(t *testing.T) {
	var p fakekit.Faults[string, int]
	if _, ok := p.Next("get"); ok {
		t.Fatal("the zero plan served a fault")
	}
	p.Queue("any", 9)
	p.Queue("get", 1, 2)
	stop := p.Stand("get", 7)
	var got []int
	for range 5 {
		f, _ := p.Next("get", "any")
		got = append(got, f)
	}
	if want := []int{1, 2, 9, 7, 7}; !slices.Equal(got, want) {
		t.Errorf("faults = %v, want %v (queued own, queued any, then standing)", got, want)
	}
	stop()
	if f, ok := p.Next("get", "any"); ok {
		t.Errorf("after stop: fault %d, want none", f)
	}
}

func TestListenPorts(t *testing.T) {
	for _, c := range []struct {
		line, port string
		want       []int
	}{
		{"npm run dev", "3000", []int{3000}},
		{"python3 -m http.server 8000", "3000", []int{3000}},
		{"python3 -m http.server 3000", "", []int{3000}},
		{"cd '/app' && env 'A=1' PORT=5173 sh -c 'npm run dev'", "", []int{5173}},
		{"next dev -p 3000 --hostname 0.0.0.0", "", []int{3000}},
		{"serve --port=8080", "", []int{8080}},
		{"gunicorn -b 0.0.0.0:5000 app:app", "", []int{5000}},
		{"python3.13 -m http.server 3000 3001", "", []int{3000, 3001}},
		{"node24 server.js", "", nil},
		{"exit 3", "", nil},
		{"listen 70000", "", nil},
	} {
		if got := fakekit.ListenPorts(c.line, c.port); !slices.Equal(got, c.want) {
			t.Errorf("ListenPorts(%q, %q) = %v, want %v", c.line, c.port, got, c.want)
		}
	}
}
