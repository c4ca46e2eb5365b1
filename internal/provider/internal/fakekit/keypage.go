package fakekit

import (
	"slices"
	"strings"
)

// KeyPage returns the page of items that follows cursor in the order of
// their keys (ascending; desc: descending), at most limit long and never
// nil, and the cursor of the next page: Cursor(prefix, the page's last
// key), nil on the last page. ok is false when cursor is neither "" nor a
// Cursor of prefix. Keys must be unique: a fake sorting by a field appends
// the record's id to it.
func KeyPage[T any](items []T, key func(T) string, cursor, prefix string, limit int, desc bool) (page []T, next *string, ok bool) {
	after := ""
	if cursor != "" {
		if after, ok = ReadCursor(cursor, prefix); !ok {
			return nil, nil, false
		}
	}
	type keyedItem struct {
		k string
		v T
	}
	keyed := make([]keyedItem, len(items))
	for i, it := range items {
		keyed[i].k, keyed[i].v = key(it), it
	}
	slices.SortFunc(keyed, func(a, b keyedItem) int {
		if desc {
			return strings.Compare(b.k, a.k)
		}
		return strings.Compare(a.k, b.k)
	})
	page = []T{}
	last := ""
	for _, it := range keyed {
		if after != "" && ((desc && it.k >= after) || (!desc && it.k <= after)) {
			continue
		}
		if len(page) == limit {
			c := Cursor(prefix, last)
			return page, &c, true
		}
		page, last = append(page, it.v), it.k
	}
	return page, nil, true
}
