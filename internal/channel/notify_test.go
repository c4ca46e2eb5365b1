package channel_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// mustFixture decodes events/<name> into v.
func mustFixture(tb testing.TB, name string, v any) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		tb.Fatalf("decode %s: %v", name, err)
	}
}

// busEvent is events/bus/session-paused.json about session id of account
// acct (the fixture's other fields kept).
func busEvent(t *testing.T, sessionID string) events.CloudWatchEvent {
	t.Helper()
	var ev events.CloudWatchEvent
	mustFixture(t, "bus/session-paused.json", &ev)
	var le lifecycle.Event
	if err := json.Unmarshal(ev.Detail, &le); err != nil || le.To != lifecycle.StatePaused || le.EventID == "" {
		t.Fatalf("the fixture's detail %s is not a lifecycle event (%v)", ev.Detail, err)
	}
	le.SessionID, le.AccountID = sessionID, acct
	ev.Detail, _ = json.Marshal(le)
	return ev
}

// TestHandleEvent: the notifier function, fed an EventBridge lifecycle
// event, pushes the session's current status to its connections only;
// a gone connection is deleted; what a retry cannot fix is dropped, what
// it can is returned.
func TestHandleEvent(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 60)
	_, otherTok := e.create(t, 60)
	for _, c := range []struct{ id, tok string }{{"a", tok}, {"gone", tok}, {"o", otherTok}} {
		if got := e.send(t, channel.RouteConnect, c.id, c.tok, ""); got != http.StatusOK {
			t.Fatalf("connect %s: %d", c.id, got)
		}
	}
	// The notifier alone: no client-token keys, its own pusher.
	p := &pusher{msgs: map[string][]channel.Push{}, gone: map[string]bool{"gone": true}}
	n, err := channel.NewNotifier(e.svc, e.conns, p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		if err := n.HandleEvent(t.Context(), busEvent(t, sess.ID)); err != nil {
			t.Fatal(err)
		}
		// The status read at push time: running (the event says paused,
		// but the table is the truth and the event may be stale).
		if got := p.states("a"); len(got) != 1 || got[0] != "running" {
			t.Errorf("a got %v, want [running]", got)
		}
		if got := p.states("o"); len(got) != 0 {
			t.Errorf("the other session's connection got %v", got)
		}
		if _, err := e.conns.GetConn(t.Context(), "gone"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("gone connection still stored (err %v)", err)
		}
	})
	t.Run("OtherSourceIgnored", func(t *testing.T) {
		ev := busEvent(t, sess.ID)
		ev.Source = "aws.events"
		if err := n.HandleEvent(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		if got := p.states("a"); len(got) != 1 {
			t.Errorf("pushes %v after an event of another source", got)
		}
	})
	t.Run("MalformedDropped", func(t *testing.T) {
		ev := busEvent(t, sess.ID)
		ev.Detail = json.RawMessage(`{"session_id":17}`)
		if err := n.HandleEvent(t.Context(), ev); err != nil {
			t.Errorf("a malformed detail: %v; want nil (a retry cannot fix it)", err)
		}
	})
	t.Run("UnknownSessionDropped", func(t *testing.T) {
		if err := n.HandleEvent(t.Context(), busEvent(t, "ses_unknown")); err != nil {
			t.Errorf("unknown session: %v, want nil", err)
		}
	})
	t.Run("ErrPushFailedIsRetried", func(t *testing.T) {
		failing, err := channel.NewNotifier(e.svc, e.conns, failPusher{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := failing.HandleEvent(t.Context(), busEvent(t, sess.ID)); err == nil {
			t.Error("a failed push returned nil; Lambda would not retry it")
		}
		if _, err := e.conns.GetConn(t.Context(), "a"); err != nil {
			t.Errorf("a connection whose push failed (not gone) was deleted: %v", err)
		}
	})
}

type failPusher struct{}

func (failPusher) Push(context.Context, string, []byte) error { return errors.New("throttled") }

// TestWSFixtures drives the handler with the events/ws fixtures, the
// events API Gateway sends: $connect with the token, a hello answered by
// one push, $disconnect deleting the connection.
func TestWSFixtures(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 60)
	var connect, hello, disconnect events.APIGatewayWebsocketProxyRequest
	mustFixture(t, "ws/connect.json", &connect)
	mustFixture(t, "ws/hello.json", &hello)
	mustFixture(t, "ws/disconnect.json", &disconnect)
	connect.QueryStringParameters["token"] = tok
	id := connect.RequestContext.ConnectionID
	for _, c := range []struct {
		name string
		req  events.APIGatewayWebsocketProxyRequest
	}{{"connect", connect}, {"hello", hello}, {"disconnect", disconnect}} {
		resp, err := e.h.Handle(t.Context(), c.req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d, %v; want 200", c.name, resp.StatusCode, err)
		}
		if c.name == "hello" {
			if got := e.push.states(id); len(got) != 1 || got[0] != "running" {
				t.Errorf("pushes after hello %v, want [running]", got)
			}
		}
	}
	if _, err := e.conns.GetConn(t.Context(), id); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("connection after $disconnect: err %v, want not_found", err)
	}
	if s := e.session(t, sess.ID); s.AwayDeadline.IsZero() {
		t.Error("no away deadline after the last client's $disconnect")
	}
}
