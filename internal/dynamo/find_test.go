package dynamo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// TestFindSessionsEndsPagesOnItsBudget: a metadata filter that skips most
// sessions ends pages early, some empty, each with a cursor; following the
// cursors reaches every matching session once, newest first, and the pages
// never evaluate more index entries than the budget.
func TestFindSessionsEndsPagesOnItsBudget(t *testing.T) {
	f := MustFixture(t)
	var want []string
	for i := range 40 {
		s := runningSession(sessionID(i), "acct_1", t0.Add(time.Duration(i)*time.Second))
		s.SandboxID = "sbx-" + s.ID
		if i%13 == 5 {
			s.Metadata = map[string]string{"team": "needle"}
			want = append([]string{s.ID}, want...)
		}
		f.MustCreate(t, s)
	}
	small := dynamo.New(dynamo.Config{Client: f.client, Table: f.table, FindBudget: 6})
	q := lifecycle.SessionQuery{AccountID: "acct_1", Limit: 10,
		Filter: lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StateRunning}, Metadata: map[string]string{"team": "needle"}}}
	first, err := small.FindSessions(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cursor == "" || len(first.Sessions) == len(want) {
		t.Fatalf("first page %d sessions, cursor %q: want a page ended by its budget of 6 entries", len(first.Sessions), first.Cursor)
	}
	if got := storetest.FindPages(t, small, q, 20); !slices.Equal(got, want) {
		t.Errorf("ids = %v, want %v", got, want)
	}
}

// TestBackfillStateIndex: sessions written before the by_owner_state index
// (no owner_state) are missing from filtered lists until the backfill gives
// them their key, without a new version; a second run fills nothing.
func TestBackfillStateIndex(t *testing.T) {
	f := MustFixture(t)
	var ids []string
	for i := range 12 {
		s := runningSession(sessionID(i), "acct_1", t0.Add(time.Duration(i)*time.Second))
		s.SandboxID = "sbx-" + s.ID
		if i%2 == 1 {
			s.State, s.RunningSince, s.IdleDeadline = lifecycle.StateKilled, time.Time{}, time.Time{}
		}
		f.MustCreate(t, s)
		ids = append([]string{s.ID}, ids...)
		if i >= 4 { // written "before the index"
			if _, err := f.client.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(f.table),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "SESSION#" + s.ID},
					"sk": &types.AttributeValueMemberS{Value: "SESSION"}}, UpdateExpression: aws.String("REMOVE owner_state")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	killed := lifecycle.SessionQuery{AccountID: "acct_1", Limit: 100, Filter: lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StateKilled}}}
	if got := storetest.FindPages(t, f.store, killed, 3); len(got) != 2 {
		t.Fatalf("before the backfill: %d killed sessions found, want the 2 with a key", len(got))
	}
	res, err := f.store.BackfillStateIndex(t.Context(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != 8 || res.Filled != 8 {
		t.Errorf("backfill %+v, want 8 scanned and filled", res)
	}
	if got := storetest.FindPages(t, f.store, killed, 3); len(got) != 6 {
		t.Errorf("after the backfill: %d killed sessions found, want 6", len(got))
	}
	for _, id := range ids {
		if got := f.MustGet(t, id); got.Version != 1 {
			t.Errorf("%s version %d after the backfill, want 1", id, got.Version)
		}
	}
	if again, err := f.store.BackfillStateIndex(t.Context(), 1); err != nil || again.Scanned != 0 {
		t.Errorf("second run %+v, %v; want nothing to fill", again, err)
	}
}
