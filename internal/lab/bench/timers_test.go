package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/timer/localtimer"
)

func TestTimersScale(t *testing.T) {
	sc := TimersConfig{}.withDefaults().scaled()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"sweep interval", sc.interval, 10 * time.Second},
		{"horizon margin", sc.margin, 2 * time.Second},
		{"rate window", sc.window, time.Second},
		{"sweep timeout", sc.sweepTimeout, 4*time.Minute/30 + 50*time.Second/30},
		{"sweep margin", sc.sweepMargin, 1500 * time.Millisecond},
		{"limit per window", sc.limit, 66},
		{"due per interval", sc.perInterval, 333},
		{"due in the span", sc.due, 666},
		{"not due", sc.notDue, 333},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Neither pacer's bucket (rate × window + burst) may exceed the limit.
	for _, c := range []struct {
		name  string
		rate  float64
		burst int
	}{
		{"timers", float64(sc.timerRate), localtimer.DefaultConcurrency},
		{"sweep", float64(sc.sweepRate), sweepBurst},
	} {
		if most := c.rate*sc.window.Seconds() + float64(c.burst); most > float64(sc.limit) {
			t.Errorf("%s: up to %.1f calls per window, over the limit of %d", c.name, most, sc.limit)
		}
	}
	// Deadlines arrive at half the provider's limit, as in production
	// (100,000 per 5 min against 20,000 per 30 s).
	perSecond := float64(sc.perInterval) / sc.interval.Seconds()
	limitPerSecond := float64(sc.limit) / sc.window.Seconds()
	if r := perSecond / limitPerSecond; r < 0.49 || r > 0.51 {
		t.Errorf("deadlines per second ÷ limit per second = %.3f, want 0.5", r)
	}
}

func TestLimitedProvider(t *testing.T) {
	fp := fake.New(fake.Config{})
	sbx, err := fp.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	lp := newLimitedProvider(fp, 3, time.Second)
	now := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	lp.now = func() time.Time { return now }

	for i := range 3 {
		if _, err := lp.Get(t.Context(), sbx.ID); err != nil {
			t.Fatalf("call %d within the limit: %v", i+1, err)
		}
		now = now.Add(100 * time.Millisecond)
	}
	// 300 ms after the first call: a fourth call in the window is refused.
	err = lp.Pause(t.Context(), sbx.ID)
	if !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("fourth call in the window: err = %v, want a transient (429) error", err)
	}
	if got, want := lifecycle.RetryAfter(err), 700*time.Millisecond; got != want {
		t.Errorf("retry after = %v, want %v (until the first call leaves the window)", got, want)
	}
	if got := fp.Calls(fake.OpPause); got != 0 {
		t.Errorf("the refused pause reached the provider (%d calls)", got)
	}
	// Once the first call is a window old, one more fits.
	now = now.Add(700 * time.Millisecond)
	if err := lp.Pause(t.Context(), sbx.ID); err != nil {
		t.Fatalf("call after the window moved: %v", err)
	}
	calls, refused, peak := lp.stats()
	if calls != 5 || refused != 1 || peak != 3 {
		t.Errorf("stats = %d calls, %d refused, peak %d; want 5, 1, 3", calls, refused, peak)
	}
}
