package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoints (lifecycle.CheckpointStore), kept per session as the
// DynamoDB store keeps them in the session's partition: a listing reads
// one session's only, newest first by id; the saving ones with a lease are
// in a sparse due index (lifecycle.Checkpoint.LeaseDue).

var _ lifecycle.CheckpointStore = (*Store)(nil)

func errCheckpointNotFound(sessionID, id string) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "checkpoint %s of session %s not found", id, sessionID)
}

// CreateCheckpoint stores a copy of c with version 1 and sets c.Version to
// 1. Errors: invalid, conflict when its id exists in its session.
func (st *Store) CreateCheckpoint(_ context.Context, c *lifecycle.Checkpoint) error {
	if err := lifecycle.ValidStoredCheckpoint(c); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	bySession := st.checkpoints[c.SessionID]
	if _, ok := bySession[c.ID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "checkpoint %s already exists", c.ID)
	}
	if bySession == nil {
		bySession = map[string]*lifecycle.Checkpoint{}
		st.checkpoints[c.SessionID] = bySession
	}
	next := c.Clone()
	next.Version = 1
	bySession[c.ID] = next
	c.Version = 1
	return nil
}

// GetCheckpoint returns a copy of one checkpoint. Errors: not_found.
func (st *Store) GetCheckpoint(_ context.Context, sessionID, id string) (*lifecycle.Checkpoint, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	c, ok := st.checkpoints[sessionID][id]
	if !ok {
		return nil, errCheckpointNotFound(sessionID, id)
	}
	return c.Clone(), nil
}

// stored returns the stored checkpoint c if it has state from (when from
// is set) and c's version. Errors: not_found, conflict.
func (st *Store) storedCheckpoint(c *lifecycle.Checkpoint, from lifecycle.CheckpointState) (*lifecycle.Checkpoint, error) {
	cur, ok := st.checkpoints[c.SessionID][c.ID]
	switch {
	case !ok:
		return nil, errCheckpointNotFound(c.SessionID, c.ID)
	case from != "" && cur.State != from, cur.Version != c.Version:
		return nil, lifecycle.Errorf(lifecycle.CodeConflict, "checkpoint %s changed meanwhile (now %s, version %d)", c.ID, cur.State, cur.Version)
	}
	return cur, nil
}

// UpdateCheckpoint writes c if the stored one has state from and version
// c.Version and the transition is allowed. Errors: invalid, not_found,
// conflict.
func (st *Store) UpdateCheckpoint(_ context.Context, c *lifecycle.Checkpoint, from lifecycle.CheckpointState) error {
	if err := lifecycle.ValidStoredCheckpoint(c); err != nil {
		return err
	}
	if c.State != from && !lifecycle.CanCheckpointTransition(from, c.State) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "a %s checkpoint cannot become %s", from, c.State)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.storedCheckpoint(c, from); err != nil {
		return err
	}
	next := c.Clone()
	next.Version = c.Version + 1
	st.checkpoints[c.SessionID][c.ID] = next
	c.Version = next.Version
	return nil
}

// DeleteCheckpoint deletes c if the stored one has c's version. Errors:
// not_found, conflict.
func (st *Store) DeleteCheckpoint(_ context.Context, c *lifecycle.Checkpoint) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.storedCheckpoint(c, ""); err != nil {
		return err
	}
	delete(st.checkpoints[c.SessionID], c.ID)
	return nil
}

// ListCheckpoints returns a session's checkpoints newest first (by id), at
// most limit (1..lifecycle.MaxListLimit), after cursor. Errors: invalid.
func (st *Store) ListCheckpoints(_ context.Context, sessionID, cursor string, limit int) (lifecycle.CheckpointPage, error) {
	if limit < 1 || limit > lifecycle.MaxListLimit {
		return lifecycle.CheckpointPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", lifecycle.MaxListLimit)
	}
	scope := "checkpoints:" + sessionID
	after := ""
	if cursor != "" {
		p, err := decodeCursor(cursor, scope)
		if err != nil {
			return lifecycle.CheckpointPage{}, err
		}
		after = p.id
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var all []*lifecycle.Checkpoint
	for _, c := range st.checkpoints[sessionID] {
		if after == "" || c.ID < after {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b *lifecycle.Checkpoint) int { return strings.Compare(b.ID, a.ID) })
	return checkpointPage(all, limit, func(c *lifecycle.Checkpoint) string {
		return encodeCursor(scope, position{time.Unix(0, 0), c.ID})
	}), nil
}

// FindCheckpointsDue returns the saving checkpoints whose lease expires at
// or before q.Before, in due order, at most q.Limit a page. Errors:
// invalid for a limit out of range or a foreign cursor.
func (st *Store) FindCheckpointsDue(_ context.Context, q lifecycle.CheckpointDueQuery) (lifecycle.CheckpointPage, error) {
	if q.Limit < 1 || q.Limit > lifecycle.MaxDuePageSize {
		return lifecycle.CheckpointPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", lifecycle.MaxDuePageSize)
	}
	const scope = "due:checkpoints"
	var after *position
	if q.Cursor != "" {
		p, err := decodeCursor(q.Cursor, scope)
		if err != nil {
			return lifecycle.CheckpointPage{}, err
		}
		after = &p
	}
	pos := func(c *lifecycle.Checkpoint) position {
		at, _ := c.LeaseDue()
		return position{at, c.SessionID + "/" + c.ID}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var due []*lifecycle.Checkpoint
	for _, bySession := range st.checkpoints {
		for _, c := range bySession {
			if at, ok := c.LeaseDue(); ok && !at.After(q.Before) && (after == nil || pos(c).compare(*after) > 0) {
				due = append(due, c)
			}
		}
	}
	slices.SortFunc(due, func(a, b *lifecycle.Checkpoint) int { return pos(a).compare(pos(b)) })
	return checkpointPage(due, q.Limit, func(c *lifecycle.Checkpoint) string { return encodeCursor(scope, pos(c)) }), nil
}

// checkpointPage returns up to limit copies of sorted, with the cursor
// after the last one when more follow.
func checkpointPage(sorted []*lifecycle.Checkpoint, limit int, cursor func(*lifecycle.Checkpoint) string) lifecycle.CheckpointPage {
	out := lifecycle.CheckpointPage{Checkpoints: []*lifecycle.Checkpoint{}}
	for _, c := range sorted {
		if len(out.Checkpoints) == limit {
			out.Cursor = cursor(out.Checkpoints[limit-1])
			break
		}
		out.Checkpoints = append(out.Checkpoints, c.Clone())
	}
	return out
}
