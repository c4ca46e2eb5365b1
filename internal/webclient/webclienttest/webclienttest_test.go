package webclienttest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// MustServer starts a Server over httptest and returns it with its ws URL.
func MustServer(tb testing.TB, tokens ...string) (*Server, string) {
	tb.Helper()
	s := New(json.RawMessage(`{"state":"running"}`), tokens...)
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	return s, "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/ws"
}

func read(t *testing.T, ctx context.Context, c *websocket.Conn) map[string]any {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
	return m
}

func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, url := MustServer(t, "tok-1")

	t.Run("RefusedWithoutValidToken", func(t *testing.T) {
		for _, q := range []string{"", "?token=nope"} {
			_, res, err := websocket.Dial(ctx, url+q, nil)
			if err == nil {
				t.Fatalf("dial %q accepted", q)
			}
			if got, want := res.StatusCode, http.StatusUnauthorized; got != want {
				t.Errorf("dial %q status = %d, want %d", q, got, want)
			}
		}
	})

	c, _, err := websocket.Dial(ctx, url+"?token=tok-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"hello"}`)); err != nil {
		t.Fatal(err)
	}
	if m := read(t, ctx, c); m["type"] != "session" || m["session"].(map[string]any)["state"] != "running" {
		t.Fatalf("answer to hello = %v", m)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"action":"heartbeat","visible":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, func(l Log) bool { return len(l.Messages) == 2 }); err != nil {
		t.Fatal(err)
	}
	s.SetStatus(ctx, json.RawMessage(`{"state":"paused"}`))
	if m := read(t, ctx, c); m["session"].(map[string]any)["state"] != "paused" {
		t.Fatalf("push = %v", m)
	}
	log := s.Log()
	if got, want := len(log.Connects), 3; got != want {
		t.Fatalf("connects = %d, want %d", got, want)
	}
	if !log.Connects[2].Accepted || log.Connects[0].Accepted || log.Connects[1].Accepted {
		t.Errorf("accepted = %+v", log.Connects)
	}
	if got, want := len(log.Messages), 2; got != want {
		t.Fatalf("messages = %d, want %d", got, want)
	}
	if got, want := string(log.Messages[1].Data), `{"action":"heartbeat","visible":true}`; got != want {
		t.Errorf("message = %s, want %s", got, want)
	}
	if got, want := log.Open, 1; got != want {
		t.Errorf("open = %d, want %d", got, want)
	}

	s.Drop()
	if err := s.Wait(ctx, func(l Log) bool { return l.Open == 0 }); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(ctx)
	if err == nil {
		t.Fatal("read after Drop succeeded")
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		t.Errorf("Drop sent a close frame (%v); want an abrupt close", ce)
	}
}
