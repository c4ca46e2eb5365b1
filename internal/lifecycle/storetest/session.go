package storetest

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The contract of creating and updating one session: conditional writes,
// the fields an update sets, and racing updates.

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
		s.ForkedFrom, s.ForkCheckpointID = "ses_source", "chk_01234567890123456789abcdef"
		s.CheckpointOnPause, s.CheckpointEvery, s.CheckpointsKeep = true, 15*time.Minute, 7
		s.NextCheckpointAt, s.LastCheckpointAt = t0.Add(15*time.Minute), t0.Add(-15*time.Minute)
		s.RestoreCheckpointID, s.RestoreFrom, s.RestoreError = "chk_0123456789abcdefghijklmnop", lifecycle.StatePaused, "the checkpoint expired"
		s.RestoreKey = "restore-1"
		s.Idle = &lifecycle.IdleState{Policy: lifecycle.IdlePolicyLearned, Key: "user#acct_1#u-9",
			Plan: lifecycle.IdlePlan{Why: lifecycle.WhyPredicted, PauseAfter: 2 * time.Minute, PreResumeAfter: 29*time.Minute + 45*time.Second,
				PreResumeKeep: 3*time.Minute + 15*time.Second, PreResume: true, Level: 1, Returns: 40},
			PreResumeAt: t0.Add(30 * time.Minute), PreResumed: true}
		s.OnLost, s.Marked, s.Lost = lifecycle.OnLostRecreate, true, "gone checkpoint=chk_0123456789abcdefghijklmnop age_seconds=60"
		s.Actor = lifecycle.ActorClient
		s.ArchiveAfter, s.DeleteAfter = 27*24*time.Hour, 90*24*time.Hour
		s.TierPending, s.TierRetryAt, s.TierError = true, t0.Add(time.Hour), "no ready checkpoint could be taken"
		s.CheckpointBytes = 3_500_000_000
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
