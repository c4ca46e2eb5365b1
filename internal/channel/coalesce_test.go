package channel_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
)

// countingConns counts connection-store operations.
type countingConns struct {
	*channel.Memory
	ops atomic.Int64
}

func (c *countingConns) GetConn(ctx context.Context, id string) (channel.Conn, error) {
	c.ops.Add(1)
	return c.Memory.GetConn(ctx, id)
}

func (c *countingConns) PutConn(ctx context.Context, conn channel.Conn) error {
	c.ops.Add(1)
	return c.Memory.PutConn(ctx, conn)
}

// countingStore counts session-store operations.
type countingStore struct {
	*memstore.Store
	ops atomic.Int64
}

func (s *countingStore) GetSession(ctx context.Context, id string) (*lifecycle.Session, error) {
	s.ops.Add(1)
	return s.Store.GetSession(ctx, id)
}

func (s *countingStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, g lifecycle.Guard) error {
	s.ops.Add(1)
	return s.Store.UpdateSession(ctx, sess, from, g)
}

// closer is a pusher that records server-side closes.
type closer struct {
	*pusher
	mu     sync.Mutex
	closed map[string]int
}

func (c *closer) Close(_ context.Context, connID string, code int, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed[connID] = code
	return nil
}

// TestHeartbeatsWithinGranularityCostNothing: a heartbeat with the same
// visibility within the activity granularity of the connection's last one
// costs no table operation, read or write; past the granularity, or with
// another visibility, it is handled in full.
func TestHeartbeatsWithinGranularityCostNothing(t *testing.T) {
	conns := &countingConns{Memory: channel.NewMemory()}
	store := &countingStore{Store: memstore.New()}
	e := newEnvWith(t, store, conns)
	_, tok := e.create(t, 60)
	e.send(t, channel.RouteConnect, "c", tok, "")
	beat := `{"action":"heartbeat","visible":true}`
	e.send(t, channel.RouteDefault, "c", "", beat) // handled in full
	before := conns.ops.Load() + store.ops.Load()
	for i := range 250 {
		e.clock.Advance(100 * time.Millisecond) // 25 s in all: within the granularity, within the rate

		if got := e.send(t, channel.RouteDefault, "c", "", beat); got != http.StatusOK {
			t.Fatalf("heartbeat %d: %d", i, got)
		}
	}
	if got := conns.ops.Load() + store.ops.Load() - before; got != 0 {
		t.Errorf("250 heartbeats within the granularity cost %d table operations, want 0", got)
	}
	e.clock.Advance(5 * time.Second)
	e.send(t, channel.RouteDefault, "c", "", beat)
	if got := conns.ops.Load() + store.ops.Load() - before; got == 0 {
		t.Error("a heartbeat past the granularity was not handled")
	}
}

// TestMessageRateBound: past MessageBurst messages at once (and
// MaxMessagesPerSecond after), a connection's messages are refused (429)
// and the connection is closed with 1008; a second later it may speak again.
func TestMessageRateBound(t *testing.T) {
	e := newEnv(t)
	cl := &closer{pusher: e.push, closed: map[string]int{}}
	h, err := channel.New(e.svc, e.tokens, e.conns, cl, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	_, tok := e.create(t, 60)
	e.send(t, channel.RouteConnect, "c", tok, "")
	refused := 0
	for range channel.MessageBurst + 5 {
		if got := e.send(t, channel.RouteDefault, "c", "", `{"action":"heartbeat","visible":true}`); got == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 5 {
		t.Errorf("%d of %d messages at once refused, want 5", refused, channel.MessageBurst+5)
	}
	if got := cl.closed["c"]; got != channel.StatusPolicyViolation {
		t.Errorf("close code %d, want 1008", got)
	}
	e.clock.Advance(time.Second)
	if got := e.send(t, channel.RouteDefault, "c", "", `{"action":"heartbeat","visible":true}`); got != http.StatusOK {
		t.Errorf("a message a second later: %d, want 200", got)
	}
}
