package storetest

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// checkpointStore returns the store as a CheckpointStore, failing the test
// otherwise.
func checkpointStore(tb testing.TB, s lifecycle.Store) lifecycle.CheckpointStore {
	tb.Helper()
	cs, ok := s.(lifecycle.CheckpointStore)
	if !ok {
		tb.Fatalf("%T is not a lifecycle.CheckpointStore", s)
	}
	return cs
}

// SavingCheckpoint returns a saving checkpoint of session sessionID
// created at now, with every field set.
func SavingCheckpoint(sessionID, account string, now time.Time) *lifecycle.Checkpoint {
	id := lifecycle.NewCheckpointID(now)
	return &lifecycle.Checkpoint{
		ID: id, SessionID: sessionID, AccountID: account, CreatedAt: now, UpdatedAt: now,
		Label: "before the refactor", Metadata: map[string]string{"commit": "abc123"},
		Kind: lifecycle.KindSnapshot, Keeps: lifecycle.KeepsFilesystemMemory, State: lifecycle.CheckpointSaving,
		Trigger: lifecycle.TriggerAPI, Pinned: true, Provider: "fake", Template: "base", SourceSandboxID: "sbx-" + sessionID,
		ArchiveKey: lifecycle.ArchiveKey(account, sessionID, id), LeaseExpiresAt: now.Add(7 * time.Minute),
	}
}

func sameCheckpoint(tb testing.TB, what string, got, want *lifecycle.Checkpoint) {
	tb.Helper()
	g, w := got.Clone(), want.Clone()
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) || !g.ExpiresAt.Equal(w.ExpiresAt) ||
		!g.LeaseExpiresAt.Equal(w.LeaseExpiresAt) {
		tb.Errorf("%s: times %v %v %v %v, want %v %v %v %v", what, g.CreatedAt, g.UpdatedAt, g.ExpiresAt, g.LeaseExpiresAt,
			w.CreatedAt, w.UpdatedAt, w.ExpiresAt, w.LeaseExpiresAt)
	}
	g.CreatedAt, g.UpdatedAt, g.ExpiresAt, g.LeaseExpiresAt = w.CreatedAt, w.UpdatedAt, w.ExpiresAt, w.LeaseExpiresAt
	if len(g.Metadata) != len(w.Metadata) || g.Metadata["commit"] != w.Metadata["commit"] {
		tb.Errorf("%s: metadata %v, want %v", what, g.Metadata, w.Metadata)
	}
	g.Metadata, w.Metadata = nil, nil
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("%s:\n got %+v\nwant %+v", what, *g, *w)
	}
}

func testCheckpoints(t *testing.T, newStore NewStore) {
	t.Run("Lifecycle", func(t *testing.T) {
		cs := checkpointStore(t, newStore(t))
		ctx := t.Context()
		c := SavingCheckpoint(SessionID(1), "acct_a", t0)
		if err := cs.CreateCheckpoint(ctx, c); err != nil || c.Version != 1 {
			t.Fatalf("create = %v, version %d; want version 1", err, c.Version)
		}
		if err := cs.CreateCheckpoint(ctx, c.Clone()); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("second create = %v, want conflict", err)
		}
		got, err := cs.GetCheckpoint(ctx, c.SessionID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameCheckpoint(t, "get", got, c)
		if _, err := cs.GetCheckpoint(ctx, SessionID(2), c.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("get under another session = %v, want not_found", err)
		}

		stale := c.Clone()
		c.ProviderRef, c.LeaseExpiresAt = "snap-1", t0.Add(10*time.Minute)
		if err := cs.UpdateCheckpoint(ctx, c, lifecycle.CheckpointSaving); err != nil || c.Version != 2 {
			t.Fatalf("update saving = %v, version %d; want version 2", err, c.Version)
		}
		if err := cs.UpdateCheckpoint(ctx, stale, lifecycle.CheckpointSaving); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale update = %v, want conflict", err)
		}
		c.SizeBytes, c.ExpiresAt = 1<<20, t0.Add(30*24*time.Hour)
		if err := c.Settle(lifecycle.CheckpointReady, "", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		wrongFrom := c.Clone()
		if err := cs.UpdateCheckpoint(ctx, wrongFrom, lifecycle.CheckpointFailed); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("update from the wrong state = %v, want conflict", err)
		}
		if err := cs.UpdateCheckpoint(ctx, c, lifecycle.CheckpointSaving); err != nil {
			t.Fatalf("update ready = %v", err)
		}
		back := c.Clone()
		back.State = lifecycle.CheckpointSaving
		if err := cs.UpdateCheckpoint(ctx, back, lifecycle.CheckpointReady); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("ready → saving = %v, want conflict (the table refuses it)", err)
		}
		got, err = cs.GetCheckpoint(ctx, c.SessionID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameCheckpoint(t, "get after ready", got, c)

		if err := cs.DeleteCheckpoint(ctx, stale); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale delete = %v, want conflict", err)
		}
		if err := cs.DeleteCheckpoint(ctx, c); err != nil {
			t.Fatalf("delete = %v", err)
		}
		if _, err := cs.GetCheckpoint(ctx, c.SessionID, c.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("get after delete = %v, want not_found", err)
		}
		if err := cs.DeleteCheckpoint(ctx, c); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("second delete = %v, want not_found", err)
		}
		if err := cs.UpdateCheckpoint(ctx, c, lifecycle.CheckpointReady); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("update after delete = %v, want not_found", err)
		}
	})
	t.Run("RefusesInvalid", func(t *testing.T) {
		cs := checkpointStore(t, newStore(t))
		for name, edit := range map[string]func(*lifecycle.Checkpoint){
			"BadID":        func(c *lifecycle.Checkpoint) { c.ID = "chk_x" },
			"NoSession":    func(c *lifecycle.Checkpoint) { c.SessionID = "" },
			"UnknownState": func(c *lifecycle.Checkpoint) { c.State = "lost" },
			"UnknownKind":  func(c *lifecycle.Checkpoint) { c.Kind = "copy" },
		} {
			c := SavingCheckpoint(SessionID(1), "acct_a", t0)
			edit(c)
			if err := cs.CreateCheckpoint(t.Context(), c); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("%s: create = %v, want invalid", name, err)
			}
		}
	})
	t.Run("ListNewestFirst", func(t *testing.T) { testListCheckpoints(t, newStore) })
	t.Run("DueIndex", func(t *testing.T) { testCheckpointsDue(t, newStore) })
}

func testListCheckpoints(t *testing.T, newStore NewStore) {
	cs := checkpointStore(t, newStore(t))
	ctx := t.Context()
	var want []string
	for i := range 7 {
		c := SavingCheckpoint(SessionID(1), "acct_a", t0.Add(time.Duration(i)*time.Second))
		if err := cs.CreateCheckpoint(ctx, c); err != nil {
			t.Fatal(err)
		}
		want = append([]string{c.ID}, want...)
		other := SavingCheckpoint(SessionID(2), "acct_a", t0.Add(time.Duration(i)*time.Second))
		if err := cs.CreateCheckpoint(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, err := cs.ListCheckpoints(ctx, SessionID(1), cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, c := range page.Checkpoints {
			got = append(got, c.ID)
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
		if _, err := cs.ListCheckpoints(ctx, SessionID(2), cursor, 3); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("another session's list with this cursor = %v, want invalid", err)
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Errorf("listed %v in %d pages, want %v in 3", got, pages, want)
	}
	if page, err := cs.ListCheckpoints(ctx, SessionID(3), "", 10); err != nil || len(page.Checkpoints) != 0 || page.Cursor != "" {
		t.Errorf("a session without checkpoints lists %+v (%v)", page, err)
	}
	for _, limit := range []int{0, lifecycle.MaxListLimit + 1} {
		if _, err := cs.ListCheckpoints(ctx, SessionID(1), "", limit); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("limit %d = %v, want invalid", limit, err)
		}
	}
	if _, err := cs.ListCheckpoints(ctx, SessionID(1), "bm90IGEgY3Vyc29y", 3); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("a foreign cursor = %v, want invalid", err)
	}
}

func testCheckpointsDue(t *testing.T, newStore NewStore) {
	cs := checkpointStore(t, newStore(t))
	ctx := t.Context()
	var due []string
	for i := range 5 {
		c := SavingCheckpoint(SessionID(i), "acct_a", t0)
		c.LeaseExpiresAt = t0.Add(time.Duration(i) * time.Minute)
		if err := cs.CreateCheckpoint(ctx, c); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			due = append(due, c.ID)
		}
	}
	ready := SavingCheckpoint(SessionID(9), "acct_a", t0)
	ready.LeaseExpiresAt = t0.Add(-time.Hour)
	if err := cs.CreateCheckpoint(ctx, ready); err != nil {
		t.Fatal(err)
	}
	if err := ready.Settle(lifecycle.CheckpointReady, "", t0); err != nil {
		t.Fatal(err)
	}
	if err := cs.UpdateCheckpoint(ctx, ready, lifecycle.CheckpointSaving); err != nil {
		t.Fatal(err)
	}
	var got []string
	cursor := ""
	for range 10 {
		page, err := cs.FindCheckpointsDue(ctx, lifecycle.CheckpointDueQuery{Before: t0.Add(2 * time.Minute), Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Checkpoints {
			got = append(got, c.ID)
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	slices.Sort(got)
	slices.Sort(due)
	if !slices.Equal(got, due) {
		t.Errorf("due = %v, want the three saving ones whose lease expired by then %v (never the ready one)", got, due)
	}
}
