package daytonatest

import (
	"slices"
	"time"
)

// The state machine: transitions that settle on the clock, and the timers
// (auto-stop, auto-pause, auto-archive, auto-delete, TTL) counted from the
// last activity.

// set changes sb's state at t, queueing the change for OnStateChange. A
// state change is activity (docs/providers/daytona.md "Idle and auto-stop
// semantics").
// Callers hold mu.
func (s *Server) set(sb *Sandbox, state string, t time.Time) {
	if sb.State != state {
		s.pending = append(s.pending, StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: state, At: t})
	}
	sb.State, sb.UpdatedAt, sb.LastActivityAt = state, t, t
	s.loseProcesses(sb, state)
}

// begin moves sb into transitional state via toward final, settling after
// d (at once when d is 0). Callers hold mu.
func (s *Server) begin(sb *Sandbox, via, final string, d time.Duration, t time.Time) {
	sb.DesiredState = desiredOf(final)
	s.set(sb, via, t)
	sb.next, sb.settleAt = final, t.Add(d)
	if d == 0 && !sb.Stuck {
		s.settle(sb)
	}
}

// destroy starts deleting sb at t (a delete, or a timer). Callers hold mu.
func (s *Server) destroy(sb *Sandbox, t time.Time) {
	s.begin(sb, StateDestroying, StateDestroyed, s.opts.DeleteTime, t)
}

// settle ends sb's transition. A destroyed sandbox leaves the store (and,
// with ListLag, leaves a tombstone carrying its state before the delete).
// Callers hold mu.
func (s *Server) settle(sb *Sandbox) {
	at := sb.settleAt
	final := sb.next
	sb.next, sb.settleAt = "", time.Time{}
	if final == StateDestroyed {
		s.pending = append(s.pending, StateChange{SandboxID: sb.ID, OldState: sb.State, NewState: StateDestroyed, At: at})
		s.sandboxes.Delete(sb.ID)
		if s.opts.ListLag > 0 {
			c := sb.clone()
			c.State, c.DesiredState = StateStarted, StateStarted
			s.tombstones = append(s.tombstones, tombstone{sb: c, until: at.Add(s.opts.ListLag)})
		}
		return
	}
	s.set(sb, final, at)
}

// tick applies everything due by the clock to every sandbox, in time
// order per sandbox: settling transitions, then the timers (auto-stop,
// auto-pause, auto-archive, auto-delete, TTL). Callers hold mu.
func (s *Server) tick() {
	now := s.opts.Clock.Now().UTC()
	for _, sb := range s.sandboxes.All() {
		for range 16 {
			if _, ok := s.sandboxes.Get(sb.ID); !ok || !s.step(sb, now) {
				break
			}
		}
	}
	live := s.tombstones[:0]
	for _, t := range s.tombstones {
		if now.Before(t.until) {
			live = append(live, t)
		}
	}
	s.tombstones = live
}

// step applies sb's earliest event due by now and reports whether there
// was one. Callers hold mu.
func (s *Server) step(sb *Sandbox, now time.Time) bool {
	if sb.next != "" {
		if sb.Stuck || sb.settleAt.After(now) {
			return false
		}
		s.settle(sb)
		return true
	}
	if !sb.AutoDestroyAt.IsZero() && !sb.AutoDestroyAt.After(now) {
		s.destroy(sb, sb.AutoDestroyAt)
		return true
	}
	minutes := func(m int) time.Time { return sb.LastActivityAt.Add(time.Duration(m) * time.Minute) }
	switch {
	case sb.State == StateStarted && sb.DesiredState == StateStarted && sb.AutoStop > 0 && !minutes(sb.AutoStop).After(now):
		if sb.AutoDelete == 0 {
			s.destroy(sb, minutes(sb.AutoStop))
		} else {
			s.begin(sb, StateStopping, StateStopped, s.opts.StopTime, minutes(sb.AutoStop))
		}
		return true
	case sb.State == StateStarted && sb.DesiredState == StateStarted && sb.AutoPause > 0 && !minutes(sb.AutoPause).After(now):
		s.begin(sb, StatePausing, StatePaused, s.opts.PauseTime, minutes(sb.AutoPause))
		return true
	case sb.State == StateStopped && sb.AutoDelete >= 0 && !minutes(sb.AutoDelete).After(now):
		s.destroy(sb, minutes(sb.AutoDelete))
		return true
	case sb.State == StateStopped && !minutes(archiveMinutes(sb.AutoArchive)).After(now):
		s.begin(sb, StateArchiving, StateArchived, s.opts.ArchiveTime, minutes(archiveMinutes(sb.AutoArchive)))
		return true
	}
	return false
}

// archiveMinutes reads autoArchiveInterval: 0 is the maximum, 30 days.
func archiveMinutes(m int) int {
	if m == 0 {
		return 30 * 24 * 60
	}
	return m
}

// desiredOf returns the desiredState a settled state implies.
func desiredOf(state string) string {
	switch state {
	case StateStopped, StateStopping:
		return StateStopped
	case StatePaused, StatePausing:
		return StatePaused
	case StateArchived, StateArchiving:
		return StateArchived
	case StateDestroyed, StateDestroying:
		return StateDestroyed
	default: // error and build_failed too: they wanted to start
		return StateStarted
	}
}

// Transitional reports whether state is one that settles on its own:
// every known state but started, stopped, paused, archived, error,
// build_failed and destroyed, and every unknown one (daytona.md).
func Transitional(state string) bool {
	switch state {
	case StateStarted, StateStopped, StatePaused, StateArchived, StateError, StateBuildFailed, StateDestroyed:
		return false
	}
	return true
}

func knownState(st string) bool {
	return slices.Contains([]string{StateCreating, StateRestoring, StateDestroyed, StateDestroying,
		StateStarted, StateStopped, StateStarting, StateStopping, StateError, StateBuildFailed,
		StatePendingBuild, StateBuildingSnapshot, StateUnknown, StatePullingSnapshot, StateArchived,
		StateArchiving, StateResizing, StateSnapshotting, StateForking, StatePausing, StatePaused,
		StateResuming}, st)
}

// flush delivers queued state changes to OnStateChange, in order, outside
// mu.
func (s *Server) flush() {
	s.notify.Lock()
	defer s.notify.Unlock()
	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	if s.opts.OnStateChange == nil {
		return
	}
	for _, c := range pending {
		s.opts.OnStateChange(c)
	}
}
