package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// ReplayStart is when Replay's session is created: 22:00 UTC, so its
// transitions cross midnight.
var ReplayStart = time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)

// Replay returns the events of one session's life, in version order, as
// the publisher hands them to a UsageStore: create, running, pause,
// resume, a pause that crosses midnight, and a delete. Each event's Since
// is the previous event's Time. ReplayWant is what they add up to.
func Replay(sessionID, account, provider string) []lifecycle.Event {
	at := func(d time.Duration) time.Time { return ReplayStart.Add(d) }
	steps := []struct {
		to lifecycle.State
		t  time.Time
	}{
		{lifecycle.StateProvisioning, at(0)},
		{lifecycle.StateRunning, at(3 * time.Second)},                           // 3 s provisioning
		{lifecycle.StatePausing, at(30 * time.Minute)},                          // 1,797 s running
		{lifecycle.StatePaused, at(30*time.Minute + 2*time.Second)},             // 2 s pausing; pause 1
		{lifecycle.StateResuming, at(time.Hour)},                                // 1,798 s paused
		{lifecycle.StateRunning, at(time.Hour + 1500*time.Millisecond)},         // 1.5 s resuming; resume 1
		{lifecycle.StatePausing, at(2*time.Hour + 10*time.Minute)},              // 3,598.5 s on 03-01, 600 s on 03-02
		{lifecycle.StatePaused, at(2*time.Hour + 10*time.Minute + time.Second)}, // 1 s; pause 2 (03-02)
		{lifecycle.StateKilled, at(3 * time.Hour)},                              // 2,999 s paused
	}
	var evs []lifecycle.Event
	var from lifecycle.State
	var since time.Time
	for i, s := range steps {
		v := int64(i + 1)
		evs = append(evs, lifecycle.Event{EventID: lifecycle.EventID(sessionID, v), SessionID: sessionID, AccountID: account,
			SandboxID: "sbx-" + sessionID, From: from, To: s.to, Version: v, Reason: lifecycle.ReasonRequest,
			Time: s.t, Provider: provider, Since: since})
		from, since = s.to, s.t
	}
	return evs
}

// ReplayWant is the account-day rows Replay's events add up to, by hand
// from the transitions' times.
var ReplayWant = []lifecycle.UsageRow{
	{Day: "2026-03-01", RunningMS: (3+1797+2+3598)*1000 + 1500 + 500, PausedMS: 1798 * 1000, Pauses: 1, Resumes: 1},
	{Day: "2026-03-02", RunningMS: 601 * 1000, PausedMS: 2999 * 1000, Pauses: 1},
}

// testUsage checks RecordTransition, UsageRows and SessionEvents: a replay
// adds up to the second, a redelivered or older event changes nothing,
// session rows paginate, and concurrent recorders of the same events count
// each once.
func testUsage(t *testing.T, newStore NewStore) {
	usage := func(tb testing.TB, st lifecycle.Store) lifecycle.UsageStore {
		tb.Helper()
		us, ok := st.(lifecycle.UsageStore)
		if !ok {
			tb.Fatalf("%T is not a lifecycle.UsageStore", st)
		}
		return us
	}
	days := func(t *testing.T, us lifecycle.UsageStore, account string) []lifecycle.UsageRow {
		t.Helper()
		page, err := us.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: account, From: "2026-02-28", To: "2026-03-03"})
		if err != nil {
			t.Fatal(err)
		}
		return page.Rows
	}
	check := func(t *testing.T, got []lifecycle.UsageRow, want []lifecycle.UsageRow, provider string, times int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("rows = %+v, want %d rows", got, len(want))
		}
		for i, w := range want {
			w.Provider = provider
			w.RunningMS, w.PausedMS, w.Pauses, w.Resumes = w.RunningMS*times, w.PausedMS*times, w.Pauses*times, w.Resumes*times
			if got[i] != w {
				t.Errorf("row %d = %+v, want %+v", i, got[i], w)
			}
		}
	}

	t.Run("ReplayToTheSecond", func(t *testing.T) {
		us := usage(t, newStore(t))
		for _, ev := range Replay(SessionID(7001), "acct-u", "e2b") {
			if err := us.RecordTransition(t.Context(), ev); err != nil {
				t.Fatalf("record %s: %v", ev.EventID, err)
			}
		}
		check(t, days(t, us, "acct-u"), ReplayWant, "e2b", 1)
		page, err := us.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: "acct-u", From: "2026-03-01", To: "2026-03-02", BySession: true, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		want := []lifecycle.UsageRow{ReplayWant[0], ReplayWant[1]}
		for i := range want {
			want[i].SessionID = SessionID(7001)
		}
		check(t, page.Rows, want, "e2b", 1)
		if page.Cursor != "" {
			t.Errorf("cursor = %q on the last page", page.Cursor)
		}
		if rows := days(t, us, "acct-other"); len(rows) != 0 {
			t.Errorf("another account sees %+v", rows)
		}
		one, err := us.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: "acct-u", From: "2026-03-02", To: "2026-03-02"})
		if err != nil || len(one.Rows) != 1 || one.Rows[0].Day != "2026-03-02" {
			t.Errorf("one day = %+v, %v; want only 2026-03-02", one.Rows, err)
		}
	})

	t.Run("StoredBytesPerTier", func(t *testing.T) {
		us := usage(t, newStore(t))
		sid, t0 := SessionID(7005), time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
		ev := func(v int64, from, to lifecycle.State, since, at time.Duration, bytes int64) lifecycle.Event {
			return lifecycle.Event{EventID: lifecycle.EventID(sid, v), SessionID: sid, AccountID: "acct-s", Provider: "vercel",
				From: from, To: to, Version: v, Since: t0.Add(since), Time: t0.Add(at), CheckpointBytes: bytes}
		}
		for _, e := range []lifecycle.Event{
			ev(5, lifecycle.StatePaused, lifecycle.StateArchived, 0, time.Hour, 2e9),                         // 2 GB × 1 h kept beside a paused session
			ev(6, lifecycle.StateArchived, lifecycle.StateRestoring, time.Hour, 6*time.Hour, 3e9),            // 3 GB × 5 h archived, 2 h of them on 03-02
			ev(6, lifecycle.StateArchived, lifecycle.StateRestoring, time.Hour, 6*time.Hour, 3e9),            // redelivered
			ev(7, lifecycle.StateRestoring, lifecycle.StateRunning, 6*time.Hour, 6*time.Hour+time.Second, 0), // nothing stored
		} {
			if err := us.RecordTransition(t.Context(), e); err != nil {
				t.Fatalf("record %s: %v", e.EventID, err)
			}
		}
		got := days(t, us, "acct-s")
		want := []lifecycle.UsageRow{
			{Day: "2026-03-01", Provider: "vercel", PausedMS: 3600e3, CheckpointMBMS: 2000 * 3600e3, ArchivedMBMS: 3000 * 3 * 3600e3},
			{Day: "2026-03-02", Provider: "vercel", RunningMS: 1000, ArchivedMBMS: 3000 * 2 * 3600e3},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rows = %+v, want %+v", got, want)
		}
	})

	t.Run("DuplicateNotCounted", func(t *testing.T) {
		us := usage(t, newStore(t))
		evs := Replay(SessionID(7002), "acct-d", "daytona")
		for i, ev := range evs {
			for range 2 { // every event delivered twice
				if err := us.RecordTransition(t.Context(), ev); err != nil {
					t.Fatalf("record %s: %v", ev.EventID, err)
				}
			}
			if i > 0 { // and an older one again after it
				if err := us.RecordTransition(t.Context(), evs[i-1]); err != nil {
					t.Fatalf("record %s again: %v", evs[i-1].EventID, err)
				}
			}
		}
		check(t, days(t, us, "acct-d"), ReplayWant, "daytona", 1)
		got, err := us.SessionEvents(t.Context(), lifecycle.EventQuery{SessionID: SessionID(7002), Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) != len(evs) {
			t.Fatalf("SessionEvents = %d events, want %d (one per version)", len(got.Events), len(evs))
		}
	})

	t.Run("SessionEvents", func(t *testing.T) {
		us := usage(t, newStore(t))
		evs := Replay(SessionID(7003), "acct-e", "e2b")
		actors := []string{lifecycle.ActorAPI, lifecycle.ActorSandman, lifecycle.ActorSweep, lifecycle.ActorProvider, lifecycle.ActorClient}
		for i := range evs {
			evs[i].Actor = actors[i%len(actors)]
		}
		// A readiness event between the first running and the pause.
		ready := evs[1]
		ready.Version, ready.EventID, ready.From, ready.Since = 3, lifecycle.EventID(ready.SessionID, 3), lifecycle.StateRunning, evs[1].Time
		ready.Time, ready.Readiness, ready.ReadinessDetail = evs[1].Time.Add(4*time.Second), lifecycle.ReadinessFailed, "exit 3"
		evs = append(evs[:2], append([]lifecycle.Event{ready}, evs[2:]...)...)
		for i := 3; i < len(evs); i++ {
			evs[i].Version, evs[i].EventID = int64(i+1), lifecycle.EventID(evs[i].SessionID, int64(i+1))
		}
		for _, ev := range evs {
			if err := us.RecordTransition(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		var got []lifecycle.Event
		q := lifecycle.EventQuery{SessionID: SessionID(7003), Limit: 3}
		for pages := 0; ; pages++ {
			page, err := us.SessionEvents(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Events) > 3 || pages > 5 {
				t.Fatalf("page %d has %d events; pages do not end", pages, len(page.Events))
			}
			got = append(got, page.Events...)
			if q.Cursor = page.Cursor; q.Cursor == "" {
				break
			}
		}
		if len(got) != len(evs) {
			t.Fatalf("got %d events over the pages, want all %d", len(got), len(evs))
		}
		for i, g := range got {
			w := evs[len(evs)-1-i]
			w.Provider = "" // not kept
			if !g.Time.Equal(w.Time) || !g.Since.Equal(w.Since) {
				t.Errorf("event %d time %v since %v, want %v and %v", i, g.Time, g.Since, w.Time, w.Since)
			}
			g.Time, g.Since = w.Time, w.Since
			if g != w {
				t.Errorf("event %d = %+v, want %+v (newest first, actor and readiness kept)", i, g, w)
			}
		}
		if none, err := us.SessionEvents(t.Context(), lifecycle.EventQuery{SessionID: SessionID(7999), Limit: 10}); err != nil || len(none.Events) != 0 || none.Cursor != "" {
			t.Errorf("unknown session: %+v, %v; want none", none, err)
		}
		// Retention: an event is left out once its retention ended.
		now := ReplayStart.Add(lifecycle.DefaultEventRetention + 90*time.Minute)
		kept, err := us.SessionEvents(t.Context(), lifecycle.EventQuery{SessionID: SessionID(7003), Limit: 100, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(kept.Events) != 3 || kept.Events[2].To != lifecycle.StatePausing {
			t.Errorf("at %v: %d events kept, want the 3 of the last 90 minutes of the replay", now, len(kept.Events))
		}
		for name, c := range map[string]string{
			"OtherSession": lifecycle.EventCursor(SessionID(7002), 3),
			"NotACursor":   "%%%",
			"Crafted":      "ZXZlbnRzCng",
		} {
			if _, err := us.SessionEvents(t.Context(), lifecycle.EventQuery{SessionID: SessionID(7003), Limit: 3, Cursor: c}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("cursor %s: %v, want invalid", name, err)
			}
		}
		for _, limit := range []int{0, lifecycle.MaxEventPage + 1} {
			if _, err := us.SessionEvents(t.Context(), lifecycle.EventQuery{SessionID: SessionID(7003), Limit: limit}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("limit %d: %v, want invalid", limit, err)
			}
		}
	})

	t.Run("SessionPages", func(t *testing.T) {
		us := usage(t, newStore(t))
		for i := range 5 {
			for _, ev := range Replay(SessionID(7100+i), "acct-p", "e2b") {
				if err := us.RecordTransition(t.Context(), ev); err != nil {
					t.Fatal(err)
				}
			}
		}
		seen := map[string]int{}
		cursor, pages := "", 0
		for {
			page, err := us.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: "acct-p", From: "2026-03-01", To: "2026-03-02", BySession: true, Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, r := range page.Rows {
				seen[r.Day+"/"+r.SessionID]++
			}
			if cursor = page.Cursor; cursor == "" {
				break
			}
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
		}
		if got, want := len(seen), 10; got != want || pages != 4 {
			t.Errorf("saw %d distinct session-days in %d pages, want %d in 4", got, pages, want)
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s seen %d times", k, n)
			}
		}
		if _, err := us.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: "acct-p", From: "2026-03-01", To: "2026-03-02", BySession: true, Limit: 3, Cursor: "bm90LW91cnM"}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("foreign cursor: err = %v, want invalid", err)
		}
	})

	t.Run("ConcurrentRecorders", func(t *testing.T) {
		us := usage(t, newStore(t))
		const sessions, recorders = 6, 3
		var wg sync.WaitGroup
		errs := make(chan error, sessions*recorders)
		for i := range sessions {
			evs := Replay(SessionID(7200+i), "acct-c", "e2b")
			for range recorders { // every session's events recorded by 3 at once
				wg.Go(func() {
					for _, ev := range evs {
						if err := us.RecordTransition(t.Context(), ev); err != nil {
							errs <- fmt.Errorf("record %s: %w", ev.EventID, err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		check(t, days(t, us, "acct-c"), ReplayWant, "e2b", sessions)
	})
}
