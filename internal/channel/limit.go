package channel

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Per-connection message bounds (ours; docs/DESIGN.md "Client channel"): a
// connection may send MaxMessagesPerSecond messages a second on average,
// MessageBurst at once. sandman.js sends a heartbeat at most every 30 s plus
// one per visibility change, so only a broken or hostile client reaches
// them; past them the connection is closed with 1008 (policy violation).
const (
	MaxMessagesPerSecond = 10
	MessageBurst         = 20
)

// StatusPolicyViolation is the WebSocket close code (RFC 6455 1008) of a
// connection closed for sending too many messages, and the status $default
// answers for a message refused for that reason.
const StatusPolicyViolation = 1008

// Closer closes a connection on the server's initiative: the local
// gateway with a close code, the API Gateway Management API's
// DeleteConnection in AWS (where API Gateway picks the close frame). A
// Pusher that is also a Closer is used by the Handler for over-limit
// connections.
type Closer interface {
	Close(ctx context.Context, connID string, code int, reason string) error
}

// connState is what a Handler remembers of one connection, in process:
// its rate bucket and its last heartbeat that reached the table. In AWS
// each warm container of the channel function keeps its own, so the bound
// and the coalescing are per container (API Gateway spreads one
// connection's messages over few containers); the local gateway is one
// process.
type connState struct {
	bucket   *rate.Limiter
	beatAt   time.Time // when the last heartbeat was handled in full
	visible  bool      // its visibility
	hasBeat  bool
	lastUsed time.Time
}

// connStates is a bounded map of connState by connection id.
type connStates struct {
	mu sync.Mutex
	m  map[string]*connState
}

// maxConnStates bounds the in-process memory of connections; past it the
// least recently used half is forgotten (a forgotten connection gets a
// full bucket and its next heartbeat is handled in full: safe).
const maxConnStates = 10_000

func (s *connStates) get(connID string, now time.Time) *connState {
	if s.m == nil {
		s.m = map[string]*connState{}
	}
	st, ok := s.m[connID]
	if !ok {
		if len(s.m) >= maxConnStates {
			s.evict()
		}
		st = &connState{bucket: rate.NewLimiter(MaxMessagesPerSecond, MessageBurst)}
		s.m[connID] = st
	}
	st.lastUsed = now
	return st
}

// evict forgets the connections not used since the median last use.
func (s *connStates) evict() {
	var oldest, newest time.Time
	for _, st := range s.m {
		if oldest.IsZero() || st.lastUsed.Before(oldest) {
			oldest = st.lastUsed
		}
		if st.lastUsed.After(newest) {
			newest = st.lastUsed
		}
	}
	mid := oldest.Add(newest.Sub(oldest) / 2)
	for id, st := range s.m {
		if !st.lastUsed.After(mid) {
			delete(s.m, id)
		}
	}
}

func (s *connStates) forget(connID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, connID)
}

// admit reports whether connID may send one more message at now.
func (s *connStates) admit(connID string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(connID, now).bucket.AllowN(now, 1)
}

// coalesce reports whether a heartbeat of visibility visible at now can be
// answered without touching the table: the connection's last heartbeat
// handled in full had the same visibility and is within granularity.
func (s *connStates) coalesce(connID string, visible bool, now time.Time, granularity time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(connID, now)
	return st.hasBeat && st.visible == visible && now.Sub(st.beatAt) < granularity
}

// beat records a heartbeat handled in full.
func (s *connStates) beat(connID string, visible bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(connID, now)
	st.hasBeat, st.visible, st.beatAt = true, visible, now
}
