package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func ptr[T any](v T) *T { return &v }

func TestAwayTimeoutInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds *int64
		want    time.Duration
		wantErr bool
	}{
		{"Default", nil, 2 * time.Minute, false},
		{"Off", ptr(int64(0)), 0, false},
		{"Five", ptr(int64(5)), 5 * time.Second, false},
		{"ErrNegative", ptr(int64(-1)), 0, true},
		{"ErrTooLong", ptr(int64(86401)), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lifecycle.AwayTimeout(tc.seconds)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("err = %v, want invalid", err)
			}
			if got != tc.want {
				t.Errorf("AwayTimeout = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPresence: the last visible client leaving sets the away deadline
// (now + away_timeout), which becomes the pause deadline when it is the
// earliest; the sweep then pauses with reason away. A returning client
// clears it; presence never postpones the idle deadline.
func TestPresence(t *testing.T) {
	t.Run("AwayPausesWithReasonAway", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{AwayTimeoutSeconds: ptr(int64(30))})
		if got, want := sess.AwayTimeout, 30*time.Second; got != want {
			t.Fatalf("away timeout = %v, want %v", got, want)
		}
		e.clock.Advance(time.Minute)
		left := e.clock.Now()
		got, wrote, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false)
		if err != nil || !wrote {
			t.Fatalf("SetPresence(away) = %v, wrote %v", err, wrote)
		}
		if want := left.Add(30 * time.Second); !got.AwayDeadline.Equal(want) || !got.PauseDeadline().Equal(want) {
			t.Fatalf("away deadline %v, pause deadline %v, want both %v", got.AwayDeadline, got.PauseDeadline(), want)
		}
		// A second absence keeps the first deadline.
		e.clock.Advance(10 * time.Second)
		if _, wrote, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false); err != nil || wrote {
			t.Fatalf("second away: wrote %v, err %v; want no write", wrote, err)
		}
		// The idle index follows the new deadline.
		page, err := e.svc.FindDue(t.Context(), lifecycle.DueQuery{Index: lifecycle.IndexIdle, Before: left.Add(30 * time.Second), Limit: 10})
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("FindDue at the away deadline = %d sessions, err %v; want 1", len(page.Sessions), err)
		}
		e.clock.Advance(20 * time.Second)
		stored := e.mustGet(t, sess.ID)
		if err := e.svc.PauseIfDue(t.Context(), stored, e.clock.Now()); err != nil {
			t.Fatalf("PauseIfDue: %v", err)
		}
		paused := e.mustGet(t, sess.ID)
		if paused.State != lifecycle.StatePaused || paused.Reason != lifecycle.ReasonAway {
			t.Fatalf("state %s reason %s, want paused away", paused.State, paused.Reason)
		}
		if !paused.AwayDeadline.IsZero() {
			t.Errorf("away deadline %v kept after the pause", paused.AwayDeadline)
		}
	})
	t.Run("ReturningClientClears", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if _, _, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		got, wrote, err := e.svc.SetPresence(t.Context(), acct, sess.ID, true)
		if err != nil || !wrote {
			t.Fatalf("SetPresence(present) = %v, wrote %v", err, wrote)
		}
		if !got.AwayDeadline.IsZero() {
			t.Fatalf("away deadline %v after a client came back", got.AwayDeadline)
		}
		if got, want := got.PauseDeadline(), sess.IdleDeadline; !got.Equal(want) {
			t.Errorf("pause deadline %v, want the idle deadline %v", got, want)
		}
		e.clock.Advance(2 * time.Minute) // past the old away deadline, before idle
		if err := e.svc.PauseIfDue(t.Context(), e.mustGet(t, sess.ID), e.clock.Now()); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("PauseIfDue after return = %v, want conflict (not due)", err)
		}
	})
	t.Run("PresenceNeverKeepsRunning", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		e.clock.Advance(time.Minute)
		got, _, err := e.svc.SetPresence(t.Context(), acct, sess.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if !got.IdleDeadline.Equal(sess.IdleDeadline) || !got.LastActivityAt.Equal(sess.LastActivityAt) {
			t.Errorf("presence moved activity: idle %v→%v", sess.IdleDeadline, got.IdleDeadline)
		}
	})
	t.Run("IdleBeforeAway", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60, AwayTimeoutSeconds: ptr(int64(3600))})
		got, _, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if got.PauseReason() != lifecycle.ReasonIdle || !got.PauseDeadline().Equal(sess.IdleDeadline) {
			t.Errorf("pause at %v for %s, want the idle deadline %v for idle", got.PauseDeadline(), got.PauseReason(), sess.IdleDeadline)
		}
	})
	t.Run("Off", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{AwayTimeoutSeconds: ptr(int64(0))})
		got, wrote, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false)
		if err != nil || wrote || !got.AwayDeadline.IsZero() {
			t.Errorf("presence off: wrote %v, away %v, err %v; want nothing", wrote, got.AwayDeadline, err)
		}
	})
	t.Run("PausedTakesNoDeadline", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
			t.Fatal(err)
		}
		got, wrote, err := e.svc.SetPresence(t.Context(), acct, sess.ID, false)
		if err != nil || wrote || !got.AwayDeadline.IsZero() {
			t.Errorf("paused: wrote %v, away %v, err %v; want nothing", wrote, got.AwayDeadline, err)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if _, _, err := e.svc.SetPresence(t.Context(), "acct_other", sess.ID, false); !lifecycle.IsCode(err, lifecycle.CodeForbidden) {
			t.Errorf("err = %v, want forbidden", err)
		}
	})
}
