package governor

import (
	"context"
	"sync"
)

// Table keeps the fleet's buckets: one item per provider and shard, which
// every process leases from (internal/governor/dynamostore on the sessions
// table; MemTable in tests and the cost replay). Implementations must be
// safe for concurrent use.
type Table interface {
	// Take applies t as one conditional update (Take.Apply says what it
	// does) and returns the shard's state after it and true, or, when its
	// condition failed, the state that failed it and false. Errors: the
	// table did not answer (the governor then falls back to its
	// per-process bucket).
	Take(ctx context.Context, t Take) (State, bool, error)
	// Cut applies c (Cut.Apply) and returns the state after it.
	Cut(ctx context.Context, c Cut) (State, error)
}

// MemTable is a Table in memory: the buckets of one process, or of the
// simulated fleet of the cost replay. Its zero value is ready.
type MemTable struct {
	mu     sync.Mutex
	shards map[string]State
	takes  int
}

var _ Table = (*MemTable)(nil)

// Take implements Table.
func (m *MemTable) Take(_ context.Context, t Take) (State, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shards == nil {
		m.shards = map[string]State{}
	}
	m.takes++
	s, ok := t.Apply(m.shards[t.Key])
	if ok {
		m.shards[t.Key] = s
	}
	return s, ok, nil
}

// Cut implements Table.
func (m *MemTable) Cut(_ context.Context, c Cut) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shards == nil {
		m.shards = map[string]State{}
	}
	s := c.Apply(m.shards[c.Key])
	m.shards[c.Key] = s
	return s, nil
}

// Takes returns how many Takes the table answered (each one conditional
// update, granted or not).
func (m *MemTable) Takes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.takes
}
