package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		if _, err := g.Handler.Handle(ctx, g.event(channel.RouteDefault, connID, r, string(data))); err != nil {
			g.Log.WarnContext(ctx, "channel message", "connection_id", connID, "err", err)
		}
	}
}
