package dynamo_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// dueIndexAttrs lists each due index with its key attributes.
var dueIndexAttrs = []struct{ index, shard, due string }{
	{tabledef.IndexIdle, tabledef.AttrIdleShard, tabledef.AttrIdleDue},
	{tabledef.IndexLease, tabledef.AttrLeaseShard, tabledef.AttrLeaseDue},
	{tabledef.IndexPaused, tabledef.AttrPausedShard, tabledef.AttrPausedDue},
}

// checkDueIndexes asserts that session id is in exactly the due index
// wantIndex ("" for none), with the right shard and due time, and that its
// item carries no key attribute of any other due index.
func checkDueIndexes(t *testing.T, f fixture, id, wantIndex string, wantDue time.Time) {
	t.Helper()
	raw := f.rawItem(t, id)
	for _, ix := range dueIndexAttrs {
		entries := f.indexEntries(t, ix.index, ix.shard, ix.due)
		e, in := entries[id]
		if ix.index != wantIndex {
			if in {
				t.Errorf("%s: session in index %s, want absent", id, ix.index)
			}
			for _, attr := range []string{ix.shard, ix.due} {
				if _, ok := raw[attr]; ok {
					t.Errorf("%s: item still has %s", id, attr)
				}
			}
			continue
		}
		if !in {
			t.Errorf("%s: session absent from index %s", id, ix.index)
			continue
		}
		if got, want := e.shard, dynamo.Shard(id); got != want {
			t.Errorf("%s: %s shard = %d, want %d", id, ix.index, got, want)
		}
		if got, want := e.dueMS, wantDue.UnixMilli(); got != want {
			t.Errorf("%s: %s due = %d ms, want %d ms", id, ix.index, got, want)
		}
	}
}

func TestSparseIndexes(t *testing.T) {
	f := MustFixture(t)
	now := t0

	s := runningSession("ses_idx", "acct_1", now)
	f.MustCreate(t, s)
	t.Run("RunningInIdleAtIdleDeadline", func(t *testing.T) {
		checkDueIndexes(t, f, s.ID, tabledef.IndexIdle, t0.Add(10*time.Minute))
	})

	short := runningSession("ses_short", "acct_1", now)
	short.MaxLifetime = 5 * time.Minute // earlier than the idle deadline
	f.MustCreate(t, short)
	t.Run("RunningInIdleAtLifetimeDeadline", func(t *testing.T) {
		checkDueIndexes(t, f, short.ID, tabledef.IndexIdle, t0.Add(5*time.Minute))
	})

	now = now.Add(time.Minute)
	f.MustTransition(t, s, lifecycle.StatePausing, now)
	t.Run("PausingInLeaseOnly", func(t *testing.T) {
		checkDueIndexes(t, f, s.ID, tabledef.IndexLease, now.Add(lifecycle.DefaultPolicy().LeaseDuration))
		if _, ok := f.rawItem(t, s.ID)["pause_deadline"]; ok {
			t.Error("pausing item still has pause_deadline")
		}
	})

	now = now.Add(time.Minute)
	f.MustTransition(t, s, lifecycle.StatePaused, now)
	t.Run("PausedInPausedOnly", func(t *testing.T) {
		// No tier deadline: the dormancy key, PausedAt less dormantOffset.
		checkDueIndexes(t, f, s.ID, tabledef.IndexPaused, time.UnixMilli(now.UnixMilli()-dynamo.DormantOffset))
	})

	now = now.Add(time.Minute)
	f.MustTransition(t, s, lifecycle.StateResuming, now)
	s.RecordActivity(now, 0)
	f.MustTransition(t, s, lifecycle.StateRunning, now)
	t.Run("ResumedBackInIdle", func(t *testing.T) {
		checkDueIndexes(t, f, s.ID, tabledef.IndexIdle, now.Add(10*time.Minute))
	})

	f.MustTransition(t, s, lifecycle.StateExpired, now.Add(time.Minute))
	t.Run("ExpiredInNoIndexAndNoSandboxKey", func(t *testing.T) {
		checkDueIndexes(t, f, s.ID, "", time.Time{})
		if _, ok := f.rawItem(t, s.ID)[tabledef.AttrSandboxKey]; ok {
			t.Errorf("expired item (no sandbox) still has %s", tabledef.AttrSandboxKey)
		}
		if _, err := f.store.FindBySandbox(t.Context(), "fake", "sbx-"+s.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("FindBySandbox after expiry: %v, want not_found", err)
		}
	})
}

func TestFindDue(t *testing.T) {
	t.Run("IdleAcrossShardsAndPages", func(t *testing.T) {
		f := MustFixture(t)
		want := map[string]bool{}
		shards := map[int]bool{}
		for i := range 60 {
			s := runningSession(sessionID(i), "acct_1", t0.Add(-time.Hour))
			s.MaxLifetime = 0
			s.IdleDeadline = t0.Add(time.Duration(i-30) * time.Minute) // 0..30 due, 31..59 not
			f.MustCreate(t, s)
			if i <= 30 {
				want[s.ID] = true
				shards[dynamo.Shard(s.ID)] = true
			}
		}
		// Due within t0's millisecond but after t0: not due yet.
		late := runningSession("ses_1ns_late", "acct_1", t0.Add(-time.Hour))
		late.MaxLifetime, late.IdleDeadline = 0, t0.Add(time.Nanosecond)
		f.MustCreate(t, late)
		// Past its deadline but paused: not in the idle index.
		paused := runningSession("ses_paused_due", "acct_1", t0.Add(-time.Hour))
		paused.IdleDeadline = t0.Add(-time.Hour)
		f.MustCreate(t, paused)
		f.MustTransition(t, paused, lifecycle.StatePaused, t0.Add(-time.Minute))

		got, pages := collectDue(t, f.store, lifecycle.DueQuery{Index: lifecycle.IndexIdle, Before: t0, Limit: 7})
		if len(shards) < 2 {
			t.Fatalf("due sessions span %d shards; the test needs several", len(shards))
		}
		if !equalSets(got, want) {
			t.Errorf("FindDue ids = %v\nwant %v", keys(got), keys(want))
		}
		if pages < 5 {
			t.Errorf("read %d pages of at most 7 for %d sessions", pages, len(want))
		}
	})

	t.Run("LeaseAndPaused", func(t *testing.T) {
		f := MustFixture(t)
		wantLease, wantPaused := map[string]bool{}, map[string]bool{}
		for i := range 12 {
			s := runningSession(sessionID(i), "acct_1", t0.Add(-time.Hour))
			f.MustCreate(t, s)
			// Leases from t0-30m+i*5m: expired for i*5m-30m+5m(lease) <= 0, i <= 5.
			f.MustTransition(t, s, lifecycle.StatePausing, t0.Add(-30*time.Minute+time.Duration(i)*5*time.Minute))
			if i <= 5 {
				wantLease[s.ID] = true
			}
			if i%2 == 0 {
				// Paused at the same instants: paused before t0-5m for i <= 5.
				f.MustTransition(t, s, lifecycle.StatePaused, t0.Add(-30*time.Minute+time.Duration(i)*5*time.Minute))
				delete(wantLease, s.ID)
				if i <= 5 {
					wantPaused[s.ID] = true
				}
			}
		}
		gotLease, _ := collectDue(t, f.store, lifecycle.DueQuery{Index: lifecycle.IndexLease, Before: t0, Limit: 2})
		if !equalSets(gotLease, wantLease) {
			t.Errorf("lease ids = %v\nwant %v", keys(gotLease), keys(wantLease))
		}
		gotPaused, _ := collectDue(t, f.store, lifecycle.DueQuery{Index: lifecycle.IndexPaused, Before: t0.Add(-5 * time.Minute), Limit: 2})
		if !equalSets(gotPaused, wantPaused) {
			t.Errorf("paused ids = %v\nwant %v", keys(gotPaused), keys(wantPaused))
		}
	})

	t.Run("EmptyIndex", func(t *testing.T) {
		f := MustFixture(t)
		page, err := f.store.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexIdle, Before: t0, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Sessions), 0; got != want {
			t.Errorf("sessions = %d, want %d", got, want)
		}
		if got, want := page.Cursor, ""; got != want {
			t.Errorf("Cursor = %q, want %q", got, want)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		f := MustFixture(t)
		for i := range 3 {
			s := runningSession(sessionID(i), "acct_1", t0.Add(-time.Hour))
			s.IdleDeadline = t0.Add(-time.Minute)
			f.MustCreate(t, s)
		}
		idlePage, err := f.store.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexIdle, Before: t0, Limit: 1})
		if err != nil || idlePage.Cursor == "" {
			t.Fatalf("first page: cursor %q, err %v", idlePage.Cursor, err)
		}
		for name, q := range map[string]lifecycle.DueQuery{
			"UnknownIndex":   {Index: "nope", Before: t0, Limit: 1},
			"LimitZero":      {Index: lifecycle.IndexIdle, Before: t0, Limit: 0},
			"LimitTooLarge":  {Index: lifecycle.IndexIdle, Before: t0, Limit: 1001},
			"GarbageCursor":  {Index: lifecycle.IndexIdle, Before: t0, Limit: 1, Cursor: "not a cursor!"},
			"OtherIndex":     {Index: lifecycle.IndexLease, Before: t0, Limit: 1, Cursor: idlePage.Cursor},
			"ForgedShard":    {Index: lifecycle.IndexIdle, Before: t0, Limit: 1, Cursor: forge(`{"i":"idle","s":99}`)},
			"UnknownField":   {Index: lifecycle.IndexIdle, Before: t0, Limit: 1, Cursor: forge(`{"i":"idle","x":1}`)},
			"MissingKeyAttr": {Index: lifecycle.IndexIdle, Before: t0, Limit: 1, Cursor: forge(`{"i":"idle","k":{"pk":{"S":"x"}}}`)},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := f.store.FindDue(t.Context(), q)
				if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
					t.Errorf("code %q (%v), want %q", got, err, want)
				}
			})
		}
	})
}

// forge encodes a hand-made cursor the way the store encodes its own.
func forge(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
