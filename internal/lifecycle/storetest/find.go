package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The contract of finding an account's sessions by filter
// (lifecycle.SessionFinder): states, provider, template and metadata, pages
// that reach every matching session once, newest first and oldest first
// (order asc, with and without a filter), a state change that moves a
// session from one filter to another, and cursors tied to their account,
// filter and order.

// FindPages follows q's pages to the end and returns every session id,
// in order; it fails on a session that does not pass q.Filter, one seen
// twice, or more than maxPages pages.
func FindPages(tb testing.TB, finder lifecycle.SessionFinder, q lifecycle.SessionQuery, maxPages int) []string {
	tb.Helper()
	var ids []string
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages == maxPages {
			tb.Fatalf("filter %+v: still a cursor after %d pages", q.Filter, maxPages)
		}
		page, err := finder.FindSessions(tb.Context(), q)
		if err != nil {
			tb.Fatalf("find %+v: %v", q.Filter, err)
		}
		if len(page.Sessions) > q.Limit {
			tb.Fatalf("page of %d sessions, limit %d", len(page.Sessions), q.Limit)
		}
		for _, s := range page.Sessions {
			if !q.Filter.Match(s) || s.AccountID != q.AccountID || seen[s.ID] {
				tb.Fatalf("filter %+v: %s (%s, %s, %s, %v, account %s) does not pass, or came twice", q.Filter, s.ID, s.State, s.Provider, s.Template, s.Metadata, s.AccountID)
			}
			seen[s.ID] = true
			ids = append(ids, s.ID)
		}
		if q.Cursor = page.Cursor; q.Cursor == "" {
			return ids
		}
	}
}

func testFindSessions(t *testing.T, newStore NewStore) {
	st := newStore(t)
	finder, ok := st.(lifecycle.SessionFinder)
	if !ok {
		t.Fatalf("%T is not a lifecycle.SessionFinder", st)
	}
	f := fixture{store: st}
	states := []lifecycle.State{lifecycle.StateRunning, lifecycle.StatePaused, lifecycle.StateKilled,
		lifecycle.StateKilled, lifecycle.StateExpired, lifecycle.StateProvisioning}
	var all []*lifecycle.Session // newest first
	for i := range 36 {
		s := RunningSession(SessionID(300+i), "acct_f", t0.Add(time.Duration(i)*time.Second))
		s.State = states[i%len(states)]
		s.Provider = []string{"e2b", "daytona"}[i%2]
		s.Template = []string{"web", "base", "node"}[i%3]
		s.Metadata = map[string]string{"team": fmt.Sprintf("t%d", i%4), "tier": "free"}
		if s.State != lifecycle.StateRunning {
			s.SandboxID = fmt.Sprintf("sbx-f-%d", i) // unique: by_sandbox
			s.RunningSince, s.IdleDeadline = time.Time{}, time.Time{}
		}
		f.MustCreate(t, s)
		all = append([]*lifecycle.Session{s}, all...)
	}
	f.MustCreate(t, RunningSession(SessionID(399), "acct_g", t0)) // another account's
	want := func(flt lifecycle.SessionFilter) []string {
		var ids []string
		for _, s := range all {
			if flt.Match(s) {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	for name, flt := range map[string]lifecycle.SessionFilter{
		"Running":        {States: []lifecycle.State{lifecycle.StateRunning}},
		"Live":           {States: lifecycle.LiveStates},
		"Killed":         {States: []lifecycle.State{lifecycle.StateKilled}},
		"Provider":       {Provider: "daytona"},
		"Template":       {Template: "web"},
		"Metadata":       {Metadata: map[string]string{"team": "t1"}},
		"MetadataTwo":    {Metadata: map[string]string{"team": "t2", "tier": "free"}},
		"MetadataNone":   {Metadata: map[string]string{"team": "t9"}},
		"Everything":     {States: []lifecycle.State{lifecycle.StateKilled, lifecycle.StateRunning}, Provider: "e2b", Template: "base", Metadata: map[string]string{"tier": "free"}},
		"NoStateMatches": {States: []lifecycle.State{lifecycle.StatePausing}},
	} {
		t.Run(name, func(t *testing.T) {
			flt, err := flt.Normalize()
			if err != nil {
				t.Fatal(err)
			}
			got := FindPages(t, finder, lifecycle.SessionQuery{AccountID: "acct_f", Filter: flt, Limit: 4}, 40)
			if w := want(flt); !slices.Equal(got, w) {
				t.Errorf("ids = %v\nwant %v (newest first)", got, w)
			}
			asc := FindPages(t, finder, lifecycle.SessionQuery{AccountID: "acct_f", Filter: flt, Order: lifecycle.OrderAsc, Limit: 4}, 40)
			w := want(flt)
			slices.Reverse(w)
			if !slices.Equal(asc, w) {
				t.Errorf("order asc: ids = %v\nwant %v (oldest first)", asc, w)
			}
		})
	}

	// Oldest first without a filter: every session of the account once.
	t.Run("AscNoFilter", func(t *testing.T) {
		got := FindPages(t, finder, lifecycle.SessionQuery{AccountID: "acct_f", Order: lifecycle.OrderAsc, Limit: 5}, 40)
		w := want(lifecycle.SessionFilter{})
		slices.Reverse(w)
		if !slices.Equal(got, w) {
			t.Errorf("ids = %v\nwant %v (oldest first)", got, w)
		}
	})

	t.Run("StateChangeMoves", func(t *testing.T) {
		s := f.MustGet(t, all[len(all)-1].ID) // running, the oldest
		f.MustTransition(t, s, lifecycle.StatePausing, t0.Add(time.Hour))
		running := FindPages(t, finder, lifecycle.SessionQuery{AccountID: "acct_f", Limit: 100,
			Filter: lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StateRunning}}}, 3)
		pausing := FindPages(t, finder, lifecycle.SessionQuery{AccountID: "acct_f", Limit: 100,
			Filter: lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StatePausing}}}, 3)
		if slices.Contains(running, s.ID) || !slices.Equal(pausing, []string{s.ID}) {
			t.Errorf("after running → pausing: running %v, pausing %v; want %s only in pausing", running, pausing, s.ID)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		running := lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StateRunning}}
		first, err := finder.FindSessions(t.Context(), lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Limit: 1})
		if err != nil || first.Cursor == "" {
			t.Fatalf("first page: cursor %q, err %v", first.Cursor, err)
		}
		asc, err := finder.FindSessions(t.Context(), lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Order: lifecycle.OrderAsc, Limit: 1})
		if err != nil || asc.Cursor == "" {
			t.Fatalf("first page oldest first: cursor %q, err %v", asc.Cursor, err)
		}
		list, err := f.store.ListSessions(t.Context(), "acct_f", "", 1)
		if err != nil || list.Cursor == "" {
			t.Fatalf("list page: cursor %q, err %v", list.Cursor, err)
		}
		for _, tc := range []struct {
			name string
			q    lifecycle.SessionQuery
		}{
			{"OtherFilter", lifecycle.SessionQuery{AccountID: "acct_f", Filter: lifecycle.SessionFilter{States: []lifecycle.State{lifecycle.StatePaused}}, Limit: 4, Cursor: first.Cursor}},
			{"OtherAccount", lifecycle.SessionQuery{AccountID: "acct_g", Filter: running, Limit: 4, Cursor: first.Cursor}},
			{"OtherOrder", lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Order: lifecycle.OrderAsc, Limit: 4, Cursor: first.Cursor}},
			{"OtherOrderAsc", lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Limit: 4, Cursor: asc.Cursor}},
			{"ListCursor", lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Limit: 4, Cursor: list.Cursor}},
			{"Malformed", lifecycle.SessionQuery{AccountID: "acct_f", Filter: running, Limit: 4, Cursor: "%%%"}},
			{"NoFilter", lifecycle.SessionQuery{AccountID: "acct_f", Limit: 4}},
			{"LimitZero", lifecycle.SessionQuery{AccountID: "acct_f", Filter: running}},
		} {
			if _, err := finder.FindSessions(t.Context(), tc.q); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("%s: %v, want invalid", tc.name, err)
			}
		}
	})
}
