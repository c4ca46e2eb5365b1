// Package governortest is the contract every governor.Table passes: the
// memory table (governor.MemTable) and the DynamoDB table
// (internal/governor/dynamostore) run the same cases.
package governortest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/governor"
)

// RunTableContract runs the table contract on tables made by newTable (a
// fresh, empty table per call).
func RunTableContract(t *testing.T, newTable func(t *testing.T) governor.Table) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	t.Run("FullThenAdd", func(t *testing.T) {
		tb := newTable(t)
		s, ok, err := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Full: true, Delta: 100 * time.Millisecond})
		if err != nil || !ok || !s.TAT.Equal(now.Add(100*time.Millisecond)) || !s.CutAt.IsZero() || s.Factor(now) != 1 {
			t.Fatalf("full take on an empty table: %+v, %v, %v", s, ok, err)
		}
		s, ok, err = tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: 50 * time.Millisecond, Max: now.Add(time.Second)})
		if err != nil || !ok || !s.TAT.Equal(now.Add(150*time.Millisecond)) {
			t.Fatalf("add within the range: %+v, %v, %v", s, ok, err)
		}
		s, ok, err = tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: 50 * time.Millisecond, Max: now.Add(100 * time.Millisecond)})
		if err != nil || ok || !s.TAT.Equal(now.Add(150*time.Millisecond)) {
			t.Errorf("add past the range: %+v, %v, %v; want refused with the state as it is", s, ok, err)
		}
		if s, ok, _ := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Full: true, Delta: time.Millisecond}); ok {
			t.Errorf("a full take on a bucket that is not full: granted, %+v", s)
		}
		later := now.Add(time.Second)
		if s, ok, _ := tb.Take(ctx, governor.Take{Key: "p#0", Now: later, Delta: time.Millisecond, Max: later.Add(time.Second)}); ok {
			t.Errorf("an add on a bucket full again: granted, %+v", s)
		}
		if s, ok, _ := tb.Take(ctx, governor.Take{Key: "p#1", Now: now, Delta: time.Millisecond, Max: now.Add(time.Second)}); ok || !s.TAT.IsZero() {
			t.Errorf("an add on another, empty shard: %+v, %v; want refused, full", s, ok)
		}
	})
	t.Run("CutHoldoffAndRetryAfter", func(t *testing.T) {
		tb := newTable(t)
		if _, _, err := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Full: true, Delta: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		s, err := tb.Cut(ctx, governor.Cut{Key: "p#0", At: now, To: 0.5, NotAfter: now.Add(-time.Second), Until: now.Add(2 * time.Second)})
		if err != nil || !s.CutAt.Equal(now) || s.CutTo != 0.5 || !s.TAT.Equal(now.Add(2*time.Second)) {
			t.Fatalf("cut: %+v, %v", s, err)
		}
		s, _ = tb.Cut(ctx, governor.Cut{Key: "p#0", At: now.Add(100 * time.Millisecond), To: 0.25, NotAfter: now.Add(-900 * time.Millisecond),
			Until: now.Add(time.Second)})
		if !s.CutAt.Equal(now) || s.CutTo != 0.5 || !s.TAT.Equal(now.Add(2*time.Second)) {
			t.Errorf("a second cut within the hold-off, an earlier Retry-After: %+v; want both ignored", s)
		}
		if _, ok, _ := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: time.Millisecond, Max: now.Add(time.Hour)}); ok {
			t.Error("a take that assumed no cut was granted after one")
		}
		if _, ok, _ := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: time.Millisecond, Max: now.Add(time.Hour), CutAt: now}); !ok {
			t.Error("a take that assumed the cut was refused")
		}
	})
	t.Run("ConcurrentAddsAllCount", func(t *testing.T) {
		tb := newTable(t)
		if _, _, err := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Full: true, Delta: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, ok, err := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: time.Millisecond, Max: now.Add(time.Hour)})
				if err == nil && !ok {
					err = fmt.Errorf("refused")
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a concurrent add: %v", err)
			}
		}
		s, _, _ := tb.Take(ctx, governor.Take{Key: "p#0", Now: now, Delta: 0, Max: now.Add(time.Hour)})
		if want := now.Add((n + 1) * time.Millisecond); !s.TAT.Equal(want) {
			t.Errorf("after %d concurrent adds the TAT is %s, want %s: an add was lost", n, s.TAT, want)
		}
	})
}
