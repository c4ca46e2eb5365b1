package reliability

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// EventLog is a lifecycle.Publisher that keeps every event it is given. It
// is safe for concurrent use.
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

// For returns one session's events in publication order.
func (l *EventLog) For(id string) []lifecycle.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []lifecycle.Event
	for _, ev := range l.events {
		if ev.SessionID == id {
			out = append(out, ev)
		}
	}
	return out
}

// reasons are the transition reasons events may carry (lifecycle.Reason*).
var reasons = []string{lifecycle.ReasonRequest, lifecycle.ReasonIdle, lifecycle.ReasonAway, lifecycle.ReasonLifetime, lifecycle.ReasonWebhook, lifecycle.ReasonReconcile, lifecycle.ReasonDormant}

// CheckEvents checks one session's published events against its recorded
// writes: exactly one event per committed transition (a write that changed
// the state, the create included), none for a write that kept the state,
// versions unique, and each event's from, to and reason those of its write.
// Events may arrive out of version order (two goroutines publish after
// their own commits); they are compared by version. It returns one
// description per problem.
func CheckEvents(writes []Write, events []lifecycle.Event) []string {
	var problems []string
	byVersion := map[int64]lifecycle.Event{}
	for _, ev := range events {
		if prev, dup := byVersion[ev.Version]; dup {
			problems = append(problems, fmt.Sprintf("two events for version %d: %s→%s and %s→%s",
				ev.Version, prev.From, prev.To, ev.From, ev.To))
		}
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
		problems = append(problems, fmt.Sprintf("%d events for %d transitions", got, transitions))
	}
	return problems
}
