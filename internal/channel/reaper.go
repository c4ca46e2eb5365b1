package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// StaleConnAge bounds how long a connection may stay silent before the
// sweep drops its record: 15 min. API Gateway closes a WebSocket idle for
// 10 minutes (and then delivers $disconnect), and the channel records when
// each connection last spoke (Conn.SeenAt, refreshed at most once per
// activity granularity), so a record silent for longer than this has lost
// its socket without a $disconnect (docs/DESIGN.md "Client channel").
const StaleConnAge = 15 * time.Minute

// ConnStore is Connections that can also list every connection
// (internal/dynamo: a Scan of the sparse by_conn_session index; Memory).
type ConnStore interface {
	Connections
	// AllConns returns every stored connection.
	AllConns(ctx context.Context) ([]Conn, error)
}

// Reaper drops connection records whose socket no longer exists and
// recomputes the presence of their sessions (docs/DESIGN.md "Client
// channel"): the local gateway drops every record at start (its sockets
// died with the previous process), the sweep the ones silent for longer
// than StaleConnAge. Build it with NewReaper.
type Reaper struct {
	svc   *lifecycle.Service
	conns ConnStore
	log   *slog.Logger
}

// NewReaper returns a Reaper. svc and conns are required; a nil log
// discards.
func NewReaper(svc *lifecycle.Service, conns ConnStore, log *slog.Logger) (*Reaper, error) {
	if svc == nil || conns == nil {
		return nil, fmt.Errorf("channel: a service and a connection store are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reaper{svc: svc, conns: conns, log: log}, nil
}

// DropAll drops every connection record and recomputes presence: for a
// gateway that starts with no socket open. It returns how many it dropped.
func (r *Reaper) DropAll(ctx context.Context) (int, error) {
	return r.drop(ctx, func(Conn) bool { return true })
}

// ReapStaleConns drops the connections last heard from before seenBefore
// (now - StaleConnAge in the sweep) and recomputes the presence of their
// sessions. It returns how many it dropped.
func (r *Reaper) ReapStaleConns(ctx context.Context, seenBefore time.Time) (int, error) {
	return r.drop(ctx, func(c Conn) bool { return lastSeen(c).Before(seenBefore) })
}

// ReapStale is ReapStaleConns for connections silent longer than
// StaleConnAge as of now: the sweep's phase (sweep.Config.Conns).
func (r *Reaper) ReapStale(ctx context.Context, now time.Time) (int, error) {
	return r.ReapStaleConns(ctx, now.Add(-StaleConnAge))
}

func (r *Reaper) drop(ctx context.Context, dead func(Conn) bool) (int, error) {
	all, err := r.conns.AllConns(ctx)
	if err != nil {
		return 0, fmt.Errorf("list connections: %w", err)
	}
	var errs []error
	dropped := 0
	sessions := map[string]Conn{} // one presence recompute per session
	for _, c := range all {
		if !dead(c) {
			continue
		}
		if err := r.conns.DeleteConn(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("delete connection %s: %w", c.ID, err))
			continue
		}
		dropped++
		sessions[c.SessionID] = c
	}
	for _, c := range sessions {
		if err := recomputePresence(ctx, r.svc, r.conns, c); err != nil {
			errs = append(errs, err)
		}
	}
	if dropped > 0 {
		r.log.InfoContext(ctx, "dropped connections without a socket", "connections", dropped, "sessions", len(sessions))
	}
	return dropped, errors.Join(errs...)
}

// lastSeen is when c last spoke; a record without SeenAt (written before
// it existed) counts as seen when it was stored, ConnTTL before it expires.
func lastSeen(c Conn) time.Time {
	if !c.SeenAt.IsZero() {
		return c.SeenAt
	}
	return c.ExpiresAt.Add(-ConnTTL)
}

// recomputePresence sets c's session's presence from its stored
// connections: present while any unexpired visible connection is left.
// Errors: the store's; a session gone or final is no error.
func recomputePresence(ctx context.Context, svc *lifecycle.Service, conns Connections, c Conn) error {
	list, err := conns.SessionConns(ctx, c.SessionID)
	if err != nil {
		return fmt.Errorf("list connections of %s: %w", c.SessionID, err)
	}
	present, now := false, svc.Now()
	for _, o := range list {
		present = present || (o.Visible && o.ExpiresAt.After(now))
	}
	if _, _, err := svc.SetPresence(ctx, c.AccountID, c.SessionID, present); err != nil &&
		!lifecycle.IsCode(err, lifecycle.CodeNotFound) && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		return fmt.Errorf("set presence of %s: %w", c.SessionID, err)
	}
	return nil
}
