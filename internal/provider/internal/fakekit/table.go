package fakekit

import "slices"

// Table holds a fake's records by id, in the order each id was first
// stored (its creation order, for listing and paging; Order). The zero
// Table is empty; it is not safe for concurrent use (the fake's lock
// guards it).
type Table[T any] struct {
	order Order
	rows  map[string]*T
}

// Put stores v as id, replacing the record of that id; an id stored
// before (even one deleted since) keeps its place.
func (t *Table[T]) Put(id string, v *T) {
	if t.rows == nil {
		t.rows = map[string]*T{}
	}
	t.order.Add(id)
	t.rows[id] = v
}

// Get returns the record of id; false when there is none.
func (t *Table[T]) Get(id string) (*T, bool) {
	v, ok := t.rows[id]
	return v, ok
}

// Delete removes the record of id (its place is kept).
func (t *Table[T]) Delete(id string) { delete(t.rows, id) }

// All returns every record, oldest first.
func (t *Table[T]) All() []*T {
	ids := make([]string, 0, len(t.rows))
	for id := range t.rows {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return t.order.Of(a) - t.order.Of(b) })
	out := make([]*T, len(ids))
	for i, id := range ids {
		out[i] = t.rows[id]
	}
	return out
}

// Of returns id's place (from 1), 0 when it was never stored.
func (t *Table[T]) Of(id string) int { return t.order.Of(id) }

// Next returns the place the next new id takes (a fake numbers its ids
// with it).
func (t *Table[T]) Next() int { return t.order.Next() }

// HasAll reports whether have holds every pair of want: a list's filter by
// labels, metadata or tags.
func HasAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
