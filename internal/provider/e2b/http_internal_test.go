package e2b

import (
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want int64
	}{
		{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Second, 1},
		{1500 * time.Millisecond, 2}, {10 * time.Minute, 600},
	} {
		if got, want := seconds(tc.in), tc.want; got != want {
			t.Errorf("seconds(%v) = %d, want %d", tc.in, got, want)
		}
	}
}

func TestTokenCacheBounded(t *testing.T) {
	var c tokenCache
	c.m = map[string]string{}
	for i := range maxTokens + 1 {
		c.put(string(rune('a'+i%26))+time.Duration(i).String(), "t")
	}
	if got := len(c.m); got > maxTokens || got != len(c.order) {
		t.Errorf("cache holds %d tokens with %d in order, want at most %d and equal", got, len(c.order), maxTokens)
	}
	c.put("x", "tok")
	if got, want := c.get("x"), "tok"; got != want {
		t.Errorf("get = %q, want %q", got, want)
	}
	c.forget("x")
	if got := c.get("x"); got != "" {
		t.Errorf("get after forget = %q, want empty", got)
	}
}
