package channel_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestGonePushRecomputesPresence: a push answered 410 (the socket is gone
// without a $disconnect) deletes the record and recomputes presence, so the
// session gets its away deadline when that was its last visible client.
func TestGonePushRecomputesPresence(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 30)
	e.send(t, channel.RouteConnect, "a", tok, "")
	e.push.gone["a"] = true
	e.clock.Advance(time.Minute)
	if err := e.h.Notify(t.Context(), lifecycle.Event{SessionID: sess.ID, AccountID: acct}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conns.GetConn(t.Context(), "a"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("gone connection still stored (err %v)", err)
	}
	if got, want := e.session(t, sess.ID).AwayDeadline, e.clock.Now().Add(30*time.Second); !got.Equal(want) {
		t.Errorf("away deadline %v after the last client's socket was found gone, want %v", got, want)
	}
}

// TestDropAllConnsAtStart: a local gateway that starts again has no
// sockets, so the records its previous process left (killed without a
// $disconnect) are dropped and their sessions' presence recomputed: on the
// in-memory store and on DynamoDB Local (the sparse by_conn_session index).
func TestDropAllConnsAtStart(t *testing.T) {
	for name, mk := range map[string]func(t *testing.T) (*env, channel.ConnStore){
		"Memory": func(t *testing.T) (*env, channel.ConnStore) { e := newEnv(t); return e, e.conns },
		"DynamoDB": func(t *testing.T) (*env, channel.ConnStore) {
			store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t)})
			return newEnvWith(t, store, store), store
		},
	} {
		t.Run(name, func(t *testing.T) {
			e, store := mk(t)
			s1, tok1 := e.create(t, 30)
			s2, tok2 := e.create(t, 60)
			for _, c := range []struct{ id, tok string }{{"a", tok1}, {"b", tok1}, {"c", tok2}} {
				if got := e.send(t, channel.RouteConnect, c.id, c.tok, ""); got != http.StatusOK {
					t.Fatalf("connect %s: %d", c.id, got)
				}
			}
			e.clock.Advance(time.Minute)
			r, err := channel.NewReaper(e.svc, store, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := r.DropAll(t.Context())
			if err != nil || n != 3 {
				t.Fatalf("DropAll = %d, %v; want 3 dropped", n, err)
			}
			for _, id := range []string{"a", "b", "c"} {
				if _, err := store.GetConn(t.Context(), id); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
					t.Errorf("connection %s still stored (err %v)", id, err)
				}
			}
			for _, s := range []struct {
				id   string
				away time.Duration
			}{{s1.ID, 30 * time.Second}, {s2.ID, time.Minute}} {
				if got, want := e.session(t, s.id).AwayDeadline, e.clock.Now().Add(s.away); !got.Equal(want) {
					t.Errorf("session %s away deadline %v, want %v", s.id, got, want)
				}
			}
		})
	}
}

// TestReapStaleConns: the sweep drops connections not heard from for
// longer than the bound (a $disconnect never delivered: any live socket
// speaks or is closed by API Gateway within its 10-minute idle timeout)
// and recomputes presence; a connection that sent a message recently is
// kept, and a heartbeat within the granularity refreshes nothing.
func TestReapStaleConns(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 30)
	e.send(t, channel.RouteConnect, "old", tok, "")
	e.send(t, channel.RouteConnect, "live", tok, "")
	r, err := channel.NewReaper(e.svc, e.conns, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Minute)
	e.send(t, channel.RouteDefault, "live", "", `{"action":"heartbeat","visible":true}`)
	e.clock.Advance(6 * time.Minute)
	n, err := r.ReapStaleConns(t.Context(), e.clock.Now().Add(-channel.StaleConnAge))
	if err != nil || n != 1 {
		t.Fatalf("ReapStaleConns = %d, %v; want the one connection silent for 16 min", n, err)
	}
	if _, err := e.conns.GetConn(t.Context(), "old"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("stale connection still stored (err %v)", err)
	}
	if got := e.session(t, sess.ID).AwayDeadline; !got.IsZero() {
		t.Errorf("away deadline %v while a live visible connection is left", got)
	}
	e.clock.Advance(10 * time.Minute)
	if n, err := r.ReapStaleConns(t.Context(), e.clock.Now().Add(-channel.StaleConnAge)); err != nil || n != 1 {
		t.Fatalf("second ReapStaleConns = %d, %v; want 1", n, err)
	}
	if got, want := e.session(t, sess.ID).AwayDeadline, e.clock.Now().Add(30*time.Second); !got.Equal(want) {
		t.Errorf("away deadline %v after the last connection went stale, want %v", got, want)
	}
}
