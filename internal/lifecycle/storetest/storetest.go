// Package storetest is the contract of lifecycle.Store as tests: one suite
// that every store runs (internal/dynamo against DynamoDB Local,
// internal/lifecycle/memstore in memory), so the in-memory store the domain tests use
// keeps the same conditional-write rules as the one in production.
package storetest

import (
	"fmt"
	"strings"
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
	t.Run("FindSessions", func(t *testing.T) { testFindSessions(t, newStore) })
	t.Run("FindBySandbox", func(t *testing.T) { testFindBySandbox(t, newStore) })
	t.Run("Claim", func(t *testing.T) { testClaim(t, newStore) })
	t.Run("APIKey", func(t *testing.T) { testAPIKey(t, newStore) })
	t.Run("RunningSlots", func(t *testing.T) { testRunningSlots(t, newStore) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, newStore) })
	t.Run("Pools", func(t *testing.T) { testPools(t, newStore) })
	t.Run("LeaseIndex", func(t *testing.T) { testLeaseIndex(t, newStore) })
	t.Run("TierIndex", func(t *testing.T) { testTierIndex(t, newStore) })
	t.Run("Checkpoints", func(t *testing.T) { testCheckpoints(t, newStore) })
	t.Run("IdleHistograms", func(t *testing.T) { testIdleHistograms(t, newStore) })
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

// fmtTiers prints t's settings, "unset" for a nil one.
func fmtTiers(t lifecycle.Tiers) string {
	f := func(d *time.Duration) string {
		if d == nil {
			return "unset"
		}
		return d.String()
	}
	return f(t.ArchiveAfter) + "/" + f(t.DeleteAfter)
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

	// The account's tiers as a key sets them: "not set" (nil) and "never"
	// (0) are kept apart, field by field; out of range is refused.
	t.Run("Tiers", func(t *testing.T) {
		d := func(v time.Duration) *time.Duration { return &v }
		for i, tiers := range []lifecycle.Tiers{
			{ArchiveAfter: d(0), DeleteAfter: d(90 * 24 * time.Hour)},
			{ArchiveAfter: d(36 * time.Hour)},
			{DeleteAfter: d(0)},
		} {
			k := lifecycle.APIKey{Hash: strings.Repeat(fmt.Sprintf("%02x", 0xe0+i), 32), AccountID: "acct_1", CreatedAt: t0, Tiers: tiers}
			if err := f.store.PutAPIKey(t.Context(), k); err != nil {
				t.Fatal(err)
			}
			got, err := f.store.GetAPIKey(t.Context(), k.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if fmtTiers(got.Tiers) != fmtTiers(tiers) || got.AccountID != k.AccountID || got.MaxRunning != 0 {
				t.Errorf("GetAPIKey tiers %s (%+v), want %s", fmtTiers(got.Tiers), got, fmtTiers(tiers))
			}
		}
		err := f.store.PutAPIKey(t.Context(), lifecycle.APIKey{Hash: strings.Repeat("ef", 32), AccountID: "acct_1",
			Tiers: lifecycle.Tiers{DeleteAfter: d(time.Second)}})
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("delete after 1 s: code %q (%v), want %q", got, err, want)
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
