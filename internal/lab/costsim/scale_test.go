package costsim_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// MustScale runs c and fails the test on an error.
func MustScale(tb testing.TB, c costsim.ScaleConfig) costsim.ScaleReport {
	tb.Helper()
	r, err := costsim.RunScale(c)
	if err != nil {
		tb.Fatalf("scale: %v", err)
	}
	return r
}

// TestScale checks the target load (the default report's scale rows): the
// pacing never exceeds the provider's limit; timers land within seconds of
// the deadline while the sweep alone waits for its tick; a mass disconnect
// is drained in about DueRate / rate.
func TestScale(t *testing.T) {
	r := MustDefaultReport(t).Scale
	c := r.Config
	if got, want := len(r.Results), 4; got != want {
		t.Fatalf("scale rows = %d, want %d", got, want)
	}
	for _, res := range r.Results {
		if got, want := res.Pauses, c.DueRate*c.Intervals; got != want {
			t.Errorf("%s: %d pauses, want %d", res.Name, got, want)
		}
		if got, limit := res.PeakPerWindow, c.RateLimit+c.Burst; got > limit {
			t.Errorf("%s: %d calls in one %v window, want at most %d", res.Name, got, c.RateWindow, limit)
		}
		if res.LatenessP50 > res.LatenessP99 || res.LatenessP99 > res.LatenessMax {
			t.Errorf("%s: percentiles out of order: %v %v %v", res.Name, res.LatenessP50, res.LatenessP99, res.LatenessMax)
		}
	}
	sweep, timers, shared, mass := r.Results[0], r.Results[1], r.Results[2], r.Results[3]
	if got, limit := timers.LatenessMax, time.Second+c.TimerLateness+time.Second; got > limit {
		t.Errorf("timers: lateness max = %v, want at most %v (half the limit in use: little queueing)", got, limit)
	}
	if got, limit := shared.LatenessP99, 10*time.Second; got > limit {
		t.Errorf("timers with other calls: lateness p99 = %v, want at most %v", got, limit)
	}
	drain := time.Duration(float64(c.DueRate) / timers.CallsPerSecond * float64(time.Second))
	if got := sweep.LatenessMax; got < c.SweepInterval-time.Second || got > c.SweepInterval+drain {
		t.Errorf("sweep only: lateness max = %v, want about one interval %v", got, c.SweepInterval)
	}
	if got := mass.LatenessMax; got < drain*95/100 || got > drain*105/100+2*time.Second {
		t.Errorf("mass disconnect: lateness max = %v, want about %v (the interval's deadlines drained at the limit)", got, drain)
	}
	md := MustDefaultReport(t).Markdown()
	for _, want := range []string{"### Scale", "| timers |", "20,000 lifecycle calls per 30 s"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

func TestScaleSmall(t *testing.T) {
	c := costsim.DefaultScale()
	c.Sessions, c.DueRate, c.Intervals = 1000, 600, 2
	c.RateLimit, c.RateWindow = 1, time.Second // 1 call per second: 600 per 5 min is 2× the pace
	a, b := MustScale(t, c), MustScale(t, c)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs of the same scale config differ")
	}
	timers := a.Results[1]
	// Over capacity the queue grows all along: the last of 1,200 pauses,
	// due within 10 min, is granted about 1,200 s after the start.
	if got := timers.LatenessMax; got < 9*time.Minute {
		t.Errorf("over capacity: lateness max = %v, want the backlog (at least 9 min)", got)
	}
	c.Sessions = 0
	if got := MustScale(t, c); len(got.Results) != 0 || got.Markdown() != "" {
		t.Errorf("scale with no sessions ran %d rows", len(got.Results))
	}
	c = costsim.DefaultScale()
	c.OtherShare = 1
	if _, err := costsim.RunScale(c); err == nil || !strings.Contains(err.Error(), "other share") {
		t.Errorf("RunScale(other share 1) = %v, want an error naming it", err)
	}
}
