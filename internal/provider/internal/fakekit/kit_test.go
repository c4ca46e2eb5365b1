package fakekit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

type op string

// fault is a test fake's fault type.
type fault struct {
	status           int
	hang, drop, lose bool
}

func (f fault) Effect() fakekit.Effect {
	switch {
	case f.hang:
		return fakekit.Hang
	case f.drop:
		return fakekit.Drop
	case f.lose:
		return fakekit.Lose
	case f.status != 0:
		return fakekit.Answer
	}
	return fakekit.Serve
}

// served counts what the wrapped handler served.
type served struct {
	mu sync.Mutex
	n  int
}

func (s *served) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (s *served) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func TestKitHandle(t *testing.T) {
	var k fakekit.Kit[op, fault]
	next := &served{}
	answer := func(w http.ResponseWriter, _ *http.Request, f fault) { w.WriteHeader(f.status) }
	srv := httptest.NewServer(k.Handle("get", next, answer, "get", ""))
	t.Cleanup(srv.Close)
	t.Cleanup(k.Close)
	get := func(ctx context.Context) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}

	t.Run("Answer", func(t *testing.T) {
		k.Fail("", fault{status: 503}) // any operation, after the op's own
		k.Fail("get", fault{status: 429})
		for _, want := range []int{429, 503, 200} {
			if got, err := get(t.Context()); err != nil || got != want {
				t.Fatalf("status = %d (%v), want %d", got, err, want)
			}
		}
		stop := k.FailUntil("get", fault{status: 500})
		if got, _ := get(t.Context()); got != 500 {
			t.Errorf("standing fault: %d, want 500", got)
		}
		stop()
		if got, _ := get(t.Context()); got != 200 {
			t.Errorf("after stop: %d, want 200", got)
		}
	})
	t.Run("Drop", func(t *testing.T) {
		before := next.count()
		k.Fail("get", fault{drop: true})
		if _, err := get(t.Context()); err == nil {
			t.Error("a dropped request got an answer")
		}
		k.Fail("get", fault{lose: true})
		if _, err := get(t.Context()); err == nil || next.count() != before+1 {
			t.Errorf("a lost answer: err %v, served %d, want an error and the request served", err, next.count()-before)
		}
	})
	t.Run("Hang", func(t *testing.T) {
		k.Fail("get", fault{hang: true})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { _, err := get(ctx); done <- err }()
		if got := <-k.Hanging(); got != "get" {
			t.Errorf("hanging op = %q, want get", got)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("a hung request: %v, want the client's cancel", err)
		}
	})
	if got, want := k.Requests("get"), 8; got != want {
		t.Errorf("Requests(get) = %d, want %d", got, want)
	}
	k.Count("other")
	if got, want := k.Requests(""), 9; got != want {
		t.Errorf("Requests of the zero op = %d, want %d (every operation)", got, want)
	}
}

func TestKitCloseReleasesHangs(t *testing.T) {
	var k fakekit.Kit[op, fault]
	k.Fail("get", fault{hang: true})
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		k.Handle("get", &served{}, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		close(done)
	}()
	<-k.Hanging()
	k.Close()
	k.Close() // idempotent
	<-done
	if r := httptest.NewRequest(http.MethodGet, "/", nil); k.Wait(r, time.Hour) {
		t.Error("Wait after Close reported the wait passed")
	}
}

// TestKitLatency: a request of an op with a latency waits it before it is
// served; one the fake's Close releases first is not served at all.
func TestKitLatency(t *testing.T) {
	var k fakekit.Kit[op, fault]
	k.SetLatency("get", time.Hour)
	if got := k.Latency("get"); got != time.Hour {
		t.Fatalf("Latency = %v, want 1h", got)
	}
	next := &served{}
	h := k.Handle("get", next, nil)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		close(done)
	}()
	k.Close() // releases the wait, whether it began or not
	<-done
	if next.count() != 0 || rec.Body.Len() != 0 {
		t.Errorf("a request released during its latency was served (%d, %q)", next.count(), rec.Body.String())
	}
	var fresh fakekit.Kit[op, fault]
	fresh.SetLatency("get", time.Hour)
	fresh.SetLatency("get", 0)
	fresh.Handle("get", next, nil).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if next.count() != 1 {
		t.Errorf("with the latency taken away: served %d, want 1", next.count())
	}
}

func TestKitTalliesNotesAndBoot(t *testing.T) {
	var k fakekit.Kit[op, fault]
	k.Add("wakes")
	k.Add("wakes")
	if got := k.Tally("wakes"); got != 2 {
		t.Errorf("Tally = %d, want 2", got)
	}
	k.Note("create a")
	k.Note("create a")
	k.NoteOnce("b")
	k.NoteOnce("b")
	if got, want := k.UnknownFields(), []string{"create a", "create a", "b"}; !slices.Equal(got, want) {
		t.Errorf("UnknownFields = %v, want %v", got, want)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if !k.Booted(t0, t0) {
		t.Error("no boot delay: not booted at once")
	}
	k.SetBootDelay(time.Second)
	if k.Booted(t0, t0.Add(999*time.Millisecond)) || !k.Booted(t0, t0.Add(time.Second)) {
		t.Error("a 1 s boot delay: booted early or not at 1 s")
	}
}

func TestOrderCursorLimit(t *testing.T) {
	var o fakekit.Order
	if o.Next() != 1 || o.Add("a") != 1 || o.Add("b") != 2 || o.Add("a") != 1 || o.Of("b") != 2 || o.Of("c") != 0 || o.Next() != 3 {
		t.Error("Order does not keep the first placing of each id")
	}
	c := fakekit.Cursor("createdAt|", "0042")
	if key, ok := fakekit.ReadCursor(c, "createdAt|"); !ok || key != "0042" {
		t.Errorf("ReadCursor = %q %v, want 0042", key, ok)
	}
	if _, ok := fakekit.ReadCursor(c, "name|"); ok {
		t.Error("a cursor of another prefix was read")
	}
	if _, ok := fakekit.ReadCursor("!!", ""); ok {
		t.Error("a cursor that is not base64 was read")
	}
	for _, tc := range []struct {
		v    string
		want int
		ok   bool
	}{{"", 20, true}, {"7", 7, true}, {"0", 0, false}, {"51", 51, false}, {"x", 0, false}} {
		if got, ok := fakekit.Limit(tc.v, 20, 1, 50); ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("Limit(%q) = %d %v, want %d %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	unknown, err := fakekit.DecodeObject([]byte(`{"a":1,"A":2,"z":3}`), &v, "a")
	if err != nil || v.A != 1 || !slices.Equal(unknown, []string{"A", "z"}) {
		t.Errorf("DecodeObject = %v %v, a = %d; want a = 1 and [A z] unknown", unknown, err, v.A)
	}
	if _, err := fakekit.DecodeObject([]byte(`{"a":"x"}`), &v, "a"); err == nil {
		t.Error("a known field of the wrong type decoded")
	}
}

func TestLoggedAndInProcess(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	h := fakekit.Logged(log, "fake x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, r.Host)
	}), "part", "api")
	resp, err := (&http.Client{Transport: fakekit.InProcess(h)}).Get("https://3000-sb.proxy.test/p?q=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(body) != "3000-sb.proxy.test" {
		t.Errorf("in process: %d %q, want 418 and the URL's host", resp.StatusCode, body)
	}
	if want := `msg="fake x" part=api method=GET path=/p status=418 query="q=1"`; !strings.Contains(buf.String(), want) {
		t.Errorf("log = %s, want %s", buf.String(), want)
	}
	rec := httptest.NewRecorder()
	fakekit.Logged(nil, "m", http.NotFoundHandler()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a nil log: %d, want the handler served as it is", rec.Code)
	}
}

func TestSender(t *testing.T) {
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("Webhook-Id")+" "+r.Header.Get("Content-Type")+" "+string(b))
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	s := fakekit.NewSender(rcv.URL, func(msgID string, _ time.Time, _ []byte) (http.Header, error) {
		return http.Header{"Webhook-Id": {msgID[:4]}}, nil
	}, slog.New(slog.DiscardHandler))
	for _, b := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		s.Send([]byte(b))
	}
	s.Close() // delivers the queue first
	want := []string{`msg_ application/json {"n":1}`, `msg_ application/json {"n":2}`, `msg_ application/json {"n":3}`}
	if !slices.Equal(got, want) {
		t.Errorf("delivered %q, want %q (signed, in order)", got, want)
	}
}

func TestListenAndServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	closed := make(chan struct{})
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- fakekit.ListenAndServe(ctx, "127.0.0.1:0", "x", func(base string) (http.Handler, func()) {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, base) }),
				func() { close(closed) }
		}, func(base string) { ready <- base })
	}()
	base := <-ready
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != base {
		t.Errorf("answer = %q, want the base URL %q", b, base)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe = %v, want nil after ctx ended", err)
	}
	<-closed
	if err := fakekit.ListenAndServe(t.Context(), "256.0.0.1:0", "x", nil, nil); err == nil {
		t.Error("listening on a bad address succeeded")
	}
}
