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

// TestDynamoConnections runs the channel over the real store on DynamoDB
// Local: sessions and connections in one fresh table, connections found
// through the by_conn_session index; connect refused without a token,
// push after a transition, presence → away deadline.
func TestDynamoConnections(t *testing.T) {
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t)})
	e := newEnvWith(t, store, store)
	sess, tok := e.create(t, 30)

	if got := e.send(t, channel.RouteConnect, "d0", "", ""); got != http.StatusUnauthorized {
		t.Fatalf("connect without a token: %d, want 401", got)
	}
	if got := e.send(t, channel.RouteConnect, "d1", tok, ""); got != http.StatusOK {
		t.Fatalf("connect: %d", got)
	}
	c, err := store.GetConn(t.Context(), "d1")
	if err != nil || c.SessionID != sess.ID || !c.Visible || !c.ExpiresAt.Equal(e.clock.Now().Add(channel.ConnTTL)) {
		t.Fatalf("stored connection %+v, err %v", c, err)
	}
	conns, err := store.SessionConns(t.Context(), sess.ID)
	if err != nil || len(conns) != 1 {
		t.Fatalf("SessionConns = %v, %v; want the one connection", conns, err)
	}
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.push.states("d1"); len(got) != 2 || got[1] != "paused" {
		t.Errorf("pushes %v, want [pausing paused]", got)
	}
	if _, err := e.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.send(t, channel.RouteDisconnect, "d1", "", "")
	got, err := store.GetSession(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.clock.Now().Add(30 * time.Second); !got.AwayDeadline.Equal(want) || got.PauseReason() != lifecycle.ReasonAway {
		t.Errorf("away deadline %v (%s), want %v away", got.AwayDeadline, got.PauseReason(), want)
	}
	if _, err := store.GetConn(t.Context(), "d1"); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		t.Errorf("connection after disconnect: err %v, want not_found", err)
	}
}
