package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.PoolStore = (*Store)(nil)

// poolState is the store's warm pools: spares (claimed markers included)
// by pool and sandbox id, and each pool's status.
type poolState struct {
	spares map[string]map[string]*lifecycle.Spare
	status map[string]*lifecycle.PoolStatus
}

func newPoolState() poolState {
	return poolState{spares: map[string]map[string]*lifecycle.Spare{}, status: map[string]*lifecycle.PoolStatus{}}
}

func errSpareNotFound(sp *lifecycle.Spare) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "spare %s of pool %s not found", sp.SandboxID, sp.PoolID)
}

// PutSpare stores a copy of sp with version 1. Errors: invalid, conflict
// when it exists.
func (st *Store) PutSpare(_ context.Context, sp *lifecycle.Spare) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	pool := st.pools.spares[sp.PoolID]
	if pool == nil {
		pool = map[string]*lifecycle.Spare{}
		st.pools.spares[sp.PoolID] = pool
	}
	if _, ok := pool[sp.SandboxID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s exists", sp.SandboxID)
	}
	sp.Version = 1
	pool[sp.SandboxID] = sp.Clone()
	return nil
}

// stored returns the stored spare of sp checked against status from and
// sp.Version. Errors: not_found, conflict. The caller holds st.mu.
func (st *Store) stored(sp *lifecycle.Spare, from lifecycle.SpareStatus) (*lifecycle.Spare, error) {
	old, ok := st.pools.spares[sp.PoolID][sp.SandboxID]
	switch {
	case !ok:
		return nil, errSpareNotFound(sp)
	case old.Status != from || old.Version != sp.Version:
		return nil, lifecycle.Errorf(lifecycle.CodeConflict, "spare %s changed meanwhile: expected %s at version %d, found %s at version %d",
			sp.SandboxID, from, sp.Version, old.Status, old.Version)
	}
	return old, nil
}

// UpdateSpare stores sp if the stored spare has status from and version
// sp.Version. Errors: invalid, not_found, conflict.
func (st *Store) UpdateSpare(_ context.Context, sp *lifecycle.Spare, from lifecycle.SpareStatus) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.stored(sp, from); err != nil {
		return err
	}
	sp.Version++
	st.pools.spares[sp.PoolID][sp.SandboxID] = sp.Clone()
	return nil
}

// DeleteSpare deletes sp if it still has sp's status and version.
// Errors: invalid, not_found, conflict.
func (st *Store) DeleteSpare(_ context.Context, sp *lifecycle.Spare) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, err := st.stored(sp, sp.Status); err != nil {
		return err
	}
	delete(st.pools.spares[sp.PoolID], sp.SandboxID)
	return nil
}

// ListSpares returns the pool's making and ready spares, oldest first.
func (st *Store) ListSpares(_ context.Context, poolID string) ([]*lifecycle.Spare, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := []*lifecycle.Spare{}
	for _, sp := range st.pools.spares[poolID] {
		if sp.Status != lifecycle.SpareClaimed {
			out = append(out, sp.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *lifecycle.Spare) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.SandboxID, b.SandboxID))
	})
	return out, nil
}

// GetSpare returns one spare or claimed marker. A marker past
// lifecycle.ClaimedMarkerTTL is kept (this store has no TTL): tests see it.
// Errors: not_found.
func (st *Store) GetSpare(_ context.Context, poolID, sandboxID string) (*lifecycle.Spare, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	sp, ok := st.pools.spares[poolID][sandboxID]
	if !ok {
		return nil, errSpareNotFound(&lifecycle.Spare{PoolID: poolID, SandboxID: sandboxID})
	}
	return sp.Clone(), nil
}

// ClaimSpare turns the ready spare sp into a claimed marker naming sess and
// creates sess, under one lock: both or neither. Errors: invalid, conflict
// (the spare is not ready at sp.Version, or the session exists),
// quota_exceeded.
func (st *Store) ClaimSpare(_ context.Context, sp *lifecycle.Spare, sess *lifecycle.Session) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	if err := validSession(sess); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	old, err := st.stored(sp, lifecycle.SpareReady)
	if lifecycle.IsCode(err, lifecycle.CodeNotFound) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s was taken", sp.SandboxID)
	}
	if err != nil {
		return err
	}
	if _, ok := st.sessions[sess.ID]; ok {
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s already exists", sess.ID)
	}
	if err := st.moveSlots(sess, ""); err != nil {
		return err
	}
	marker := old.Clone()
	marker.Status, marker.SessionID, marker.Version, marker.UpdatedAt = lifecycle.SpareClaimed, sess.ID, old.Version+1, sess.CreatedAt
	st.pools.spares[sp.PoolID][sp.SandboxID] = marker
	next := sess.Clone()
	next.Version = 1
	next.RunningLimit = 0
	st.sessions[sess.ID] = next
	sess.Version = 1
	return nil
}

// PoolStatus returns the pool's counters and health.
func (st *Store) PoolStatus(_ context.Context, poolID string) (lifecycle.PoolStatus, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.pools.status[poolID]; ok {
		return *s, nil
	}
	return lifecycle.PoolStatus{PoolID: poolID}, nil
}

func (st *Store) poolStatus(poolID string) *lifecycle.PoolStatus {
	s, ok := st.pools.status[poolID]
	if !ok {
		s = &lifecycle.PoolStatus{PoolID: poolID}
		st.pools.status[poolID] = s
	}
	return s
}

// CountPool adds c to the pool's counters.
func (st *Store) CountPool(_ context.Context, poolID string, c lifecycle.PoolCounts) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.poolStatus(poolID)
	s.Claims += c.Claims
	s.Hits += c.Hits
	s.Misses += c.Misses
	s.Lost += c.Lost
	s.Failed += c.Failed
	s.RunningMS += c.RunningMS
	s.PausedMS += c.PausedMS
	return nil
}

// SavePoolHealth stores h if the pool's health is still at version.
// Errors: conflict.
func (st *Store) SavePoolHealth(_ context.Context, poolID string, h lifecycle.PoolHealth, version int64) (int64, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.poolStatus(poolID)
	if s.Version != version {
		return 0, lifecycle.Errorf(lifecycle.CodeConflict, "the health of pool %s changed meanwhile", poolID)
	}
	s.PoolHealth = h
	s.Version++
	return s.Version, nil
}
