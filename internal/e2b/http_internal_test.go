package e2b

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, in string
		want     time.Duration
	}{
		{"Empty", "", 0},
		{"Seconds", "7", 7 * time.Second},
		{"SecondsWithSpace", " 2 ", 2 * time.Second},
		{"Zero", "0", 0},
		{"Negative", "-3", 0},
		{"Absurd", "999999999", 0},
		{"HTTPDate", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"PastDate", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Garbage", "soon", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := parseRetryAfter(tc.in, now), tc.want; got != want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	p := &Provider{cfg: Config{APIKey: "k", RetryBase: 100 * time.Millisecond, RetryMaxWait: time.Second}.withDefaults()}
	ctx := context.Background()
	t.Run("JitteredExponentialCapped", func(t *testing.T) {
		for n := range 40 {
			ceil := min(100*time.Millisecond<<min(n, 20), time.Second)
			for range 50 {
				d, ok := p.backoff(ctx, n, 0)
				if !ok || d < ceil/2 || d > ceil {
					t.Fatalf("backoff(%d) = %v, %v; want in [%v, %v]", n, d, ok, ceil/2, ceil)
				}
			}
		}
	})
	t.Run("RetryAfterRaisesWait", func(t *testing.T) {
		if d, ok := p.backoff(ctx, 0, 800*time.Millisecond); !ok || d != 800*time.Millisecond {
			t.Errorf("backoff = %v, %v; want 800ms, true", d, ok)
		}
	})
	t.Run("RetryAfterBeyondCapStops", func(t *testing.T) {
		if _, ok := p.backoff(ctx, 0, 2*time.Second); ok {
			t.Error("backoff ok = true, want false")
		}
	})
}

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
