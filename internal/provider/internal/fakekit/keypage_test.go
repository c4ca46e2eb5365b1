package fakekit

import (
	"fmt"
	"slices"
	"testing"
)

func TestKeyPageWalksEveryItemOnce(t *testing.T) {
	items := []int{5, 3, 9, 1, 7}
	key := func(n int) string { return fmt.Sprintf("%03d", n) }
	for _, desc := range []bool{false, true} {
		var got []int
		cursor := ""
		for range 10 {
			page, next, ok := KeyPage(items, key, cursor, "k|", 2, desc)
			if !ok || len(page) > 2 {
				t.Fatalf("desc=%v: page %v, ok %v", desc, page, ok)
			}
			got = append(got, page...)
			if next == nil {
				break
			}
			cursor = *next
		}
		want := []int{1, 3, 5, 7, 9}
		if desc {
			slices.Reverse(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("desc=%v: walked %v, want %v", desc, got, want)
		}
	}
	if page, next, ok := KeyPage([]int{}, key, "", "k|", 2, false); !ok || page == nil || next != nil {
		t.Errorf("empty: %v %v %v; want [] nil true", page, next, ok)
	}
	if _, _, ok := KeyPage(items, key, Cursor("other|", "003"), "k|", 2, false); ok {
		t.Error("a cursor of another prefix was taken")
	}
}
