package dynamo_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestAwayDeadline: the away timeout and deadline round-trip, the idle
// index key follows the away deadline when it is the earliest, a returning
// client moves it back to the idle deadline, and the sweep's guard
// (Guard.DueBy) sees the stored pause deadline.
func TestAwayDeadline(t *testing.T) {
	f := MustFixture(t)
	s := runningSession("ses_away", "acct_1", t0)
	s.AwayTimeout = 45 * time.Second
	f.MustCreate(t, s)
	checkDueIndexes(t, f, s.ID, tabledef.IndexIdle, s.IdleDeadline)

	left := t0.Add(time.Minute)
	if !s.MarkAway(left) {
		t.Fatal("MarkAway changed nothing")
	}
	if err := f.store.UpdateSession(t.Context(), s, s.State, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	got := f.MustGet(t, s.ID)
	if want := left.Add(45 * time.Second); !got.AwayDeadline.Equal(want) || got.AwayTimeout != 45*time.Second {
		t.Fatalf("stored away deadline %v timeout %v, want %v and 45s", got.AwayDeadline, got.AwayTimeout, want)
	}
	checkDueIndexes(t, f, s.ID, tabledef.IndexIdle, left.Add(45*time.Second))

	// The sweep's guard at the away deadline holds; a client returning
	// first makes it fail.
	early := got.Clone()
	got.MarkPresent()
	if err := f.store.UpdateSession(t.Context(), got, got.State, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	checkDueIndexes(t, f, s.ID, tabledef.IndexIdle, s.IdleDeadline)
	if err := early.Transition(lifecycle.StatePausing, lifecycle.ReasonAway, left.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	early.Version = got.Version
	err := f.store.UpdateSession(t.Context(), early, lifecycle.StateRunning, lifecycle.Guard{DueBy: left.Add(time.Minute)})
	if !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Fatalf("pause after the client came back = %v, want conflict", err)
	}
}
