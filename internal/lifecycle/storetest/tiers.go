package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// testTierIndex checks the tier index (lifecycle.IndexTier, at
// Session.NextTier) and the dormancy index (lifecycle.IndexPaused, at
// PausedAt for paused sessions without a tier deadline): one table index
// in DynamoDB, and neither query returns the other's sessions.
func testTierIndex(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	find := func(ix lifecycle.DueIndex, before time.Time) []string {
		t.Helper()
		var ids []string
		cursor := ""
		for {
			page, err := f.store.FindDue(t.Context(), lifecycle.DueQuery{Index: ix, Before: before, Limit: 1, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Sessions {
				ids = append(ids, s.ID)
			}
			if cursor = page.Cursor; cursor == "" {
				slices.Sort(ids)
				return ids
			}
		}
	}
	paused := func(i int, archive, del time.Duration) *lifecycle.Session {
		s := RunningSession(SessionID(i), "acct_tier", t0)
		s.ArchiveAfter, s.DeleteAfter = archive, del
		f.MustCreate(t, s)
		f.MustTransition(t, s, lifecycle.StatePaused, t0)
		return s
	}
	archiving := paused(1, time.Hour, 0)          // archived at t0+1h
	deleting := paused(2, 2*time.Hour, time.Hour) // delete first: t0+1h
	tierless := paused(3, 0, 0)                   // dormancy only
	if got := f.MustGet(t, archiving.ID); got.ArchiveAfter != time.Hour || got.DeleteAfter != 0 {
		t.Errorf("stored tiers %v/%v, want 1h/0", got.ArchiveAfter, got.DeleteAfter)
	}
	if got := find(lifecycle.IndexTier, t0.Add(time.Hour-time.Millisecond)); len(got) != 0 {
		t.Errorf("tier index before the deadlines: %v, want none", got)
	}
	want := []string{archiving.ID, deleting.ID}
	if got := find(lifecycle.IndexTier, t0.Add(time.Hour)); !slices.Equal(got, want) {
		t.Errorf("tier index at the deadlines: %v, want %v", got, want)
	}
	if got := find(lifecycle.IndexPaused, t0.Add(100*24*time.Hour)); !slices.Equal(got, []string{tierless.ID}) {
		t.Errorf("dormancy index: %v, want only %s", got, tierless.ID)
	}

	// Archived: due at its delete deadline, or at once while its provider
	// work is pending; a retry time holds it back.
	archiving.DeleteAfter = 48 * time.Hour
	if err := archiving.Transition(lifecycle.StateArchived, lifecycle.ReasonArchive, t0.Add(time.Hour), lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	archiving.TierPending = true
	if err := f.store.UpdateSession(t.Context(), archiving, lifecycle.StatePaused, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	if got := find(lifecycle.IndexTier, t0.Add(time.Hour)); !slices.Contains(got, archiving.ID) {
		t.Errorf("tier index with the archive's kill pending: %v, want %s", got, archiving.ID)
	}
	archiving.TierPending, archiving.SandboxID = false, ""
	if err := f.store.UpdateSession(t.Context(), archiving, lifecycle.StateArchived, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	if got := find(lifecycle.IndexTier, t0.Add(47*time.Hour)); slices.Contains(got, archiving.ID) {
		t.Errorf("tier index before the delete deadline: %v holds the archived session", got)
	}
	if got := find(lifecycle.IndexTier, t0.Add(48*time.Hour)); !slices.Contains(got, archiving.ID) {
		t.Errorf("tier index at the delete deadline: %v, want %s", got, archiving.ID)
	}
	got := f.MustGet(t, archiving.ID)
	if got.State != lifecycle.StateArchived || !got.PausedAt.Equal(t0) || got.SandboxID != "" {
		t.Errorf("archived session stored as %s paused_at %v sandbox %q", got.State, got.PausedAt, got.SandboxID)
	}
	deleting.TierRetryAt, deleting.TierError = t0.Add(3*time.Hour), "no checkpoint"
	if err := f.store.UpdateSession(t.Context(), deleting, lifecycle.StatePaused, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	if got := find(lifecycle.IndexTier, t0.Add(2*time.Hour)); slices.Contains(got, deleting.ID) {
		t.Errorf("tier index before the retry time: %v holds %s", got, deleting.ID)
	}
	if got := f.MustGet(t, deleting.ID); !got.TierRetryAt.Equal(t0.Add(3*time.Hour)) || got.TierError != "no checkpoint" {
		t.Errorf("stored retry %v error %q", got.TierRetryAt, got.TierError)
	}
	// Running again: in neither index.
	f.MustTransition(t, tierless, lifecycle.StateRunning, t0.Add(time.Hour))
	if got := find(lifecycle.IndexPaused, t0.Add(100*24*time.Hour)); len(got) != 0 {
		t.Errorf("dormancy index after the resume: %v, want none", got)
	}
}
