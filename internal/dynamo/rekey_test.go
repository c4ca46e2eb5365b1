package dynamo_test

import (
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// mustLegacyKey gives paused session id the paused-index key it had
// before the tiers: its PausedAt in epoch ms (in the tier range now).
func (f fixture) mustLegacyKey(tb testing.TB, id string, pausedAt time.Time) {
	tb.Helper()
	_, err := f.client.UpdateItem(tb.Context(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{
			tabledef.PartitionKey: &types.AttributeValueMemberS{Value: "SESSION#" + id},
			tabledef.SortKey:      &types.AttributeValueMemberS{Value: "SESSION"},
		},
		UpdateExpression:          aws.String("SET #due = :due"),
		ExpressionAttributeNames:  map[string]string{"#due": tabledef.AttrPausedDue},
		ExpressionAttributeValues: map[string]types.AttributeValue{":due": &types.AttributeValueMemberN{Value: strconv.FormatInt(pausedAt.UnixMilli(), 10)}},
	})
	if err != nil {
		tb.Fatalf("legacy key of %s: %v", id, err)
	}
}

// mustPaused creates a paused session i (archive_after as given: 0 none).
func (f fixture) mustPaused(tb testing.TB, i int, archiveAfter time.Duration) *lifecycle.Session {
	tb.Helper()
	s := runningSession(sessionID(i), "acct_1", t0.Add(-2*time.Hour))
	s.ArchiveAfter = archiveAfter
	f.MustCreate(tb, s)
	f.MustTransition(tb, s, lifecycle.StatePaused, t0.Add(-time.Hour))
	return s
}

// rekeyAll runs the backfill to its end from cursor, a page of limit at a
// time, and sums what it did.
func rekeyAll(tb testing.TB, st *dynamo.Store, cursor string, limit int) (total dynamo.RekeyResult, pages int) {
	tb.Helper()
	for {
		res, err := st.RekeyPausedIndex(tb.Context(), cursor, limit)
		if err != nil {
			tb.Fatalf("rekey page %d: %v", pages+1, err)
		}
		pages++
		total.Read, total.Rekeyed, total.Raced = total.Read+res.Read, total.Rekeyed+res.Rekeyed, total.Raced+res.Raced
		if cursor = res.Cursor; cursor == "" {
			return total, pages
		}
	}
}

// TestRekeyPausedIndex: paused sessions written before the tiers (their
// PausedAt as key, in the tier range) are missed by the dormancy query;
// the backfill, stopped after its first page and resumed from its cursor
// by another store, rewrites exactly those (version unchanged: no event),
// leaves the sessions with a tier deadline and those keyed right alone,
// after which the dormancy query finds every dormant session and the tier
// query only those with a deadline; a second run rewrites nothing.
func TestRekeyPausedIndex(t *testing.T) {
	f := MustFixture(t)
	legacy, dormant, tiered := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range 12 {
		switch i % 3 {
		case 0:
			s := f.mustPaused(t, i, 0)
			f.mustLegacyKey(t, s.ID, s.PausedAt)
			legacy[s.ID], dormant[s.ID] = true, true
		case 1:
			dormant[f.mustPaused(t, i, 0).ID] = true
		case 2:
			tiered[f.mustPaused(t, i, 30*time.Minute).ID] = true
		}
	}
	f.MustCreate(t, runningSession(sessionID(99), "acct_1", t0))
	now := t0.Add(time.Hour)
	find := func(index lifecycle.DueIndex) map[string]bool {
		got, _ := collectDue(t, f.store, lifecycle.DueQuery{Index: index, Before: now, Limit: 5})
		return got
	}
	if got := find(lifecycle.IndexPaused); len(got) != len(dormant)-len(legacy) {
		t.Fatalf("before the backfill the dormancy query finds %d, want %d (the legacy keys hide the rest)", len(got), len(dormant)-len(legacy))
	}
	versions := map[string]int64{}
	for id := range legacy {
		versions[id] = f.MustGet(t, id).Version
	}

	first, err := f.store.RekeyPausedIndex(t.Context(), "", 3)
	if err != nil || first.Cursor == "" {
		t.Fatalf("first page = %+v, %v; want a cursor to resume from", first, err)
	}
	other := dynamo.New(dynamo.Config{Client: f.client, Table: f.table})
	rest, _ := rekeyAll(t, other, first.Cursor, 3)
	if got := first.Rekeyed + rest.Rekeyed; got != len(legacy) || first.Raced+rest.Raced != 0 {
		t.Errorf("rekeyed %d (raced %d), want %d and none raced", got, first.Raced+rest.Raced, len(legacy))
	}
	if got := first.Read + rest.Read; got != len(legacy)+len(tiered) {
		t.Errorf("read %d items of the tier range, want %d (legacy and tiered)", got, len(legacy)+len(tiered))
	}
	if got := find(lifecycle.IndexPaused); !maps.Equal(got, dormant) {
		t.Errorf("after the backfill the dormancy query finds %v, want %v", got, dormant)
	}
	if got := find(lifecycle.IndexTier); !maps.Equal(got, tiered) {
		t.Errorf("after the backfill the tier query finds %v, want %v", got, tiered)
	}
	for id, v := range versions {
		if got := f.MustGet(t, id).Version; got != v {
			t.Errorf("%s: version %d after the backfill, want %d (no write of the session)", id, got, v)
		}
	}
	if again, _ := rekeyAll(t, f.store, "", 4); again.Rekeyed != 0 || again.Read != len(tiered) {
		t.Errorf("a second run = %+v, want %d read and nothing rekeyed", again, len(tiered))
	}
	if _, err := f.store.RekeyPausedIndex(t.Context(), "not-a-cursor", 3); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Errorf("a bad cursor: %v, want invalid", err)
	}
}

// TestRekeyRacesAResume: a session resumed between the backfill's read
// and its write keeps the resume's item (out of the paused index, its
// version), and the backfill counts it raced; two backfills at once over
// the same legacy keys rewrite each to the same key, and a session
// resumed while they run is never put back in the paused index.
func TestRekeyRacesAResume(t *testing.T) {
	f := MustFixture(t)
	s := f.mustPaused(t, 0, 0)
	f.mustLegacyKey(t, s.ID, s.PausedAt)
	st := dynamo.New(dynamo.Config{Client: f.client, Table: f.table})
	dynamo.SetBeforeRekey(st, func(id string) {
		if id == s.ID {
			f.MustTransition(t, s, lifecycle.StateResuming, t0)
		}
	})
	res, err := st.RekeyPausedIndex(t.Context(), "", 10)
	if err != nil || res.Raced != 1 || res.Rekeyed != 0 {
		t.Fatalf("rekey = %+v, %v; want one raced", res, err)
	}
	item := f.rawItem(t, s.ID)
	if _, ok := item[tabledef.AttrPausedDue]; ok {
		t.Errorf("the resumed session is in the paused index: %v", item[tabledef.AttrPausedDue])
	}
	if got := f.MustGet(t, s.ID); got.State != lifecycle.StateResuming || got.Version != s.Version {
		t.Errorf("after the race: %s v%d, want resuming v%d", got.State, got.Version, s.Version)
	}

	resumed := map[string]bool{} // written before the goroutines start, only read after
	var all []*lifecycle.Session
	for i := 1; i <= 20; i++ {
		p := f.mustPaused(t, i, 0)
		f.mustLegacyKey(t, p.ID, p.PausedAt)
		all = append(all, p)
	}
	var wg sync.WaitGroup
	results := make([]dynamo.RekeyResult, 2)
	for k := range results {
		wg.Go(func() {
			store := dynamo.New(dynamo.Config{Client: f.client, Table: f.table})
			results[k], _ = rekeyAll(t, store, "", 3)
		})
	}
	for i, p := range all {
		if i%4 == 0 {
			resumed[p.ID] = true
		}
	}
	wg.Go(func() {
		for _, p := range all {
			if !resumed[p.ID] {
				continue
			}
			if err := p.Transition(lifecycle.StateResuming, lifecycle.ReasonRequest, t0, lifecycle.DefaultPolicy()); err != nil {
				t.Errorf("resume %s: %v", p.ID, err)
				continue
			}
			if err := f.store.UpdateSession(t.Context(), p, lifecycle.StatePaused, lifecycle.Guard{}); err != nil {
				t.Errorf("resume %s while the backfills run: %v", p.ID, err)
			}
		}
	})
	wg.Wait()
	for _, p := range all {
		item := f.rawItem(t, p.ID)
		due, in := item[tabledef.AttrPausedDue].(*types.AttributeValueMemberN)
		switch {
		case resumed[p.ID] && in:
			t.Errorf("%s was resumed but is in the paused index at %s", p.ID, due.Value)
		case !resumed[p.ID] && (!in || due.Value[0] != '-'):
			t.Errorf("%s is paused but its key is %v, want a dormancy key (below 0)", p.ID, item[tabledef.AttrPausedDue])
		}
	}
	if again, _ := rekeyAll(t, f.store, "", 10); again.Rekeyed != 0 {
		t.Errorf("after both runs another rewrote %d, want 0", again.Rekeyed)
	}
}

// TestTierQueryPagesWithinAShard: the tier query (lifecycle.IndexTier),
// which shares the paused index with the dormancy query under a cursor of
// its own, pages through a shard holding more due sessions than a page.
func TestTierQueryPagesWithinAShard(t *testing.T) {
	f := MustFixture(t)
	one := fixture{store: dynamo.New(dynamo.Config{Client: f.client, Table: f.table, Shards: 1}), client: f.client, table: f.table}
	want := map[string]bool{}
	for i := range 5 {
		want[one.mustPaused(t, i, 30*time.Minute).ID] = true
	}
	got, pages := collectDue(t, one.store, lifecycle.DueQuery{Index: lifecycle.IndexTier, Before: t0.Add(time.Hour), Limit: 2})
	if !maps.Equal(got, want) || pages < 3 {
		t.Errorf("tier query found %v in %d pages, want %v in 3 or more", got, pages, want)
	}
}
