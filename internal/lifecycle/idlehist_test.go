package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestIdleHistogramObserve(t *testing.T) {
	var h lifecycle.IdleHistogram
	if h.Observe(59 * time.Second) {
		t.Error("a 59 s silence counted as a return")
	}
	for _, gap := range []time.Duration{time.Minute, 90 * time.Second, 239*time.Minute + 59*time.Second, 4 * time.Hour, 30 * time.Hour} {
		if !h.Observe(gap) {
			t.Errorf("gap %v not recorded", gap)
		}
	}
	if got, want := h.Counts[1], uint16(2); got != want {
		t.Errorf("bin 1 = %d, want %d", got, want)
	}
	if got, want := h.Counts[239], uint16(1); got != want {
		t.Errorf("bin 239 = %d, want %d", got, want)
	}
	if got, want := h.Over, uint16(2); got != want {
		t.Errorf("out of bounds = %d, want %d", got, want)
	}
	if got, want := h.Returns(), 5; got != want {
		t.Errorf("returns = %d, want %d", got, want)
	}
}

func TestIdleHistogramDecays(t *testing.T) {
	var h lifecycle.IdleHistogram
	for range 255 {
		h.Observe(5 * time.Minute)
	}
	h.Observe(6 * time.Minute) // the 256th halves every bin
	if got, want := h.Counts[5], uint16(127); got != want {
		t.Errorf("bin 5 = %d, want %d", got, want)
	}
	if got, want := h.Counts[6], uint16(0); got != want {
		t.Errorf("bin 6 = %d, want %d (a single return fades)", got, want)
	}
}

func TestIdleHistogramOutcomes(t *testing.T) {
	var h lifecycle.IdleHistogram
	for _, hit := range []bool{false, false, true, true, false, true} {
		h.RecordOutcome(hit)
	}
	if got, want := h.RecentMisses(4), 1; got != want {
		t.Errorf("misses in the last 4 = %d, want %d", got, want)
	}
	if got, want := h.RecentMisses(8), 3; got != want {
		t.Errorf("misses in the last 8 = %d, want %d (only 6 recorded)", got, want)
	}
}

func TestIdleHistogramEncoding(t *testing.T) {
	var h lifecycle.IdleHistogram
	for i := 1; i < lifecycle.IdleBins; i++ {
		h.Counts[i] = uint16(60000 + i)
	}
	h.Over, h.Outcomes, h.Predictions, h.Ends = 65535, 0b1010, 4, 65535
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1024 {
		t.Errorf("a full histogram encodes to %d bytes, want at most 1 KB", len(b))
	}
	var got lifecycle.IdleHistogram
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Errorf("round trip changed the histogram")
	}
	t.Run("Version1", func(t *testing.T) {
		// Before Ends: version 1, Over then the bins.
		var v1 lifecycle.IdleHistogram
		if err := v1.UnmarshalBinary([]byte{1, 0b1, 1, 3, 5, 7}); err != nil {
			t.Fatal(err)
		}
		if v1.Over != 3 || v1.Counts[4] != 7 || v1.Ends != 0 || v1.Predictions != 1 {
			t.Errorf("version 1 decoded to over %d, bin 4 %d, ends %d", v1.Over, v1.Counts[4], v1.Ends)
		}
	})
	var empty lifecycle.IdleHistogram
	b, _ = empty.MarshalBinary()
	if len(b) > 8 {
		t.Errorf("an empty histogram encodes to %d bytes", len(b))
	}
	for name, bad := range map[string][]byte{
		"Empty":      nil,
		"Version":    {9, 0, 0, 0},
		"Truncated":  {1, 0, 0, 0, 1},
		"PastTheEnd": {1, 0, 0, 0, 250, 1},
		"ZeroDelta":  {1, 0, 0, 0, 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			var h lifecycle.IdleHistogram
			if err := h.UnmarshalBinary(bad); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
		})
	}
}

func TestIdleHistogramEnds(t *testing.T) {
	var h lifecycle.IdleHistogram
	h.RecordPause()
	h.RecordPause()
	h.RecordBack()
	if got, want := h.Ends, uint16(1); got != want {
		t.Errorf("ends = %d, want %d", got, want)
	}
	h.RecordBack()
	h.RecordBack() // more returns than pauses (a pause not counted): never below 0
	if got := h.Ends; got != 0 {
		t.Errorf("ends = %d, want 0", got)
	}
	for range 40 {
		h.RecordPause()
	}
	for range 256 {
		h.Observe(5 * time.Minute)
	}
	if got, want := h.Ends, uint16(20); got != want {
		t.Errorf("ends after the decay = %d, want %d (halved with the bins)", got, want)
	}
}
