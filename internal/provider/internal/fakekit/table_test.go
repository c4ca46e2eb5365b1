package fakekit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestTable(t *testing.T) {
	type rec struct{ id string }
	var tb fakekit.Table[rec]
	if got := tb.All(); len(got) != 0 {
		t.Fatalf("the zero Table holds %v", got)
	}
	if got, want := tb.Next(), 1; got != want {
		t.Errorf("Next = %d, want %d", got, want)
	}
	for _, id := range []string{"c", "a", "b"} {
		tb.Put(id, &rec{id})
	}
	ids := func() []string {
		var out []string
		for _, r := range tb.All() {
			out = append(out, r.id)
		}
		return out
	}
	if got, want := ids(), []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("All = %v, want %v (creation order)", got, want)
	}
	tb.Delete("c")
	if _, ok := tb.Get("c"); ok {
		t.Error("Get found a deleted record")
	}
	tb.Put("c", &rec{"c"})
	if got, want := ids(), []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("All after re-putting c = %v, want %v (c keeps its place)", got, want)
	}
	if got, want := tb.Of("b"), 3; got != want {
		t.Errorf("Of(b) = %d, want %d", got, want)
	}
	if r, ok := tb.Get("a"); !ok || r.id != "a" {
		t.Errorf("Get(a) = %v, %v", r, ok)
	}
}

func TestHasAll(t *testing.T) {
	have := map[string]string{"env": "dev", "team": "a"}
	for _, c := range []struct {
		want map[string]string
		ok   bool
	}{{nil, true}, {map[string]string{"env": "dev"}, true}, {map[string]string{"env": "dev", "team": "a"}, true},
		{map[string]string{"env": "prod"}, false}, {map[string]string{"owner": ""}, false}} {
		if got := fakekit.HasAll(have, c.want); got != c.ok {
			t.Errorf("HasAll(%v) = %v, want %v", c.want, got, c.ok)
		}
	}
}

func TestReadObject(t *testing.T) {
	read := func(body string, optional bool) (map[string]int, []string, error) {
		var v struct {
			A int `json:"a"`
		}
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		unknown, err := fakekit.ReadObject(httptest.NewRecorder(), r, &v, optional, "a")
		return map[string]int{"a": v.A}, unknown, err
	}
	if v, unknown, err := read(`{"a":2,"A":3,"b":1}`, false); err != nil || v["a"] != 2 || !slices.Equal(unknown, []string{"A", "b"}) {
		t.Errorf("read = %v %v %v", v, unknown, err)
	}
	if _, _, err := read(" \n", true); err != nil {
		t.Errorf("an optional blank body: %v", err)
	}
	if _, _, err := read("", false); err == nil || errors.Is(err, fakekit.ErrTooLarge) {
		t.Errorf("a required blank body: %v, want a decoding error", err)
	}
	if _, _, err := read(`{"a":"x"}`, false); err == nil {
		t.Error("a known field of the wrong type decoded")
	}
	if _, _, err := read(strings.Repeat(" ", fakekit.MaxBody+1), true); !errors.Is(err, fakekit.ErrTooLarge) {
		t.Errorf("a body over MaxBody: %v, want ErrTooLarge", err)
	}
}

func TestPortHost(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		id   string
		ok   bool
	}{
		{"3000-abc.e2b.test", 3000, "abc", true},
		{"3000-abc.e2b.test:8080", 3000, "abc", true},
		{"3000-a-b.e2b.test", 3000, "a-b", true},
		{"abc.e2b.test", 0, "", false},
		{"x-abc.e2b.test", 0, "", false},
		{"3000-.e2b.test", 0, "", false},
		{"3000-abc.other.test", 0, "", false},
	} {
		port, id, ok := fakekit.PortHost(c.host, "e2b.test")
		if ok != c.ok || (ok && (port != c.port || id != c.id)) {
			t.Errorf("PortHost(%q) = %d %q %v, want %d %q %v", c.host, port, id, ok, c.port, c.id, c.ok)
		}
	}
	if got := fakekit.Hostname("[::1]:80"); got != "::1" {
		t.Errorf("Hostname = %q", got)
	}
	if got := fakekit.Hostname("localhost"); got != "localhost" {
		t.Errorf("Hostname = %q", got)
	}
}

func TestFault(t *testing.T) {
	for _, c := range []struct {
		f    fakekit.Fault
		want fakekit.Effect
	}{{fakekit.Fault{}, fakekit.Serve}, {fakekit.Fault{Status: 503}, fakekit.Answer},
		{fakekit.Fault{Status: 503, Lose: true}, fakekit.Lose}, {fakekit.Fault{Lose: true, Drop: true}, fakekit.Drop},
		{fakekit.Fault{Drop: true, Hang: true}, fakekit.Hang}} {
		if got := c.f.Effect(); got != c.want {
			t.Errorf("%+v.Effect() = %v, want %v", c.f, got, c.want)
		}
	}
	w := httptest.NewRecorder()
	if got, want := (fakekit.Fault{Status: 429, RetryAfter: "2"}).Prepare(w), "Too Many Requests"; got != want {
		t.Errorf("Prepare = %q, want %q", got, want)
	}
	if got := w.Header().Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q, want 2", got)
	}
	if got := (fakekit.Fault{Status: 500, Message: "boom"}).Prepare(httptest.NewRecorder()); got != "boom" {
		t.Errorf("Prepare = %q, want the Message", got)
	}
}

func TestNoSleep(t *testing.T) {
	if err := fakekit.NoSleep(context.Background(), 1<<62); err != nil {
		t.Errorf("NoSleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fakekit.NoSleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("NoSleep of a done ctx = %v", err)
	}
}

func TestSet(t *testing.T) {
	dst, five := 1, 5
	fakekit.Set(&dst, nil)
	if dst != 1 {
		t.Errorf("Set(nil) changed dst to %d", dst)
	}
	fakekit.Set(&dst, &five)
	if dst != 5 {
		t.Errorf("Set(&5) left dst %d", dst)
	}
}
