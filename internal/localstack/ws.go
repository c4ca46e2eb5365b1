package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/coder/websocket"

	"github.com/sandmanhq/sandman/internal/channel"
)

// WSPath is where the local gateway serves the client channel.
const WSPath = "/v1/ws"

// wsWriteTimeout bounds one push to one browser.
const wsWriteTimeout = 5 * time.Second

// wsIdleTimeout closes a socket that sent nothing for this long: 10 min,
// API Gateway's WebSocket idle timeout.
const wsIdleTimeout = 10 * time.Minute

// WSGateway is the local stand-in for the API Gateway WebSocket API: it
// serves WSPath with github.com/coder/websocket and hands the same
// events.APIGatewayWebsocketProxyRequest events ($connect with ?token=,
// $default per message, $disconnect) to the same channel.Handler the
// Lambda functions run. It is the handler's Pusher: a push to a
// connection it does not hold is channel.ErrGone (API Gateway's 410).
type WSGateway struct {
	Handler *channel.Handler // set before serving
	Log     *slog.Logger

	mu    sync.Mutex
	conns map[string]*websocket.Conn
	// opening holds connections whose $connect ran (their record may be in
	// the table) but whose socket is not registered yet: a push to one is
	// not a sign it is gone (deleting its record then would lose every
	// later push; the client's hello brings the state it missed).
	opening map[string]bool
}

// NewWSGateway returns a WSGateway without a handler (set Handler).
func NewWSGateway(log *slog.Logger) *WSGateway {
	if log == nil {
		log = slog.Default()
	}
	return &WSGateway{Log: log, conns: map[string]*websocket.Conn{}, opening: map[string]bool{}}
}

// Push writes msg to the live connection connID. Errors: channel.ErrGone
// when the connection is not (or no longer) open.
func (g *WSGateway) Push(ctx context.Context, connID string, msg []byte) error {
	g.mu.Lock()
	c, opening := g.conns[connID], g.opening[connID]
	g.mu.Unlock()
	if c == nil && opening {
		return fmt.Errorf("connection %s is still opening; push dropped", connID)
	}
	if c == nil {
		return fmt.Errorf("connection %s: %w", connID, channel.ErrGone)
	}
	ctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("push to %s: %w: %v", connID, channel.ErrGone, err)
	}
	return nil
}

func (g *WSGateway) event(route, connID string, r *http.Request, body string) events.APIGatewayWebsocketProxyRequest {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			q[k] = v[0]
		}
	}
	return events.APIGatewayWebsocketProxyRequest{QueryStringParameters: q, Body: body,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{RouteKey: route, ConnectionID: connID,
			EventType: map[string]string{channel.RouteConnect: "CONNECT", channel.RouteDisconnect: "DISCONNECT"}[route],
			Stage:     "local", RequestID: newRequestID()}}
}

// ServeHTTP runs $connect (a refusal answers its status before the
// upgrade, as API Gateway does), then $default for each text message until
// the socket closes, then $disconnect. Like API Gateway it pushes nothing
// on its own at connect: the status arrives in answer to the client's
// {"action":"hello"} (internal/channel).
func (g *WSGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	connID := hex.EncodeToString(b[:])
	ctx := r.Context()
	g.mu.Lock()
	g.opening[connID] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.opening, connID)
		g.mu.Unlock()
	}()
	resp, err := g.Handler.Handle(ctx, g.event(channel.RouteConnect, connID, r, ""))
	if err != nil || resp.StatusCode != http.StatusOK {
		status := resp.StatusCode
		if status == 0 {
			status = http.StatusInternalServerError
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true}) // any origin, like API Gateway
	if err != nil {
		_, _ = g.Handler.Handle(context.WithoutCancel(ctx), g.event(channel.RouteDisconnect, connID, r, ""))
		return
	}
	g.mu.Lock()
	g.conns[connID] = c
	delete(g.opening, connID)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.conns, connID)
		g.mu.Unlock()
		_, _ = g.Handler.Handle(context.WithoutCancel(ctx), g.event(channel.RouteDisconnect, connID, r, ""))
		_ = c.CloseNow()
	}()
	// Messages are read as they come and handled one at a time by a worker,
	// in order; a heartbeat queued behind another heartbeat replaces it, so
	// a burst of visibility toggles settles to the last one instead of
	// costing table operations each. Every message counts against the
	// connection's bound first (channel.Handler.Admit: past it the
	// connection is closed with 1008).
	q := &msgQueue{ready: make(chan struct{}, 1)}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for body, ok := q.next(wctx); ok; body, ok = q.next(wctx) {
			if _, err := g.Handler.Handle(wctx, g.event(channel.RouteDefault, connID, r, body)); err != nil {
				g.Log.WarnContext(wctx, "channel message", "connection_id", connID, "err", err)
			}
		}
	}()
	defer func() { stop(); <-done }() // before the $disconnect above
	for {
		// Like API Gateway, a socket silent for wsIdleTimeout is closed
		// (the client reconnects), so a live connection always speaks
		// within the sweep's bound on silence (channel.StaleConnAge).
		rctx, cancel := context.WithTimeout(ctx, wsIdleTimeout)
		typ, data, err := c.Read(rctx)
		cancel()
		if err != nil {
			return
		}
		if !g.Handler.Admit(ctx, connID) {
			return // closed with 1008 by Close
		}
		if typ != websocket.MessageText {
			continue
		}
		q.push(string(data))
	}
}

// msgQueue is one connection's messages waiting for the worker: in
// order, but a heartbeat queued right behind another heartbeat replaces it
// (the later one says everything the earlier one did).
type msgQueue struct {
	mu    sync.Mutex
	items []string
	ready chan struct{} // signalled when items were added
}

func (q *msgQueue) push(body string) {
	q.mu.Lock()
	if n := len(q.items); n > 0 && isHeartbeat(body) && isHeartbeat(q.items[n-1]) {
		q.items[n-1] = body
	} else {
		q.items = append(q.items, body)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// next returns the oldest queued message, waiting for one; false when ctx
// is done.
func (q *msgQueue) next(ctx context.Context) (string, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			body := q.items[0]
			q.items = q.items[1:]
			q.mu.Unlock()
			return body, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return "", false
		}
	}
}

// isHeartbeat reports whether body is a {"action":"heartbeat"} message.
func isHeartbeat(body string) bool {
	var m struct {
		Action string `json:"action"`
	}
	return json.Unmarshal([]byte(body), &m) == nil && m.Action == "heartbeat"
}

// Close closes connection connID with code and reason (channel.Closer:
// the Handler closes an over-limit connection with 1008). Errors:
// channel.ErrGone when the gateway does not hold it.
func (g *WSGateway) Close(_ context.Context, connID string, code int, reason string) error {
	g.mu.Lock()
	c := g.conns[connID]
	g.mu.Unlock()
	if c == nil {
		return fmt.Errorf("connection %s: %w", connID, channel.ErrGone)
	}
	// Synchronous: the read loop calls it between reads (through Admit),
	// so the close handshake can read the peer's answer.
	return c.Close(websocket.StatusCode(code), reason)
}
