// Package storetest is the contract of lifecycle.Store as tests: one suite
// that every store runs (internal/dynamo against DynamoDB Local,
// internal/lifecycle/memstore in memory), so the in-memory store the domain tests use
// keeps the same conditional-write rules as the one in production.
package storetest

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// NewStore returns an empty store for one test; it may register cleanups on
// tb.
type NewStore func(tb testing.TB) lifecycle.Store

// Run runs the whole contract against the stores newStore makes, one fresh
// store per subtest.
func Run(t *testing.T, newStore NewStore) {
	t.Run("CreateSession", func(t *testing.T) { testCreateSession(t, newStore) })
	t.Run("UpdateSession", func(t *testing.T) { testUpdateSession(t, newStore) })
	t.Run("UpdateSessionRace", func(t *testing.T) { testUpdateSessionRace(t, newStore) })
	t.Run("ListSessions", func(t *testing.T) { testListSessions(t, newStore) })
	t.Run("FindBySandbox", func(t *testing.T) { testFindBySandbox(t, newStore) })
	t.Run("Claim", func(t *testing.T) { testClaim(t, newStore) })
	t.Run("APIKey", func(t *testing.T) { testAPIKey(t, newStore) })
	t.Run("RunningSlots", func(t *testing.T) { testRunningSlots(t, newStore) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, newStore) })
	t.Run("Pools", func(t *testing.T) { testPools(t, newStore) })
	t.Run("LeaseIndex", func(t *testing.T) { testLeaseIndex(t, newStore) })
}

// t0 is the tests' fixed "now", with nanoseconds to prove they survive.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// fixture is one test's store.
type fixture struct {
	store lifecycle.Store
}

// RunningSession returns a running session of account created at now with
// every field set: the stores' tests start from it.
func RunningSession(id, account string, now time.Time) *lifecycle.Session {
	return &lifecycle.Session{
		ID:                  id,
		AccountID:           account,
		Provider:            "fake",
		Template:            "base",
		Metadata:            map[string]string{"project": "p-1", "user": "u-9"},
		SandboxID:           "sbx-" + id,
		PreviewURL:          "https://3000-sbx-" + id + ".example.test",
		State:               lifecycle.StateRunning,
		Reason:              lifecycle.ReasonRequest,
		IdleTimeout:         10 * time.Minute,
		MaxLifetime:         2 * time.Hour,
		CreatedAt:           now,
		UpdatedAt:           now,
		LastActivityAt:      now,
		IdleDeadline:        now.Add(10 * time.Minute),
		RunningSince:        now,
		SandboxExpiresAt:    now.Add(12 * time.Minute),
		LastProviderEventAt: now.Add(-time.Second),
		StateChangedAt:      now.Add(-2 * time.Second),
	}
}

// MustCreate creates s in the fixture's store.
func (f fixture) MustCreate(tb testing.TB, s *lifecycle.Session) {
	tb.Helper()
	if err := f.store.CreateSession(tb.Context(), s); err != nil {
		tb.Fatalf("create session %s: %v", s.ID, err)
	}
}

// MustGet reads session id from the fixture's store.
func (f fixture) MustGet(tb testing.TB, id string) *lifecycle.Session {
	tb.Helper()
	s, err := f.store.GetSession(tb.Context(), id)
	if err != nil {
		tb.Fatalf("get session %s: %v", id, err)
	}
	return s
}

// MustTransition moves s to state to at now and writes it.
func (f fixture) MustTransition(tb testing.TB, s *lifecycle.Session, to lifecycle.State, now time.Time) {
	tb.Helper()
	from := s.State
	if err := s.Transition(to, lifecycle.ReasonRequest, now, lifecycle.DefaultPolicy()); err != nil {
		tb.Fatalf("transition %s %s -> %s: %v", s.ID, from, to, err)
	}
	if err := f.store.UpdateSession(tb.Context(), s, from, lifecycle.Guard{}); err != nil {
		tb.Fatalf("update %s %s -> %s: %v", s.ID, from, to, err)
	}
}

// SessionID returns the i-th test session id.
func SessionID(i int) string { return fmt.Sprintf("ses_test%022d", i) }

func testCreateSession(t *testing.T, newStore NewStore) {
	t.Run("RoundTripsEveryField", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_roundtrip", "acct_1", t0)
		s.PausedAt = t0.Add(-time.Hour) // not consistent with running, but every field must survive
		s.LeaseExpiresAt = t0.Add(time.Minute)
		s.AwayTimeout, s.AwayDeadline = 90*time.Second, t0.Add(90*time.Second)
		s.Version = 42 // ignored: create always writes version 1
		s.HoldUntil = t0.Add(2 * time.Hour)
		s.ResumeOnReturn, s.ReturnResumedAt = true, t0.Add(-30*time.Minute)
		s.ResumeQueued = true // not consistent with running either
		s.PausedOnRequest = true
		s.App = &lifecycle.AppSpec{Port: 3000, StartCommand: "npm run dev", Cwd: "app", Env: map[string]string{"NODE_ENV": "development"},
			ReadyPath: "/health", ReadyTimeout: 90 * time.Second}
		s.Readiness, s.ReadinessDetail, s.ReadyAt = lifecycle.ReadinessFailed, "exited with code 1", t0.Add(time.Second)
		exit := 1
		s.AppExitCode = &exit
		s.FromPool, s.PoolID = true, "pool_0123456789abcdef"
		want := s.Clone()
		want.Version = 1

		f.MustCreate(t, s)
		if got, want := s.Version, int64(1); got != want {
			t.Errorf("Version after create = %d, want %d", got, want)
		}
		got := f.MustGet(t, s.ID)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GetSession =\n%+v\nwant\n%+v", got, want)
		}
		// Guard against a test that sets fewer fields than the type has.
		// RunningLimit is never stored (lifecycle quota.go): not counted.
		if n := reflect.ValueOf(*want).NumField() - 1; countSet(want) != n {
			t.Errorf("test session sets %d of %d fields", countSet(want), n)
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		f.MustCreate(t, RunningSession("ses_twice", "acct_1", t0))
		again := RunningSession("ses_twice", "acct_2", t0.Add(time.Hour))
		err := f.store.CreateSession(t.Context(), again)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("second create: code %q (%v), want %q", got, err, want)
		}
		if got, want := f.MustGet(t, "ses_twice").AccountID, "acct_1"; got != want {
			t.Errorf("AccountID after refused create = %q, want %q", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		_, err := f.store.GetSession(t.Context(), "ses_missing")
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeNotFound; got != want {
			t.Errorf("get missing: code %q (%v), want %q", got, err, want)
		}
	})
}

// countSet counts the non-zero fields of s.
func countSet(s *lifecycle.Session) int {
	v := reflect.ValueOf(*s)
	n := 0
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			n++
		}
	}
	return n
}

func testUpdateSession(t *testing.T, newStore NewStore) {
	t.Run("OK", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_ok", "acct_1", t0)
		f.MustCreate(t, s)
		f.MustTransition(t, s, lifecycle.StatePausing, t0.Add(time.Minute))
		if got, want := s.Version, int64(2); got != want {
			t.Errorf("Version = %d, want %d", got, want)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, s) {
			t.Errorf("stored =\n%+v\nwant\n%+v", got, s)
		}
	})

	t.Run("ErrConflictStaleVersion", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_stale", "acct_1", t0)
		f.MustCreate(t, s)
		stale := s.Clone()
		f.MustTransition(t, s, lifecycle.StatePausing, t0.Add(time.Minute)) // now version 2
		before := f.MustGet(t, s.ID)

		// Same from-state as stored, so only the version (1, stored 2) is stale.
		stale.State = lifecycle.StatePausing
		if err := stale.Transition(lifecycle.StatePaused, lifecycle.ReasonRequest, t0.Add(2*time.Minute), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		err := f.store.UpdateSession(t.Context(), stale, lifecycle.StatePausing, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("stale update: code %q (%v), want %q", got, err, want)
		}
		if got, want := stale.Version, int64(1); got != want {
			t.Errorf("Version after refused update = %d, want %d", got, want)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("stored changed by a refused update:\n%+v\nwant\n%+v", got, before)
		}
	})

	t.Run("ErrConflictWrongFromState", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_from", "acct_1", t0)
		f.MustCreate(t, s)
		before := f.MustGet(t, s.ID)
		s.State = lifecycle.StatePaused // caller believes it is pausing
		s.PausedAt = t0
		err := f.store.UpdateSession(t.Context(), s, lifecycle.StatePausing, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("update from the wrong state: code %q (%v), want %q", got, err, want)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("stored changed by a refused update:\n%+v\nwant\n%+v", got, before)
		}
	})

	t.Run("ErrConflictTransitionNotAllowed", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_refused", "acct_1", t0)
		f.MustCreate(t, s)
		f.MustTransition(t, s, lifecycle.StateKilled, t0.Add(time.Minute))
		before := f.MustGet(t, s.ID)

		// killed -> running is not in the table; state and version match.
		s.State, s.UpdatedAt = lifecycle.StateRunning, t0.Add(2*time.Minute)
		err := f.store.UpdateSession(t.Context(), s, lifecycle.StateKilled, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("killed -> running: code %q (%v), want %q", got, err, want)
		}
		if !strings.Contains(err.Error(), "cannot become running") {
			t.Errorf("error %q does not name the refused transition", err)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("stored changed by a refused transition:\n%+v\nwant\n%+v", got, before)
		}
	})

	t.Run("ErrConflictIdleDeadlineBackwards", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_backwards", "acct_1", t0)
		f.MustCreate(t, s)
		before := f.MustGet(t, s.ID)

		back := s.Clone()
		back.IdleDeadline = s.IdleDeadline.Add(-time.Nanosecond)
		err := f.store.UpdateSession(t.Context(), back, lifecycle.StateRunning, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("deadline 1ns back: code %q (%v), want %q", got, err, want)
		}
		cleared := s.Clone()
		cleared.IdleDeadline = time.Time{}
		err = f.store.UpdateSession(t.Context(), cleared, lifecycle.StateRunning, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("deadline cleared: code %q (%v), want %q", got, err, want)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("stored changed by refused updates:\n%+v\nwant\n%+v", got, before)
		}

		// Same deadline and a later one are fine (heartbeats).
		if err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatalf("same deadline: %v", err)
		}
		if !s.RecordActivity(t0.Add(time.Minute), 30*time.Second) {
			t.Fatal("RecordActivity did not record")
		}
		if err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatalf("later deadline: %v", err)
		}
		got := f.MustGet(t, s.ID)
		if got, want := got.IdleDeadline, t0.Add(11*time.Minute+30*time.Second); !got.Equal(want) {
			t.Errorf("IdleDeadline = %v, want %v", got, want)
		}
		if got, want := got.Version, int64(3); got != want {
			t.Errorf("Version = %d, want %d", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_ghost", "acct_1", t0)
		s.Version = 1
		err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeNotFound; got != want {
			t.Fatalf("update missing: code %q (%v), want %q", got, err, want)
		}
		if _, err := f.store.GetSession(t.Context(), s.ID); !lifecycle.IsCode(err, lifecycle.CodeNotFound) {
			t.Errorf("update of a missing session created it: %v", err)
		}
	})

	t.Run("GuardDueBy", func(t *testing.T) {
		f := fixture{store: newStore(t)}
		s := RunningSession("ses_guard", "acct_1", t0) // pause deadline t0+10m
		f.MustCreate(t, s)
		sweepAt := t0.Add(10 * time.Minute)
		swept := s.Clone()

		// A heartbeat lands after the sweep read the session...
		if !s.RecordActivity(t0.Add(5*time.Minute), 30*time.Second) {
			t.Fatal("RecordActivity did not record")
		}
		if err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		before := f.MustGet(t, s.ID)

		// ...so a sweep holding the current version is still refused by the
		// deadline re-check alone.
		swept.Version = before.Version
		swept.IdleDeadline = before.IdleDeadline
		if err := swept.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, sweepAt, lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		err := f.store.UpdateSession(t.Context(), swept, lifecycle.StateRunning, lifecycle.Guard{DueBy: sweepAt})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("sweep after heartbeat: code %q (%v), want %q", got, err, want)
		}
		if !strings.Contains(err.Error(), "no longer due") {
			t.Errorf("error %q does not say the session is no longer due", err)
		}
		if got := f.MustGet(t, s.ID); !reflect.DeepEqual(got, before) {
			t.Errorf("stored changed by a refused sweep:\n%+v\nwant\n%+v", got, before)
		}

		// At the new deadline exactly, the sweep wins.
		err = f.store.UpdateSession(t.Context(), swept, lifecycle.StateRunning, lifecycle.Guard{DueBy: before.IdleDeadline})
		if err != nil {
			t.Fatalf("sweep at the deadline: %v", err)
		}
		if got, want := f.MustGet(t, s.ID).State, lifecycle.StatePausing; got != want {
			t.Errorf("State = %s, want %s", got, want)
		}
	})
}

func testUpdateSessionRace(t *testing.T, newStore NewStore) {
	const racers = 50
	f := fixture{store: newStore(t)}
	s := RunningSession("ses_race", "acct_1", t0)
	f.MustCreate(t, s)

	var wg sync.WaitGroup
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := range racers {
		mine := s.Clone()
		if err := mine.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, t0.Add(time.Duration(i)*time.Second), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			errs[i] = f.store.UpdateSession(t.Context(), mine, lifecycle.StateRunning, lifecycle.Guard{})
		})
	}
	close(start)
	wg.Wait()

	var won, conflicts int
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case lifecycle.IsCode(err, lifecycle.CodeConflict):
			conflicts++
		default:
			t.Errorf("racer %d: unexpected error %v", i, err)
		}
	}
	if got, want := won, 1; got != want {
		t.Errorf("winners = %d, want %d", got, want)
	}
	if got, want := conflicts, racers-1; got != want {
		t.Errorf("conflicts = %d, want %d", got, want)
	}
	got := f.MustGet(t, s.ID)
	if got, want := got.Version, int64(2); got != want {
		t.Errorf("final Version = %d, want %d", got, want)
	}
	if got, want := got.State, lifecycle.StatePausing; got != want {
		t.Errorf("final State = %s, want %s", got, want)
	}
}

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

func testClaim(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	const ttl = 10 * time.Minute

	t.Run("Dedupes", func(t *testing.T) {
		claimed, stored, err := f.store.Claim(t.Context(), "webhook:evt_1", "first", ttl, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !claimed || stored != "first" {
			t.Errorf("first claim = (%v, %q), want (true, %q)", claimed, stored, "first")
		}
		claimed, stored, err = f.store.Claim(t.Context(), "webhook:evt_1", "second", ttl, t0.Add(ttl-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if claimed || stored != "first" {
			t.Errorf("second claim = (%v, %q), want (false, %q)", claimed, stored, "first")
		}
	})

	t.Run("ExpiredIsReclaimed", func(t *testing.T) {
		if _, _, err := f.store.Claim(t.Context(), "idem:k", "old", ttl, t0); err != nil {
			t.Fatal(err)
		}
		// Still live in the last second of its ttl.
		claimed, stored, err := f.store.Claim(t.Context(), "idem:k", "new", ttl, t0.Add(ttl))
		if err != nil {
			t.Fatal(err)
		}
		if claimed || stored != "old" {
			t.Errorf("claim at expiry = (%v, %q), want (false, %q)", claimed, stored, "old")
		}
		later := t0.Add(ttl + 2*time.Second)
		claimed, stored, err = f.store.Claim(t.Context(), "idem:k", "new", ttl, later)
		if err != nil {
			t.Fatal(err)
		}
		if !claimed || stored != "new" {
			t.Errorf("claim after expiry = (%v, %q), want (true, %q)", claimed, stored, "new")
		}
		claimed, stored, err = f.store.Claim(t.Context(), "idem:k", "newer", ttl, later.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if claimed || stored != "new" {
			t.Errorf("claim after reclaim = (%v, %q), want (false, %q)", claimed, stored, "new")
		}
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		if _, _, err := f.store.Claim(t.Context(), "", "v", ttl, t0); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("empty key: %v, want invalid", err)
		}
		if _, _, err := f.store.Claim(t.Context(), "k", "v", 0, t0); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("zero ttl: %v, want invalid", err)
		}
	})
}

func testAPIKey(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	key := lifecycle.APIKey{Hash: hash, AccountID: "acct_1", CreatedAt: t0}

	t.Run("OK", func(t *testing.T) {
		if err := f.store.PutAPIKey(t.Context(), key); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.GetAPIKey(t.Context(), hash)
		if err != nil {
			t.Fatal(err)
		}
		if got != key {
			t.Errorf("GetAPIKey = %+v, want %+v", got, key)
		}
	})

	t.Run("ErrConflict", func(t *testing.T) {
		err := f.store.PutAPIKey(t.Context(), lifecycle.APIKey{Hash: hash, AccountID: "acct_2", CreatedAt: t0})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
			t.Fatalf("code %q (%v), want %q", got, err, want)
		}
		got, err := f.store.GetAPIKey(t.Context(), hash)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.AccountID, "acct_1"; got != want {
			t.Errorf("AccountID after refused put = %q, want %q", got, want)
		}
	})

	t.Run("MaxRunning", func(t *testing.T) {
		limited := lifecycle.APIKey{Hash: strings.Repeat("ab", 32), AccountID: "acct_1", CreatedAt: t0, MaxRunning: 2}
		if err := f.store.PutAPIKey(t.Context(), limited); err != nil {
			t.Fatal(err)
		}
		if got, err := f.store.GetAPIKey(t.Context(), limited.Hash); err != nil || got != limited {
			t.Errorf("GetAPIKey = %+v, %v; want %+v", got, err, limited)
		}
		err := f.store.PutAPIKey(t.Context(), lifecycle.APIKey{Hash: strings.Repeat("cd", 32), AccountID: "acct_1", MaxRunning: -1})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("negative max_running: code %q (%v), want %q", got, err, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.store.GetAPIKey(t.Context(), "0000")
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeNotFound; got != want {
			t.Errorf("code %q (%v), want %q", got, err, want)
		}
	})
}

// forge returns a cursor made up by hand from json, in the DynamoDB store's
// encoding: a store must refuse every cursor it did not issue.
// testLeaseIndex: the lease index holds a running session whose app is
// starting, due lifecycle.ReadinessRequeueAfter after it became running
// (Session.LeaseDue), and drops it once its readiness moved on; a running
// session that is ready, or has no app, is not in it.
func testLeaseIndex(t *testing.T, newStore NewStore) {
	f := fixture{store: newStore(t)}
	app := &lifecycle.AppSpec{Port: 3000, StartCommand: "npm run dev", ReadyPath: "/", ReadyTimeout: time.Minute}
	starting := RunningSession(SessionID(1), "acct_lease", t0)
	starting.App, starting.Readiness = app, lifecycle.ReadinessStarting
	ready := RunningSession(SessionID(2), "acct_lease", t0)
	ready.App, ready.Readiness, ready.ReadyAt = app, lifecycle.ReadinessReady, t0
	plain := RunningSession(SessionID(3), "acct_lease", t0)
	for _, s := range []*lifecycle.Session{starting, ready, plain} {
		f.MustCreate(t, s)
	}
	due := starting.StateChangedAt.Add(lifecycle.ReadinessRequeueAfter)
	find := func(before time.Time) []string {
		t.Helper()
		page, err := f.store.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexLease, Before: before, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if got := find(due.Add(-time.Millisecond)); len(got) != 0 {
		t.Errorf("lease index before the app's requeue time: %v, want none", got)
	}
	if got := find(due.Add(time.Hour)); len(got) != 1 || got[0] != starting.ID {
		t.Errorf("lease index after the app's requeue time: %v, want only %s (starting)", got, starting.ID)
	}
	starting.Readiness, starting.ReadyAt = lifecycle.ReadinessReady, t0.Add(time.Minute)
	if err := f.store.UpdateSession(t.Context(), starting, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	if got := find(due.Add(time.Hour)); len(got) != 0 {
		t.Errorf("lease index once the app is ready: %v, want none", got)
	}
}

func forge(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
