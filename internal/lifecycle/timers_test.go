package lifecycle_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// manualTimers is a lifecycle.Timers on the manual clock: Arm records, and
// runDue moves the clock to each armed time in order and fires it, as a
// real timer would.
type manualTimers struct {
	mu    sync.Mutex
	armed []armed
}

type armed struct {
	id string
	at time.Time
}

func (m *manualTimers) Arm(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed = append(m.armed, armed{id, at})
	return nil
}

// next removes and returns the earliest armed timer at or before until.
func (m *manualTimers) next(until time.Time) (armed, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.armed) == 0 {
		return armed{}, false
	}
	i := 0
	for j, a := range m.armed {
		if a.at.Before(m.armed[i].at) {
			i = j
		}
	}
	a := m.armed[i]
	if a.at.After(until) {
		return armed{}, false
	}
	m.armed = slices.Delete(m.armed, i, i+1)
	return a, true
}

func (m *manualTimers) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.armed)
}

// runDue fires every timer armed at or before until, earliest first, with
// the clock set to its time, and returns the outcomes in order.
func (m *manualTimers) runDue(t *testing.T, e *env, until time.Time) []lifecycle.TimerOutcome {
	t.Helper()
	var out []lifecycle.TimerOutcome
	for {
		a, ok := m.next(until)
		if !ok {
			return out
		}
		if a.at.After(e.clock.Now()) {
			e.clock.Set(a.at)
		}
		got, err := e.svc.FireTimer(t.Context(), a.id)
		if err != nil {
			t.Fatalf("fire timer %s at %s: %v", a.id, a.at, err)
		}
		out = append(out, got)
	}
}

func newTimerEnv(t *testing.T) (*env, *manualTimers) {
	t.Helper()
	timers := &manualTimers{}
	e := newEnv(t, func(c *lifecycle.Config) { c.Timers = timers })
	return e, timers
}

func TestTimerPausesBetweenTicks(t *testing.T) {
	e, timers := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	deadline := sess.PauseDeadline()
	if got, want := timers.count(), 1; got != want {
		t.Fatalf("timers armed by create = %d, want %d", got, want)
	}
	// The next sweep tick is minutes away; only the timer can pause it.
	out := timers.runDue(t, e, svcT0.Add(5*time.Minute))
	if got, want := out, []lifecycle.TimerOutcome{lifecycle.TimerPaused}; !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
	got := e.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.Reason != lifecycle.ReasonIdle {
		t.Fatalf("state = %s (%s), want paused (idle)", got.State, got.Reason)
	}
	if late := got.PausedAt.Sub(deadline); late < 0 || late > time.Second {
		t.Fatalf("paused %s after the deadline, want within 0..1s", late)
	}
}

func TestTimerRearmsAfterHeartbeat(t *testing.T) {
	e, timers := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	first := sess.PauseDeadline()
	e.clock.Advance(40 * time.Second)
	if _, err := e.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	moved := e.mustGet(t, sess.ID).PauseDeadline()
	if !moved.After(first) {
		t.Fatalf("heartbeat did not move the deadline: %s, first %s", moved, first)
	}
	// Fire only the first timer: the deadline moved, so it re-arms.
	out := timers.runDue(t, e, first)
	if got, want := out, []lifecycle.TimerOutcome{lifecycle.TimerRearmed}; !slices.Equal(got, want) {
		t.Fatalf("outcomes at the old deadline = %v, want %v", got, want)
	}
	if got := e.mustGet(t, sess.ID).State; got != lifecycle.StateRunning {
		t.Fatalf("state after the stale timer = %s, want running", got)
	}
	// The heartbeat armed the new deadline, and so did the re-arm: a
	// duplicate, which pauses once.
	out = timers.runDue(t, e, moved.Add(time.Minute))
	if got, want := out, []lifecycle.TimerOutcome{lifecycle.TimerPaused, lifecycle.TimerIdle}; !slices.Equal(got, want) {
		t.Fatalf("outcomes at the new deadline = %v, want %v", got, want)
	}
	got := e.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused {
		t.Fatalf("state = %s, want paused", got.State)
	}
	if late := got.PausedAt.Sub(moved); late < 0 || late > time.Second {
		t.Fatalf("paused %s after the moved deadline, want within 0..1s", late)
	}
}

func TestTimerDuplicatesPauseOnce(t *testing.T) {
	e, timers := newTimerEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	for range 3 {
		if err := timers.Arm(t.Context(), sess.ID, sess.PauseDeadline()); err != nil {
			t.Fatal(err)
		}
	}
	out := timers.runDue(t, e, sess.PauseDeadline().Add(time.Second))
	paused := 0
	for _, o := range out {
		if o == lifecycle.TimerPaused {
			paused++
		}
	}
	if got, want := len(out), 4; got != want {
		t.Fatalf("timers fired = %d, want %d", got, want)
	}
	if paused != 1 {
		t.Fatalf("pauses = %d of %v, want 1", paused, out)
	}
	if got, want := e.fake.Calls(fake.OpPause), 1; got != want {
		t.Fatalf("provider pauses = %d, want %d", got, want)
	}
}

func TestTimerArmsOnlyWithinHorizon(t *testing.T) {
	e, timers := newTimerEnv(t)
	e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 3600})
	if got := timers.count(); got != 0 {
		t.Fatalf("timers armed for a deadline an hour out = %d, want 0 (the sweep arms it)", got)
	}
	if got := e.svc.Config().TimerHorizon; got != lifecycle.DefaultTimerHorizon {
		t.Fatalf("default horizon = %s, want %s", got, lifecycle.DefaultTimerHorizon)
	}
}

func TestTimerUnknownSessionIsNoop(t *testing.T) {
	e, _ := newTimerEnv(t)
	got, err := e.svc.FireTimer(t.Context(), "ses_unknown")
	if err != nil || got != lifecycle.TimerIdle {
		t.Fatalf("FireTimer(unknown) = %v, %v; want noop, nil", got, err)
	}
}
