package localstack_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestWSGateway: the local gateway refuses a connect without a valid token
// before the upgrade, answers hello with the status body, pushes a committed
// transition, and a closed socket is a $disconnect (presence → away).
func TestWSGateway(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC))
	store := memstore.New()
	ws := localstack.NewWSGateway(slog.New(slog.DiscardHandler))
	var h *channel.Handler
	pub := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error { return h.Publish(ctx, evs...) })
	svc := lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(store, pub), Provider: fake.New(fake.Config{Clock: clock}),
		Clock: clock, Log: slog.New(slog.DiscardHandler), Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	tokens, err := clienttoken.New(clienttoken.KeySet{Signing: clienttoken.Key{ID: "k", Secret: []byte(strings.Repeat("x", 32))}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	if h, err = channel.New(svc, tokens, channel.NewMemory(), ws, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	ws.Handler = h
	srv := httptest.NewServer(ws)
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + localstack.WSPath

	away := int64(30)
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base", AwayTimeoutSeconds: &away})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	_, resp, err := websocket.Dial(ctx, url+"?token=bad.token", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial with a bad token: err %v, response %v; want a 401 refusal", err, resp)
	}

	tok, _, _ := tokens.Mint(sess.ID, "acct_1", 0)
	c, _, err := websocket.Dial(ctx, url+"?token="+tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var p struct {
			Type    string `json:"type"`
			Session struct {
				SessionID string `json:"session_id"`
				State     string `json:"state"`
			} `json:"session"`
		}
		if err := json.Unmarshal(data, &p); err != nil || p.Type != "session" || p.Session.SessionID != sess.ID {
			t.Fatalf("push %s: %v", data, err)
		}
		return p.Session.State
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "running" {
		t.Errorf("state in answer to hello %s, want running", got)
	}
	if _, err := svc.PauseNow(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	if a, b := read(), read(); a != "pausing" || b != "paused" {
		t.Errorf("pushes %s, %s; want pausing, paused", a, b)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"resume"}`)); err != nil {
		t.Fatal(err)
	}
	if a, b := read(), read(); a != "resuming" || b != "running" {
		t.Errorf("after resume: %s, %s; want resuming, running", a, b)
	}
	_ = c.Close(websocket.StatusNormalClosure, "page closed")
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := store.GetSession(t.Context(), sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !s.AwayDeadline.IsZero() {
			if want := clock.Now().Add(30 * time.Second); !s.AwayDeadline.Equal(want) {
				t.Errorf("away deadline %v, want %v", s.AwayDeadline, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no away deadline 5 s after the socket closed")
		}
		time.Sleep(10 * time.Millisecond) // waits for the server's read loop to see the close, not for domain time
	}
}

// TestWSGatewayClosesPastRate: a connection that sends more than
// channel.MessageBurst messages at once is closed with 1008.
func TestWSGatewayClosesPastRate(t *testing.T) {
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC))
	ws := localstack.NewWSGateway(slog.New(slog.DiscardHandler))
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: fake.New(fake.Config{Clock: clock}),
		Clock: clock, Log: slog.New(slog.DiscardHandler)})
	tokens, err := clienttoken.New(clienttoken.KeySet{Signing: clienttoken.Key{ID: "k", Secret: []byte(strings.Repeat("x", 32))}}, clock)
	if err != nil {
		t.Fatal(err)
	}
	h, err := channel.New(svc, tokens, channel.NewMemory(), ws, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h.GatewayAdmits()
	ws.Handler = h
	srv := httptest.NewServer(ws)
	t.Cleanup(srv.Close)
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, _ := tokens.Mint(sess.ID, "acct_1", 0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+localstack.WSPath+"?token="+tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for range channel.MessageBurst + 1 {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"heartbeat","visible":true}`)); err != nil {
			break // closed already
		}
	}
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
			t.Fatalf("connection ended with %v (close status %d), want 1008", err, got)
		}
		return
	}
}
