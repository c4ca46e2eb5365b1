package fakekit

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// Order keeps the order in which a fake first stored each id: its
// creation order, for listing and paging. The zero Order is empty; it is
// not safe for concurrent use (the fake's lock guards it).
type Order struct {
	seq int
	of  map[string]int
}

// Add places id after every id added before it and returns its place
// (from 1); an id already placed keeps its place.
func (o *Order) Add(id string) int {
	if n, ok := o.of[id]; ok {
		return n
	}
	if o.of == nil {
		o.of = map[string]int{}
	}
	o.seq++
	o.of[id] = o.seq
	return o.seq
}

// Of returns id's place, 0 when it has none.
func (o *Order) Of(id string) int { return o.of[id] }

// Next returns the place the next new id takes (a fake numbers its ids
// with it).
func (o *Order) Next() int { return o.seq + 1 }

// Cursor returns an opaque page cursor holding key under prefix:
// base64url(prefix + key).
func Cursor(prefix, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + key))
}

// ReadCursor returns the key a Cursor of prefix holds; false when c is not
// one.
func ReadCursor(c, prefix string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), prefix) {
		return "", false
	}
	return strings.TrimPrefix(string(b), prefix), true
}

// Limit reads a page size: def when v is "", else a whole number from lo
// to hi (false otherwise).
func Limit(v string, def, lo, hi int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= lo && n <= hi
}
