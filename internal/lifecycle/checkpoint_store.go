package lifecycle

import (
	"context"
	"strconv"
	"time"
)

// CheckpointStore keeps checkpoints, each under its session
// (internal/dynamo: items of the session's partition; memstore). It is
// separate from Store, as PoolStore is; the service answers unavailable
// when its Store is not one. Every write is conditional; a lost race is a
// CodeConflict error and writes nothing.
type CheckpointStore interface {
	// CreateCheckpoint writes a new checkpoint and sets c.Version to 1.
	// Errors: invalid (ValidStoredCheckpoint), conflict when its id exists.
	CreateCheckpoint(ctx context.Context, c *Checkpoint) error
	// GetCheckpoint reads one checkpoint of a session (strongly
	// consistent). Errors: not_found.
	GetCheckpoint(ctx context.Context, sessionID, id string) (*Checkpoint, error)
	// UpdateCheckpoint writes c only if the stored one still has state
	// from and version c.Version, and, when c.State != from, the
	// checkpoint transition table allows it; on success c.Version is
	// incremented. Errors: invalid, not_found, conflict.
	UpdateCheckpoint(ctx context.Context, c *Checkpoint, from CheckpointState) error
	// DeleteCheckpoint deletes c if the stored one still has c.Version.
	// Errors: not_found (already gone), conflict (it changed meanwhile).
	DeleteCheckpoint(ctx context.Context, c *Checkpoint) error
	// ListCheckpoints returns a session's checkpoints newest first (by
	// id, which is time ordered), at most limit (1..MaxListLimit),
	// continuing after cursor ("" for the first page): one query of the
	// session's partition. Errors: invalid (limit, a cursor this store
	// did not issue for the session).
	ListCheckpoints(ctx context.Context, sessionID, cursor string, limit int) (CheckpointPage, error)
	// FindCheckpointsDue returns, across every shard, one page of the
	// saving checkpoints whose lease expires at or before q.Before (a
	// sparse index of saving checkpoints, never a scan). Errors: invalid
	// for a foreign cursor.
	FindCheckpointsDue(ctx context.Context, q CheckpointDueQuery) (CheckpointPage, error)
}

// CheckpointPage is one page of checkpoints; Cursor is "" on the last page.
type CheckpointPage struct {
	Checkpoints []*Checkpoint
	Cursor      string
}

// CheckpointDueQuery asks FindCheckpointsDue for one page.
type CheckpointDueQuery struct {
	Before time.Time // inclusive
	Limit  int       // page size, 1..MaxDuePageSize
	Cursor string    // "" for the first page
}

// ValidStoredCheckpoint checks what every CheckpointStore needs to write c:
// a valid id, a session, an account, a known state and a kind.
// Errors: invalid naming what is wrong.
func ValidStoredCheckpoint(c *Checkpoint) error {
	switch {
	case c == nil:
		return Errorf(CodeInvalid, "checkpoint is required")
	case !ValidCheckpointID(c.ID):
		return Errorf(CodeInvalid, "checkpoint id %s is not valid", strconv.Quote(c.ID))
	case c.SessionID == "" || c.AccountID == "":
		return Errorf(CodeInvalid, "checkpoint %s has no session or account", c.ID)
	case !c.State.Valid():
		return Errorf(CodeInvalid, "checkpoint %s has unknown state %s", c.ID, strconv.Quote(string(c.State)))
	case c.Kind != KindSnapshot && c.Kind != KindArchive:
		return Errorf(CodeInvalid, "checkpoint %s has unknown kind %s", c.ID, strconv.Quote(string(c.Kind)))
	}
	return nil
}

// LeaseDue returns when the saving checkpoint c is due in the
// checkpoint lease index, and whether the index holds it: every saving
// checkpoint with a lease, at its expiry. Both stores key the index by it.
func (c *Checkpoint) LeaseDue() (time.Time, bool) {
	return c.LeaseExpiresAt, c.State == CheckpointSaving && !c.LeaseExpiresAt.IsZero()
}

// CheckpointsOf returns store's checkpoints: store itself when it is a
// CheckpointStore, else one whose every call answers unavailable. Store
// wrappers embed it to pass checkpoints through.
func CheckpointsOf(store Store) CheckpointStore {
	if cs, ok := store.(CheckpointStore); ok {
		return cs
	}
	return noCheckpoints{}
}

// noCheckpoints is the CheckpointStore of a store that keeps none.
type noCheckpoints struct{}

func errNoCheckpoints() error { return Errorf(CodeUnavailable, "this store keeps no checkpoints") }

func (noCheckpoints) CreateCheckpoint(context.Context, *Checkpoint) error { return errNoCheckpoints() }
func (noCheckpoints) GetCheckpoint(context.Context, string, string) (*Checkpoint, error) {
	return nil, errNoCheckpoints()
}
func (noCheckpoints) UpdateCheckpoint(context.Context, *Checkpoint, CheckpointState) error {
	return errNoCheckpoints()
}
func (noCheckpoints) DeleteCheckpoint(context.Context, *Checkpoint) error { return errNoCheckpoints() }
func (noCheckpoints) ListCheckpoints(context.Context, string, string, int) (CheckpointPage, error) {
	return CheckpointPage{}, errNoCheckpoints()
}
func (noCheckpoints) FindCheckpointsDue(context.Context, CheckpointDueQuery) (CheckpointPage, error) {
	return CheckpointPage{}, errNoCheckpoints()
}
