package memstore

import (
	"context"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// idleState holds the learned idle policy's histograms by key.
type idleState struct {
	mu    sync.Mutex
	items map[string]lifecycle.IdleHistogramItem
}

var _ lifecycle.IdleHistogramStore = (*Store)(nil)

// GetIdleHistogram returns key's item, or an empty one at version 0.
func (st *Store) GetIdleHistogram(_ context.Context, key string) (lifecycle.IdleHistogramItem, error) {
	st.idle.mu.Lock()
	defer st.idle.mu.Unlock()
	if it, ok := st.idle.items[key]; ok {
		return it, nil
	}
	return lifecycle.IdleHistogramItem{Key: key}, nil
}

// PutIdleHistogram stores it when the stored version is still it.Version.
// Errors: invalid (no key), conflict (written meanwhile).
func (st *Store) PutIdleHistogram(_ context.Context, it *lifecycle.IdleHistogramItem) error {
	if it.Key == "" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "idle histogram key is required")
	}
	st.idle.mu.Lock()
	defer st.idle.mu.Unlock()
	if st.idle.items == nil {
		st.idle.items = map[string]lifecycle.IdleHistogramItem{}
	}
	if st.idle.items[it.Key].Version != it.Version {
		return lifecycle.Errorf(lifecycle.CodeConflict, "idle histogram %s was written meanwhile", it.Key)
	}
	it.Version++
	st.idle.items[it.Key] = *it
	return nil
}
