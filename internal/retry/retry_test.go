package retry

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestParseAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"86401", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := ParseAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	ctx := context.Background()
	for n := range 6 {
		full := min(100*time.Millisecond<<n, 2*time.Second)
		d, ok := Backoff(ctx, n, 100*time.Millisecond, 2*time.Second, 0)
		if !ok || d < full/2 || d > full {
			t.Errorf("Backoff(%d) = %v, %v; want within [%v, %v]", n, d, ok, full/2, full)
		}
	}
	if d, ok := Backoff(ctx, 0, 100*time.Millisecond, 2*time.Second, 800*time.Millisecond); !ok || d != 800*time.Millisecond {
		t.Errorf("retryAfter 800ms: %v, %v; want 800ms", d, ok)
	}
	if _, ok := Backoff(ctx, 0, 100*time.Millisecond, 2*time.Second, 3*time.Second); ok {
		t.Error("retryAfter beyond maxWait: retried")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, ok := Backoff(short, 5, time.Second, 10*time.Second, 0); ok {
		t.Error("wait past the deadline: retried")
	}
}
