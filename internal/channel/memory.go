package channel

import (
	"context"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Memory is an in-memory Connections, safe for concurrent use: for tests
// and a single-process gateway. Records do not expire.
type Memory struct {
	mu    sync.Mutex
	conns map[string]Conn
}

var _ ConnStore = (*Memory)(nil)

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{conns: map[string]Conn{}} }

// PutConn stores c.
func (m *Memory) PutConn(_ context.Context, c Conn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.conns[c.ID] = c
	return nil
}

// GetConn returns one connection. Errors: not_found.
func (m *Memory) GetConn(_ context.Context, id string) (Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.conns[id]
	if !ok {
		return Conn{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no connection %s", id)
	}
	return c, nil
}

// DeleteConn removes a connection.
func (m *Memory) DeleteConn(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns, id)
	return nil
}

// SessionConns returns a session's connections.
func (m *Memory) SessionConns(_ context.Context, sessionID string) ([]Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Conn
	for _, c := range m.conns {
		if c.SessionID == sessionID {
			out = append(out, c)
		}
	}
	return out, nil
}

// AllConns returns every connection (Reaper).
func (m *Memory) AllConns(_ context.Context) ([]Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Conn, 0, len(m.conns))
	for _, c := range m.conns {
		out = append(out, c)
	}
	return out, nil
}
