package channel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

var t0 = time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)

const acct = "acct_1"

// pusher records pushes per connection; connections in gone answer ErrGone.
type pusher struct {
	mu   sync.Mutex
	msgs map[string][]channel.Push
	gone map[string]bool
}

func (p *pusher) Push(_ context.Context, connID string, msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone[connID] {
		return fmt.Errorf("post to %s: %w", connID, channel.ErrGone)
	}
	var m channel.Push
	if err := json.Unmarshal(msg, &m); err != nil {
		return err
	}
	p.msgs[connID] = append(p.msgs[connID], m)
	return nil
}

// states returns the session states pushed to connID, in order.
func (p *pusher) states(connID string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.msgs[connID] {
		out = append(out, m.Session.(map[string]any)["state"].(string))
	}
	return out
}

type env struct {
	clock  *lifecycle.ManualClock
	store  lifecycle.Store
	svc    *lifecycle.Service
	tokens *clienttoken.Tokens
	conns  *channel.Memory
	push   *pusher
	h      *channel.Handler
}

// newEnv wires a service whose committed transitions reach the handler's
// Publish, as the outbox does (outbox.InPath).
func newEnv(t *testing.T) *env {
	t.Helper()
	m := channel.NewMemory()
	e := newEnvWith(t, memstore.New(), m)
	e.conns = m
	return e
}

// newEnvWith is newEnv over the given session and connection stores.
func newEnvWith(t *testing.T, store lifecycle.Store, conns channel.Connections) *env {
	t.Helper()
	e := &env{clock: lifecycle.NewManualClock(t0), store: store,
		push: &pusher{msgs: map[string][]channel.Push{}, gone: map[string]bool{}}}
	var h *channel.Handler
	pub := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error { return h.Publish(ctx, evs...) })
	e.svc = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(e.store, pub),
		Provider: fake.New(fake.Config{Clock: e.clock}), Clock: e.clock, Log: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	var err error
	e.tokens, err = clienttoken.New(clienttoken.KeySet{Signing: clienttoken.Key{ID: "k1", Secret: []byte(strings.Repeat("k", 32))}}, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	if h, err = channel.New(e.svc, e.tokens, conns, e.push, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e
}

func (e *env) create(t *testing.T, away int64) (*lifecycle.Session, string) {
	t.Helper()
	sess, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", AwayTimeoutSeconds: &away})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := e.tokens.Mint(sess.ID, acct, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sess, tok
}

func (e *env) send(t *testing.T, route, connID, token, body string) int {
	t.Helper()
	req := events.APIGatewayWebsocketProxyRequest{Body: body,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{RouteKey: route, ConnectionID: connID}}
	if token != "" {
		req.QueryStringParameters = map[string]string{"token": token}
	}
	resp, err := e.h.Handle(t.Context(), req)
	if err != nil {
		t.Fatalf("Handle(%s): %v", route, err)
	}
	return resp.StatusCode
}

func (e *env) session(t *testing.T, id string) *lifecycle.Session {
	t.Helper()
	s, err := e.store.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConnect(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 60)
	t.Run("ErrNoToken", func(t *testing.T) {
		if got := e.send(t, channel.RouteConnect, "c0", "", ""); got != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", got)
		}
	})
	t.Run("ErrTampered", func(t *testing.T) {
		if got := e.send(t, channel.RouteConnect, "c0", tok[:len(tok)-3]+"AAA", ""); got != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", got)
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		old, _, _ := e.tokens.Mint(sess.ID, acct, time.Second)
		e.clock.Advance(time.Second)
		if got := e.send(t, channel.RouteConnect, "c0", old, ""); got != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", got)
		}
	})
	t.Run("ErrOtherAccount", func(t *testing.T) {
		forged, _, _ := e.tokens.Mint(sess.ID, "acct_2", 0)
		if got := e.send(t, channel.RouteConnect, "c0", forged, ""); got != http.StatusForbidden {
			t.Errorf("status %d, want 403", got)
		}
	})
	if _, err := e.conns.GetConn(t.Context(), "c0"); err == nil {
		t.Fatal("a refused connect stored a connection")
	}
	t.Run("OKAndHello", func(t *testing.T) {
		if got := e.send(t, channel.RouteConnect, "c1", tok, ""); got != http.StatusOK {
			t.Fatalf("status %d, want 200", got)
		}
		if got := e.push.states("c1"); len(got) != 0 {
			t.Fatalf("pushes %v during $connect; API Gateway accepts none", got)
		}
		if got := e.send(t, channel.RouteDefault, "c1", "", `{"action":"hello"}`); got != http.StatusOK {
			t.Fatalf("hello: status %d, want 200", got)
		}
		if got := e.push.states("c1"); len(got) != 1 || got[0] != "running" {
			t.Errorf("pushes %v, want [running]", got)
		}
	})
	t.Run("ErrHelloGone", func(t *testing.T) {
		e.send(t, channel.RouteConnect, "c2", tok, "")
		e.push.gone["c2"] = true
		if got := e.send(t, channel.RouteDefault, "c2", "", `{"action":"hello"}`); got != http.StatusGone {
			t.Errorf("hello to a gone connection: %d, want 410", got)
		}
		if _, err := e.conns.GetConn(t.Context(), "c2"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("gone connection still stored (err %v)", err)
		}
	})
}

// TestPushAfterTransition: a committed transition reaches every connection
// of the session, and only those; a gone connection is deleted.
func TestPushAfterTransition(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 60)
	other, otherTok := e.create(t, 60)
	for _, c := range []struct{ id, tok string }{{"a", tok}, {"b", tok}, {"gone", tok}, {"o", otherTok}} {
		if got := e.send(t, channel.RouteConnect, c.id, c.tok, ""); got != http.StatusOK {
			t.Fatalf("connect %s: %d", c.id, got)
		}
	}
	e.push.gone["gone"] = true
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		got := e.push.states(id)
		if len(got) != 2 || got[0] != "pausing" || got[1] != "paused" {
			t.Errorf("%s got %v, want [pausing paused]", id, got)
		}
	}
	if got := e.push.states("o"); len(got) != 0 {
		t.Errorf("the other session's connection got %v", got)
	}
	if _, err := e.conns.GetConn(t.Context(), "gone"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("gone connection still stored (err %v)", err)
	}
	// {"action":"resume"} resumes; the pushes say so.
	if got := e.send(t, channel.RouteDefault, "a", "", `{"action":"resume"}`); got != http.StatusOK {
		t.Fatalf("resume: %d", got)
	}
	if got := e.push.states("a"); got[len(got)-1] != "running" {
		t.Errorf("after resume pushes %v, want running last", got)
	}
	_ = other
}

// TestPresenceAway: the last visible client leaving sets the away
// deadline; a hidden heartbeat counts as leaving; a visible one clears it.
func TestPresenceAway(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 30)
	e.send(t, channel.RouteConnect, "a", tok, "")
	e.send(t, channel.RouteConnect, "b", tok, "")

	e.clock.Advance(time.Minute)
	e.send(t, channel.RouteDisconnect, "a", "", "")
	if got := e.session(t, sess.ID).AwayDeadline; !got.IsZero() {
		t.Fatalf("away deadline %v while b is visible", got)
	}
	if got := e.send(t, channel.RouteDefault, "b", "", `{"action":"heartbeat","visible":false}`); got != http.StatusOK {
		t.Fatalf("hidden heartbeat: %d", got)
	}
	want := e.clock.Now().Add(30 * time.Second)
	if got := e.session(t, sess.ID); !got.AwayDeadline.Equal(want) || got.PauseReason() != lifecycle.ReasonAway {
		t.Fatalf("away deadline %v reason %s, want %v away", got.AwayDeadline, got.PauseReason(), want)
	}
	e.clock.Advance(time.Minute)
	before := e.session(t, sess.ID).LastActivityAt
	e.send(t, channel.RouteDefault, "b", "", `{"action":"heartbeat","visible":true}`)
	got := e.session(t, sess.ID)
	if !got.AwayDeadline.IsZero() {
		t.Errorf("away deadline %v after a visible heartbeat", got.AwayDeadline)
	}
	if !got.LastActivityAt.After(before) {
		t.Errorf("a visible heartbeat was not activity")
	}
	e.clock.Advance(5 * time.Second)
	e.send(t, channel.RouteDisconnect, "b", "", "")
	if got, want := e.session(t, sess.ID).AwayDeadline, e.clock.Now().Add(30*time.Second); !got.Equal(want) {
		t.Errorf("away deadline after the last disconnect %v, want %v", got, want)
	}
	if got := e.send(t, channel.RouteDefault, "b", "", `{"action":"heartbeat","visible":true}`); got != http.StatusGone {
		t.Errorf("message on a closed connection: %d, want 410", got)
	}
}

// TestHeartbeatCannotHold: the channel authenticates with a client token,
// and a busy hold is API-key only (docs/DESIGN.md "Busy hold"): a heartbeat
// carrying hold_seconds is refused (403) and writes nothing; a message
// with a field the channel does not know is refused (400).
func TestHeartbeatCannotHold(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 60)
	e.send(t, channel.RouteConnect, "c", tok, "")
	e.clock.Advance(time.Minute)
	before := e.session(t, sess.ID)
	if got := e.send(t, channel.RouteDefault, "c", "", `{"action":"heartbeat","visible":true,"hold_seconds":86400}`); got != http.StatusForbidden {
		t.Errorf("heartbeat with hold_seconds: %d, want 403", got)
	}
	if got := e.send(t, channel.RouteDefault, "c", "", `{"action":"heartbeat","until":"2030-01-01T00:00:00Z"}`); got != http.StatusBadRequest {
		t.Errorf("heartbeat with an unknown field: %d, want 400", got)
	}
	got := e.session(t, sess.ID)
	if !got.HoldUntil.IsZero() || !got.LastActivityAt.Equal(before.LastActivityAt) {
		t.Errorf("hold_until %v, last activity %v after refused messages; want none and %v", got.HoldUntil, got.LastActivityAt, before.LastActivityAt)
	}
}
