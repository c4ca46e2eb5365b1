package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordingObserver asks to see GetItem's answers only, rewriting their
// body, and records the answers it is shown.
type recordingObserver struct {
	mu   sync.Mutex
	seen []string // op, state and status of each answer shown
}

func (o *recordingObserver) Request(op string, r *http.Request) any {
	if op != "GetItem" {
		return nil
	}
	body := []byte(`{"rewritten":true}`)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return "state-of-" + op
}

func (o *recordingObserver) Response(op string, state any, resp *http.Response) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, op+" "+state.(string)+" "+resp.Status)
}

// TestObservedProxyShowsTheObserverItsRequests: every request is counted;
// the observer's rewrite reaches the endpoint; only the requests whose
// Request returned a state have their answer shown to Response, with that
// state.
func TestObservedProxyShowsTheObserverItsRequests(t *testing.T) {
	var mu sync.Mutex
	var received []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, string(b))
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer backend.Close()
	ops := NewOpCounter()
	obs := &recordingObserver{}
	proxy, err := NewObservedProxy(backend.URL, ops, obs, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = proxy.Close(context.WithoutCancel(t.Context())) }()

	for _, op := range []string{"GetItem", "PutItem"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, proxy.URL, strings.NewReader(`{"original":true}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s through the proxy: %v", op, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}

	if got := ops.Count("GetItem") + ops.Count("PutItem"); got != 2 {
		t.Errorf("counted %d requests, want 2 (%v)", got, ops.Snapshot())
	}
	mu.Lock()
	if want := []string{`{"rewritten":true}`, `{"original":true}`}; strings.Join(received, "|") != strings.Join(want, "|") {
		t.Errorf("endpoint received %q, want %q", received, want)
	}
	mu.Unlock()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := "GetItem state-of-GetItem 200 OK"; len(obs.seen) != 1 || obs.seen[0] != want {
		t.Errorf("observer was shown %q, want [%q]", obs.seen, want)
	}
}
