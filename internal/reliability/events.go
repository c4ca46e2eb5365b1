package reliability

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// EventLog is a lifecycle.Publisher that keeps every event it is given (the
// tests give it to the outbox poller of the world's table). It is safe for
// concurrent use.
type EventLog struct {
	mu     sync.Mutex
	events []lifecycle.Event
}

var _ lifecycle.Publisher = (*EventLog)(nil)

// Publish keeps events; it never fails.
func (l *EventLog) Publish(_ context.Context, events ...lifecycle.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, events...)
	return nil
}

// Len returns how many events were published.
func (l *EventLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// For returns one session's events in publication order (its checkpoints'
// events apart: Checkpoints).
func (l *EventLog) For(id string) []lifecycle.Event {
	return l.filter(func(ev lifecycle.Event) bool { return ev.SessionID == id && !ev.IsCheckpoint() })
}

// Checkpoints returns the checkpoint events of one session's checkpoints
// in publication order.
func (l *EventLog) Checkpoints(sessionID string) []lifecycle.Event {
	return l.filter(func(ev lifecycle.Event) bool { return ev.SessionID == sessionID && ev.IsCheckpoint() })
}

func (l *EventLog) filter(keep func(lifecycle.Event) bool) []lifecycle.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []lifecycle.Event
	for _, ev := range l.events {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// reasons are the transition reasons events may carry (lifecycle.Reason*).
var reasons = []string{lifecycle.ReasonRequest, lifecycle.ReasonIdle, lifecycle.ReasonAway, lifecycle.ReasonLifetime, lifecycle.ReasonWebhook, lifecycle.ReasonReconcile, lifecycle.ReasonDormant, lifecycle.ReasonReturn,
	lifecycle.ReasonRestore, lifecycle.ReasonRestoreFailed, lifecycle.ReasonPredicted, lifecycle.ReasonLost, lifecycle.ReasonRecreated,
	lifecycle.ReasonArchive, lifecycle.ReasonUnarchive, lifecycle.ReasonRetention}

// CheckEvents checks one session's published events (in publication order)
// against its recorded writes, as docs/DESIGN.md "Events out" promises delivery:
// at least once, identified by event_id. Every committed transition (a write
// that changed the state, the create included) has at least one event with
// its event_id ("<session_id>:<version>"); no event names a write that kept
// the state or a version never written; copies of one event_id are
// identical (a redelivery); each event's from, to and reason are those of
// its write; and the first copies come in version order. It returns one
// description per problem.
func CheckEvents(writes []Write, events []lifecycle.Event) []string {
	var problems []string
	byVersion := map[int64]lifecycle.Event{}
	var last int64
	for _, ev := range events {
		if want := lifecycle.EventID(ev.SessionID, ev.Version); ev.EventID != want {
			problems = append(problems, fmt.Sprintf("event version %d has event_id %q, want %q", ev.Version, ev.EventID, want))
		}
		if prev, dup := byVersion[ev.Version]; dup {
			if prev != ev {
				problems = append(problems, fmt.Sprintf("two different events with event_id %s: %+v and %+v", ev.EventID, prev, ev))
			}
			continue
		}
		if ev.Version <= last {
			problems = append(problems, fmt.Sprintf("event version %d published after version %d", ev.Version, last))
		}
		last = ev.Version
		byVersion[ev.Version] = ev
		if !slices.Contains(reasons, ev.Reason) {
			problems = append(problems, fmt.Sprintf("event version %d has reason %q", ev.Version, ev.Reason))
		}
	}
	transitions := 0
	for _, w := range writes {
		ev, published := byVersion[w.Version]
		switch {
		case !w.Transition() && published:
			problems = append(problems, fmt.Sprintf("version %d kept state %s but published %s→%s", w.Version, w.To, ev.From, ev.To))
		case !w.Transition():
		case !published:
			problems = append(problems, fmt.Sprintf("transition %s→%s at version %d published no event", w.From, w.To, w.Version))
		case ev.From != w.From || ev.To != w.To || ev.Reason != w.Reason:
			problems = append(problems, fmt.Sprintf("version %d wrote %s→%s (%s) but published %s→%s (%s)",
				w.Version, w.From, w.To, w.Reason, ev.From, ev.To, ev.Reason))
		}
		if w.Transition() {
			transitions++
		}
	}
	if got := len(byVersion); got != transitions {
		problems = append(problems, fmt.Sprintf("events for %d distinct versions, %d transitions", got, transitions))
	}
	return problems
}

// CheckSession checks one session: its recorded writes (CheckHistory) and
// its events against them (CheckEvents). Each problem is prefixed
// "history: " or "events: ".
func CheckSession(writes []Write, events []lifecycle.Event) []string {
	var problems []string
	for _, p := range CheckHistory(writes) {
		problems = append(problems, "history: "+p)
	}
	for _, p := range CheckEvents(writes, events) {
		problems = append(problems, "events: "+p)
	}
	return problems
}
