package reliability

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Write is one committed session write as the store acknowledged it.
type Write struct {
	SessionID string
	Version   int64           // the session's version after the write
	From      lifecycle.State // "" for the create
	To        lifecycle.State // the state written
	SandboxID string          // the sandbox id written ("" when none)
	Reason    string          // the session's reason as written
}

// Transition reports whether the write changed the state (a create counts).
func (w Write) Transition() bool { return w.From != w.To }

// RecordingStore wraps a lifecycle.Store. It records every session write the
// wrapped store acknowledged, checks that every strongly consistent read
// (GetSession) returns a version at least as new as the newest write
// acknowledged before the read began (a version never goes backwards), and
// can refuse chosen writes without passing them on. It is safe for
// concurrent use.
type RecordingStore struct {
	lifecycle.Store
	// CheckpointStore passes the wrapped store's checkpoints through
	// (lifecycle.CheckpointsOf); they are not recorded.
	lifecycle.CheckpointStore

	mu        sync.Mutex
	writes    map[string][]Write
	committed map[string]int64 // newest acknowledged version per session
	reads     int
	backwards []string // descriptions of reads that went backwards
	refuse    func(next *lifecycle.Session, from lifecycle.State) error
}

var _ lifecycle.Store = (*RecordingStore)(nil)

// NewRecordingStore returns a RecordingStore around store.
func NewRecordingStore(store lifecycle.Store) *RecordingStore {
	return &RecordingStore{Store: store, CheckpointStore: lifecycle.CheckpointsOf(store), writes: map[string][]Write{}, committed: map[string]int64{}}
}

// SetRefuse sets a hook asked before every CreateSession (from "") and
// UpdateSession: a non-nil error is returned to the caller and the write is
// not made, as when the table is unreachable. nil removes the hook.
func (s *RecordingStore) SetRefuse(f func(next *lifecycle.Session, from lifecycle.State) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = f
}

func (s *RecordingStore) refused(next *lifecycle.Session, from lifecycle.State) error {
	s.mu.Lock()
	f := s.refuse
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(next, from)
}

// CreateSession creates through the wrapped store and records the write.
func (s *RecordingStore) CreateSession(ctx context.Context, sess *lifecycle.Session) error {
	if err := s.refused(sess, ""); err != nil {
		return err
	}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return err
	}
	s.record(sess, "")
	return nil
}

// UpdateSession updates through the wrapped store and records the write.
func (s *RecordingStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if err := s.refused(sess, from); err != nil {
		return err
	}
	if err := s.Store.UpdateSession(ctx, sess, from, guard); err != nil {
		return err
	}
	s.record(sess, from)
	return nil
}

func (s *RecordingStore) record(sess *lifecycle.Session, from lifecycle.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes[sess.ID] = append(s.writes[sess.ID], Write{
		SessionID: sess.ID, Version: sess.Version, From: from, To: sess.State,
		SandboxID: sess.SandboxID, Reason: sess.Reason,
	})
	s.committed[sess.ID] = max(s.committed[sess.ID], sess.Version)
}

// GetSession reads through the wrapped store and checks the version read
// against the writes acknowledged before the read began.
func (s *RecordingStore) GetSession(ctx context.Context, id string) (*lifecycle.Session, error) {
	s.mu.Lock()
	floor := s.committed[id]
	s.mu.Unlock()
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if sess.Version < floor {
		s.backwards = append(s.backwards, fmt.Sprintf("session %s read at version %d after version %d was committed",
			id, sess.Version, floor))
	}
	return sess, nil
}

// Writes returns the writes recorded for a session, in version order.
func (s *RecordingStore) Writes(id string) []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.writes[id])
	slices.SortFunc(out, func(a, b Write) int { return int(a.Version - b.Version) })
	return out
}

// Sessions returns the ids of every session with a recorded write, sorted.
func (s *RecordingStore) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.writes))
	for id := range s.writes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Reads returns how many GetSession calls were checked.
func (s *RecordingStore) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// Backwards returns a description of every read that saw a version older
// than one already committed; it should be empty.
func (s *RecordingStore) Backwards() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.backwards)
}

// CheckHistory checks one session's recorded writes: versions 1, 2, ... n
// with none missing or repeated (no lost or silent overwrite), the first a
// create, and each write starting from the state the previous one wrote.
// It returns one description per problem.
func CheckHistory(writes []Write) []string {
	var problems []string
	for i, w := range writes {
		if want := int64(i + 1); w.Version != want {
			problems = append(problems, fmt.Sprintf("write %d has version %d, want %d (versions %v)", i, w.Version, want, versions(writes)))
			break
		}
		switch {
		case i == 0 && w.From != "":
			problems = append(problems, fmt.Sprintf("version 1 is an update from %s, want the create", w.From))
		case i > 0 && w.From != writes[i-1].To:
			problems = append(problems, fmt.Sprintf("version %d starts from %s but version %d wrote %s",
				w.Version, w.From, writes[i-1].Version, writes[i-1].To))
		}
	}
	return problems
}

func versions(writes []Write) []int64 {
	out := make([]int64, len(writes))
	for i, w := range writes {
		out[i] = w.Version
	}
	return out
}
