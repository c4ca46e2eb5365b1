package provhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

func TestRoundTrip(t *testing.T) {
	var got *http.Request
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r, string(b)
		w.Header().Set("X-Next-Token", "n1")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "0123456789")
	}))
	defer srv.Close()
	rq := provhttp.Request{Op: "pause", SandboxID: "sb1", Method: http.MethodPost, URL: srv.URL + "/x",
		Body: map[string]int{"a": 1}, Header: http.Header{"Authorization": {"Bearer k"}}, Timeout: time.Second, MaxBody: 4}

	t.Run("OK", func(t *testing.T) {
		r, err := provhttp.RoundTrip(t.Context(), srv.Client(), rq)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusTeapot || r.OK() || string(r.Body) != "0123" || r.Header.Get("X-Next-Token") != "n1" {
			t.Errorf("reply = %d %q %v, want 418, the first 4 bytes and the header", r.Status, r.Body, r.Header)
		}
		for k, want := range map[string]string{"Accept": "application/json", "Content-Type": "application/json", "Authorization": "Bearer k"} {
			if v := got.Header.Get(k); v != want {
				t.Errorf("header %s = %q, want %q", k, v, want)
			}
		}
		if gotBody != `{"a":1}` {
			t.Errorf("body = %q, want the JSON", gotBody)
		}
	})
	t.Run("NoBodyNoContentType", func(t *testing.T) {
		get := rq
		get.Method, get.Body = http.MethodGet, nil
		if _, err := provhttp.RoundTrip(t.Context(), srv.Client(), get); err != nil {
			t.Fatal(err)
		}
		if v := got.Header.Get("Content-Type"); v != "" {
			t.Errorf("Content-Type = %q on a request without a body", v)
		}
	})
	t.Run("NoAnswerIsTransient", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := provhttp.RoundTrip(ctx, srv.Client(), rq)
		if !errors.Is(err, lifecycle.ErrProviderTransient) || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want transient wrapping context.Canceled", err)
		}
	})
	t.Run("BadBodyIsPlain", func(t *testing.T) {
		bad := rq
		bad.Body = func() {}
		_, err := provhttp.RoundTrip(t.Context(), srv.Client(), bad)
		if err == nil || errors.Is(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "pause sandbox sb1: encode request") {
			t.Errorf("err = %v, want a plain encode error naming the call", err)
		}
	})
}

func TestSnippetAndDescribe(t *testing.T) {
	if got, want := provhttp.Snippet([]byte("  <html>  ")), "<html>"; got != want {
		t.Errorf("Snippet = %q, want %q", got, want)
	}
	if got := provhttp.Snippet([]byte(strings.Repeat("x", 300))); len(got) != 200+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("Snippet of 300 bytes = %d bytes, want 200 and the ellipsis", len(got))
	}
	if got, want := provhttp.Describe("list", ""), "list sandboxes"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if got, want := provhttp.Describe("pause", "sb1"), "pause sandbox sb1"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestOrDefaults(t *testing.T) {
	client, sleep, clock, log := provhttp.OrDefaults(nil, nil, nil, nil)
	if client == nil || client.Transport == nil || sleep == nil || clock == nil || log == nil {
		t.Fatalf("defaults not filled in: %v %v %v %v", client, sleep != nil, clock, log)
	}
	mine := &http.Client{}
	manual := lifecycle.NewManualClock(time.Unix(0, 0))
	if c, _, k, _ := provhttp.OrDefaults(mine, sleep, manual, log); c != mine || k != manual {
		t.Error("a set client or clock was replaced")
	}
}

// recordingGate is a lifecycle.CallGate that records what it is told and
// refuses attempts once refuse is set.
type recordingGate struct {
	attempts int
	statuses []int
	afters   []time.Duration
	refuse   error
}

func (g *recordingGate) Attempt(context.Context) error {
	g.attempts++
	return g.refuse
}

func (g *recordingGate) Answered(status int, after time.Duration) {
	g.statuses = append(g.statuses, status)
	g.afters = append(g.afters, after)
}

// TestRoundTripTellsTheCallGate: an attempt asks the ctx's gate first and
// tells it the answer's status and Retry-After; a gate that refuses keeps
// the attempt from being made and its error is the attempt's.
func TestRoundTripTellsTheCallGate(t *testing.T) {
	asked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked++
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	g := &recordingGate{}
	ctx := lifecycle.WithCallGate(context.Background(), g)
	rq := provhttp.Request{Op: "pause", SandboxID: "sb1", Method: http.MethodPost, URL: srv.URL, Timeout: time.Second, MaxBody: 64}
	if _, err := provhttp.RoundTrip(ctx, srv.Client(), rq); err != nil {
		t.Fatal(err)
	}
	if g.attempts != 1 || len(g.statuses) != 1 || g.statuses[0] != http.StatusTooManyRequests || g.afters[0] != 3*time.Second {
		t.Errorf("gate told attempts %d, statuses %v, Retry-After %v; want 1, [429], [3s]", g.attempts, g.statuses, g.afters)
	}
	g.refuse = errors.New("no token")
	if _, err := provhttp.RoundTrip(ctx, srv.Client(), rq); !errors.Is(err, g.refuse) || asked != 1 {
		t.Errorf("a refused attempt: err %v, the server asked %d times; want the gate's error and no request", err, asked)
	}
}
