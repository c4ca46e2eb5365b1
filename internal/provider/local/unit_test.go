package local

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name  string
		line  string
		want  procStat
		isErr bool
	}{
		{
			name: "Stopped",
			line: "4242 (sandman) T 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 5 0 98765 1000 10 1 2 3\n",
			want: procStat{State: 'T', PGID: 4242, StartTicks: 98765},
		},
		{
			name: "CommandWithSpacesAndParens",
			line: "77 (a) b (c) S 1 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 123 0 0",
			want: procStat{State: 'S', PGID: 70, StartTicks: 123},
		},
		{name: "ErrTruncated", line: "77 (x) S 1 70 70", isErr: true},
		{name: "ErrNoCommand", line: "77 x S 1 70", isErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.line))
			if gotErr := err != nil; gotErr != tt.isErr {
				t.Fatalf("parseProcStat error = %v, want error %v", err, tt.isErr)
			}
			if got != tt.want {
				t.Errorf("parseProcStat = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSign(t *testing.T) {
	// Expected values computed outside Go:
	//   printf '<secret><body>' | sha256sum | xxd -r -p | base64
	// then '+' → '-', '/' → '_' and the trailing '=' dropped by hand.
	tests := []struct {
		name, secret, body, want string
	}{
		{"Slash", "sandman-secret", `{"id":"abc","type":"sandbox.lifecycle.paused"}`, "iNB8cAKT6z4GRDh9o5RUWgfg7070AXI0_xiNrUYuXA4"},
		{"Plus", "x", "?", "B0qxeAD03CAByodIoAXR2YP-VzK2G7Wuke9VLHuJe3E"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e2bhook.Sign(tt.secret, []byte(tt.body)); got != tt.want {
				t.Errorf("sign = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := newID()
		if !validID(id) {
			t.Fatalf("validID(%q) = false for a new id", id)
		}
		if seen[id] {
			t.Fatalf("newID returned %q twice", id)
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "lsb_", "lsb_../../etc/passwd", "lsb_ABCDEFGHIJKLMNOP", "fake_1", "lsb_abcdefghijklmnop0", "lsb_abcdefghijklmno1"} {
		if validID(bad) {
			t.Errorf("validID(%q) = true, want false", bad)
		}
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if got := newUUID(); !uuid.MatchString(got) {
		t.Errorf("newUUID = %q, not a version 4 UUID", got)
	}
}

// delivery is one webhook request as a test server received it.
type delivery struct {
	Header http.Header
	Body   []byte
}

// hookServer is a webhook receiver that answers with the statuses it is
// given in turn (then 204) and records every request.
type hookServer struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries []delivery
	statuses   []int
	events     chan e2bhook.Body // every well-formed body, buffered
}

// MustHookServer starts a hookServer that first answers statuses, in turn.
func MustHookServer(tb testing.TB, statuses ...int) *hookServer {
	tb.Helper()
	h := &hookServer{statuses: statuses, events: make(chan e2bhook.Body, 100)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.deliveries = append(h.deliveries, delivery{Header: r.Header.Clone(), Body: body})
		status := http.StatusNoContent
		if len(h.statuses) > 0 {
			status, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.mu.Unlock()
		var ev e2bhook.Body
		if status < 300 && json.Unmarshal(body, &ev) == nil {
			h.events <- ev
		}
		w.WriteHeader(status)
	}))
	tb.Cleanup(h.Close)
	return h
}

// Deliveries returns the requests received so far.
func (h *hookServer) Deliveries() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]delivery(nil), h.deliveries...)
}

func TestNotifierRetries(t *testing.T) {
	tests := []struct {
		name         string
		statuses     []int
		wantAttempts int
	}{
		{"OK", nil, 1},
		{"RetryAfter5xx", []int{http.StatusServiceUnavailable, http.StatusInternalServerError}, 3},
		{"RetryAfter429", []int{http.StatusTooManyRequests}, 2},
		{"NoRetryAfter4xx", []int{http.StatusUnauthorized}, 1},
		{"GiveUpAfterAttempts", []int{500, 500, 500, 500, 500}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := MustHookServer(t, tt.statuses...)
			cfg, err := Config{
				WebhookURL: srv.URL, WebhookSecret: "s3cret", WebhookAttempts: 3,
				WebhookBackoff: time.Millisecond, Command: []string{"unused"},
			}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			n := newNotifier(cfg)
			p := &Provider{cfg: cfg}
			n.send(p.newEvent(lifecycle.ProviderEventCreated, record{ID: newID(), Template: TemplateBase, ExecutionID: newUUID()}, time.Now(), ""))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := n.close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
			got := srv.Deliveries()
			if got, want := len(got), tt.wantAttempts; got != want {
				t.Fatalf("attempts = %d, want %d", got, want)
			}
			deliveryIDs := map[string]bool{}
			for _, d := range got {
				if got, want := string(d.Body), string(got[0].Body); got != want {
					t.Errorf("attempt body = %s, want the first attempt's %s", got, want)
				}
				if got, want := d.Header.Get("e2b-signature"), e2bSignature("s3cret", d.Body); got != want {
					t.Errorf("e2b-signature = %q, want %q", got, want)
				}
				deliveryIDs[d.Header.Get("e2b-delivery-id")] = true
			}
			if got, want := len(deliveryIDs), tt.wantAttempts; got != want {
				t.Errorf("distinct e2b-delivery-id = %d, want one per attempt (%d)", got, want)
			}
			// After close nothing more is sent.
			n.send(p.newEvent(lifecycle.ProviderEventKilled, record{ID: newID()}, time.Now(), e2bhook.KillRequest))
			if err := n.flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
			if got, want := len(srv.Deliveries()), tt.wantAttempts; got != want {
				t.Errorf("attempts after close = %d, want %d", got, want)
			}
		})
	}
}

func TestConfigInvalid(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"WebhookWithoutSecret", Config{WebhookURL: "http://127.0.0.1:1/"}},
		{"DefaultAboveMax", Config{DefaultTimeout: 2 * time.Hour, MaxTimeout: time.Hour}},
		{"NegativeBackoff", Config{WebhookBackoff: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dir = t.TempDir()
			if _, err := New(tt.cfg); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

// e2bSignature computes E2B's v1 signature independently of sign:
// sha256(secret + body), standard base64, '+' → '-', '/' → '_', no '='.
func e2bSignature(secret string, body []byte) string {
	sum := sha256.Sum256(append([]byte(secret), body...))
	s := base64.StdEncoding.EncodeToString(sum[:])
	s = strings.ReplaceAll(s, "+", "-")
	s = strings.ReplaceAll(s, "/", "_")
	return strings.TrimRight(s, "=")
}
