package lifecycle

import (
	"context"
	"time"
)

// ClientConn is one open client-channel (WebSocket) connection of a session
// (docs/DESIGN.md "Client channel").
type ClientConn struct {
	ID        string    // API Gateway's connectionId (or the local gateway's)
	SessionID string    // the session its client token is scoped to
	AccountID string    // the session's account
	Visible   bool      // the client's page is visible
	ExpiresAt time.Time // when the record may be dropped (its TTL)
	// SeenAt is when the connection last spoke ($connect or a message),
	// refreshed at most once per activity granularity; the sweep drops
	// connections silent for longer than channel.StaleConnAge. Zero on
	// records written before it existed (read as ExpiresAt - 2 h).
	SeenAt time.Time
}

// ClientConns stores client-channel connections (internal/dynamo: items
// with a TTL and an index by session).
type ClientConns interface {
	// PutConn stores c, replacing a record with its id.
	PutConn(ctx context.Context, c ClientConn) error
	// GetConn returns one connection. Errors: not_found.
	GetConn(ctx context.Context, id string) (ClientConn, error)
	// DeleteConn removes a connection; a missing one is no error.
	DeleteConn(ctx context.Context, id string) error
	// SessionConns returns every stored connection of a session.
	SessionConns(ctx context.Context, sessionID string) ([]ClientConn, error)
}
