package storetest

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// testIdleHistograms is the contract of lifecycle.IdleHistogramStore: an
// unknown key reads empty at version 0, a write creates it at version 1,
// every write is conditional on the version read, and a full histogram
// round-trips.
func testIdleHistograms(t *testing.T, newStore NewStore) {
	st, ok := newStore(t).(lifecycle.IdleHistogramStore)
	if !ok {
		t.Fatal("the store keeps no idle histograms")
	}
	ctx := t.Context()
	const key = "user#acct_1#ada"
	it, err := st.GetIdleHistogram(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if it.Key != key || it.Version != 0 || it.Histogram.Returns() != 0 {
		t.Fatalf("unknown key = %+v, want empty at version 0", it)
	}
	for i := 1; i < lifecycle.IdleBins; i++ {
		it.Histogram.Counts[i] = uint16(i * 250)
	}
	it.Histogram.Over, it.Histogram.Outcomes, it.Histogram.Predictions = 7, 0b101, 3
	it.UpdatedAt = t0
	if err := st.PutIdleHistogram(ctx, &it); err != nil {
		t.Fatal(err)
	}
	if got, want := it.Version, int64(1); got != want {
		t.Fatalf("version after the first write = %d, want %d", got, want)
	}
	got, err := st.GetIdleHistogram(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Histogram != it.Histogram || got.Version != 1 || !got.UpdatedAt.Equal(t0) {
		t.Errorf("read back %+v, want %+v", got, it)
	}

	t.Run("ErrConflict", func(t *testing.T) {
		stale := got
		got.Histogram.Observe(3 * time.Minute)
		if err := st.PutIdleHistogram(ctx, &got); err != nil {
			t.Fatal(err)
		}
		stale.Histogram.Observe(5 * time.Minute)
		if err := st.PutIdleHistogram(ctx, &stale); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Fatalf("stale write: %v, want conflict", err)
		}
		again := lifecycle.IdleHistogramItem{Key: key} // version 0: create only
		if err := st.PutIdleHistogram(ctx, &again); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Fatalf("second create: %v, want conflict", err)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		if err := st.PutIdleHistogram(ctx, &lifecycle.IdleHistogramItem{}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Fatalf("no key: %v, want invalid", err)
		}
	})
}
