package storetest

import (
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The contract of listing sessions (filters, pages, forged cursors) and of
// finding a session by its sandbox.

func testListSessions(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	var wantA []string // newest first
	for i := range 25 {
		s := RunningSession(SessionID(i), "acct_a", t0.Add(time.Duration(i)*time.Second))
		f.MustCreate(t, s)
		wantA = append([]string{s.ID}, wantA...)
	}
	// Two sessions created in the same nanosecond: ordered by id, descending.
	for _, id := range []string{"ses_same_1", "ses_same_2"} {
		f.MustCreate(t, RunningSession(id, "acct_a", t0.Add(time.Hour)))
	}
	wantA = append([]string{"ses_same_2", "ses_same_1"}, wantA...)
	var wantB []string
	for i := range 3 {
		s := RunningSession(SessionID(100+i), "acct_b", t0.Add(time.Duration(i)*time.Second))
		f.MustCreate(t, s)
		wantB = append([]string{s.ID}, wantB...)
	}

	t.Run("NewestFirstWithCursor", func(t *testing.T) {
		var got []string
		var sizes []int
		cursor := ""
		for range 10 {
			page, err := f.store.ListSessions(t.Context(), "acct_a", cursor, 9)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(page.Sessions))
			for _, s := range page.Sessions {
				if got, want := s.AccountID, "acct_a"; got != want {
					t.Errorf("session %s AccountID = %q, want %q", s.ID, got, want)
				}
				got = append(got, s.ID)
			}
			if cursor = page.Cursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, wantA) {
			t.Errorf("ids = %v\nwant %v", got, wantA)
		}
		// 27 sessions in pages of 9: the third page is the last, with no
		// empty page after it.
		if got, want := sizes, []int{9, 9, 9}; !slices.Equal(got, want) {
			t.Errorf("page sizes = %v, want %v", got, want)
		}
	})

	t.Run("IsolatedByAccount", func(t *testing.T) {
		page, err := f.store.ListSessions(t.Context(), "acct_b", "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range page.Sessions {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, wantB) {
			t.Errorf("acct_b ids = %v, want %v", got, wantB)
		}
		if got, want := page.Cursor, ""; got != want {
			t.Errorf("Cursor = %q, want %q", got, want)
		}
		page, err = f.store.ListSessions(t.Context(), "acct_nobody", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Sessions), 0; got != want {
			t.Errorf("unknown account: %d sessions, want %d", got, want)
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		first, err := f.store.ListSessions(t.Context(), "acct_a", "", 1)
		if err != nil || first.Cursor == "" {
			t.Fatalf("first page: cursor %q, err %v", first.Cursor, err)
		}
		due, err := f.store.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexIdle, Before: t0.Add(24 * time.Hour), Limit: 1})
		if err != nil || due.Cursor == "" {
			t.Fatalf("due page: cursor %q, err %v", due.Cursor, err)
		}
		for _, tc := range []struct {
			name, account, cursor string
			limit                 int
		}{
			{"LimitZero", "acct_a", "", 0},
			{"LimitTooLarge", "acct_a", "", 101},
			{"MalformedCursor", "acct_a", "%%%", 10},
			{"NotJSON", "acct_a", forge("hello"), 10},
			{"NoKey", "acct_a", forge(`{"i":"by_owner_keys"}`), 10},
			{"OtherAccountsCursor", "acct_b", first.Cursor, 10},
			{"DueIndexCursor", "acct_a", due.Cursor, 10},
			{"WrongKeyType", "acct_a", forge(`{"i":"by_owner_keys","k":{"pk":{"N":"1"},"sk":{"S":"x"},"owner_key":{"S":"acct_a"},"owner_sort":{"S":"x"}}}`), 10},
			// DynamoDB refuses empty key values with a ValidationException: found by review as a 500.
			{"EmptyKeyValues", "acct_a", forge(`{"i":"by_owner_keys","k":{"pk":{"S":""},"sk":{"S":""},"owner_key":{"S":"acct_a"},"owner_sort":{"S":""}}}`), 10},
			{"NotASessionKey", "acct_a", forge(`{"i":"by_owner_keys","k":{"pk":{"S":"APIKEY#x"},"sk":{"S":"APIKEY"},"owner_key":{"S":"acct_a"},"owner_sort":{"S":"x"}}}`), 10},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := f.store.ListSessions(t.Context(), tc.account, tc.cursor, tc.limit)
				if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
					t.Errorf("code %q (%v), want %q", got, err, want)
				}
			})
		}
		_, err = f.store.ListSessions(t.Context(), "acct_a", "%%%", 10)
		if got, want := err.Error(), "cursor is not valid"; got != want {
			t.Errorf("message = %q, want %q", got, want)
		}
	})
}

func testFindBySandbox(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	s := RunningSession("ses_sbx", "acct_1", t0)
	f.MustCreate(t, s)
	other := RunningSession("ses_other", "acct_1", t0)
	other.Provider = "e2b" // same sandbox id under another provider
	other.SandboxID = s.SandboxID
	f.MustCreate(t, other)
	noSandbox := RunningSession("ses_nosbx", "acct_1", t0)
	noSandbox.State, noSandbox.SandboxID, noSandbox.RunningSince = lifecycle.StateProvisioning, "", time.Time{}
	f.MustCreate(t, noSandbox)

	t.Run("OK", func(t *testing.T) {
		got, err := f.store.FindBySandbox(t.Context(), "fake", s.SandboxID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.ID, s.ID; got != want {
			t.Errorf("ID = %q, want %q", got, want)
		}
		got, err = f.store.FindBySandbox(t.Context(), "e2b", s.SandboxID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.ID, other.ID; got != want {
			t.Errorf("e2b: ID = %q, want %q", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.store.FindBySandbox(t.Context(), "fake", "sbx-unknown")
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeNotFound; got != want {
			t.Errorf("code %q (%v), want %q", got, err, want)
		}
	})

	t.Run("ErrInvalidEmptySandbox", func(t *testing.T) {
		_, err := f.store.FindBySandbox(t.Context(), "fake", "")
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("code %q (%v), want %q", got, err, want)
		}
	})
}

func forge(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
