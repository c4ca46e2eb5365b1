package fakekit_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

func TestWindow(t *testing.T) {
	var w fakekit.Window
	at := time.Date(2026, 1, 2, 3, 4, 50, 0, time.UTC)
	for i, want := range []int{1, 2, 3} {
		used, reset := w.Take("a", at)
		if used != want || reset != 10 {
			t.Errorf("take #%d = %d, %d; want %d, 10", i+1, used, reset, want)
		}
	}
	if used, _ := w.Take("b", at); used != 1 {
		t.Errorf("another bucket = %d, want 1", used)
	}
	if used, reset := w.Take("a", at.Add(10*time.Second)); used != 1 || reset != 60 {
		t.Errorf("the next minute = %d, %d; want 1, 60", used, reset)
	}
	if _, reset := w.Take("a", at.Add(69*time.Second+999*time.Millisecond)); reset != 1 {
		t.Errorf("reset at the minute's end = %d, want at least 1", reset)
	}
}

func TestPageNumber(t *testing.T) {
	for _, c := range []struct {
		n               int
		page, limit     string
		from, to, pages int
		ok              bool
	}{
		{5, "", "", 0, 5, 1, true},
		{5, "2", "2", 2, 4, 3, true},
		{5, "3", "2", 4, 5, 3, true},
		{5, "9", "2", 5, 5, 3, true},
		{0, "", "", 0, 0, 1, true},
		{5, "0", "", 0, 0, 0, false},
		{5, "", "101", 0, 0, 0, false},
		{5, "x", "", 0, 0, 0, false},
	} {
		from, to, pages, ok := fakekit.PageNumber(c.n, c.page, c.limit, 10, 100)
		if from != c.from || to != c.to || pages != c.pages || ok != c.ok {
			t.Errorf("PageNumber(%d, %q, %q) = %d %d %d %v, want %d %d %d %v", c.n, c.page, c.limit, from, to, pages, ok, c.from, c.to, c.pages, c.ok)
		}
	}
}
