package fakekit_test

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestOutbox(t *testing.T) {
	var o fakekit.Outbox[int]
	o.Add(1)
	o.Add(2)
	var got []int
	o.Flush(func(v int) {
		got = append(got, v)
		o.Add(v + 10) // a callback may queue more; the next Flush delivers it
	})
	if want := []int{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("first flush = %v, want %v", got, want)
	}
	o.Flush(nil)
	got = nil
	o.Flush(func(v int) { got = append(got, v) })
	if len(got) != 0 {
		t.Errorf("after a nil flush = %v, want nothing", got)
	}
}
