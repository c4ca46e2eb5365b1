package dynamo_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestReshard changes the shard count of a table with data: running,
// transitional and paused sessions written at 8 shards. Growing keeps every
// session findable even before the backfill (the old shards are among the
// new ones); shrinking loses the sessions of the dropped shards until
// Reshard moves them, after which every index finds every session, each in
// its shard at the new count, and a second run moves nothing.
func TestReshard(t *testing.T) {
	f := MustFixture(t)
	before := t0.Add(time.Hour)
	want := map[lifecycle.DueIndex]map[string]bool{
		lifecycle.IndexIdle: {}, lifecycle.IndexLease: {}, lifecycle.IndexPaused: {},
	}
	for i := range 40 {
		s := runningSession(sessionID(i), "acct_1", t0.Add(-time.Hour))
		s.IdleDeadline = t0.Add(-time.Minute)
		f.MustCreate(t, s)
		switch i % 3 {
		case 0:
			want[lifecycle.IndexIdle][s.ID] = true
		case 1:
			f.MustTransition(t, s, lifecycle.StatePausing, t0.Add(-time.Hour))
			want[lifecycle.IndexLease][s.ID] = true
		case 2:
			f.MustTransition(t, s, lifecycle.StatePaused, t0.Add(-time.Minute))
			want[lifecycle.IndexPaused][s.ID] = true
		}
	}
	at := func(shards int) *dynamo.Store {
		return dynamo.New(dynamo.Config{Client: f.client, Table: f.table, Shards: shards})
	}
	found := func(st *dynamo.Store) (missing int) {
		for index, ids := range want {
			got, _ := collectDue(t, st, lifecycle.DueQuery{Index: index, Before: before, Limit: 7})
			for id := range ids {
				if !got[id] {
					missing++
				}
			}
		}
		return missing
	}

	t.Run("GrowKeepsEverySessionFindable", func(t *testing.T) {
		if got := found(at(64)); got != 0 {
			t.Fatalf("%d sessions not found at 64 shards before the backfill, want 0", got)
		}
	})

	t.Run("ShrinkNeedsTheBackfill", func(t *testing.T) {
		small := at(3)
		if got := found(small); got == 0 {
			t.Fatal("every session found at 3 shards before the backfill; the test shows nothing")
		}
		res, err := small.Reshard(t.Context(), 2)
		if err != nil {
			t.Fatalf("reshard: %v", err)
		}
		if got, want := res.Scanned, 40; got != want {
			t.Errorf("scanned = %d, want %d", got, want)
		}
		if res.Moved == 0 {
			t.Error("moved = 0, want the sessions of shards 3..7")
		}
		if got := found(small); got != 0 {
			t.Errorf("%d sessions not found at 3 shards after the backfill, want 0", got)
		}
		for i := range 40 {
			item := f.rawItem(t, sessionID(i))
			for _, attr := range []string{"idle_shard", "lease_shard", "paused_shard"} {
				if v, ok := item[attr]; ok {
					if got, want := mustNumber(t, v), dynamo.ShardOf(sessionID(i), 3); got != want {
						t.Errorf("%s %s = %d, want %d", sessionID(i), attr, got, want)
					}
				}
			}
		}
		again, err := small.Reshard(t.Context(), 1)
		if err != nil {
			t.Fatalf("reshard again: %v", err)
		}
		if again.Moved != 0 {
			t.Errorf("second run moved %d, want 0", again.Moved)
		}
		// The backfill changed no session: versions and states stand.
		for i := range 40 {
			if got := f.MustGet(t, sessionID(i)); got.Version < 1 || got.Version > 2 {
				t.Errorf("%s version %d after the backfill, want its own", got.ID, got.Version)
			}
		}
	})
}
