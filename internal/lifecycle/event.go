package lifecycle

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// EventSource is the EventBridge source of every lifecycle event.
const EventSource = "sandman"

// Event is one committed transition, published at least once (docs/DESIGN.md
// "Events out"): consumers dedupe on EventID.
type Event struct {
	// EventID is "<session_id>:<version>" (EventID), the same on every
	// redelivery of the transition.
	EventID   string    `json:"event_id"`
	SessionID string    `json:"session_id"`
	AccountID string    `json:"account_id"`
	SandboxID string    `json:"sandbox_id,omitempty"`
	From      State     `json:"from"`
	To        State     `json:"to"`
	Version   int64     `json:"version"` // the session's version after the write
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"` // when the transition was committed (UTC)

	// Provider and Since are for the publisher's usage counters (usage.go)
	// and are not part of the published event: the session's provider, and
	// when the session entered From (the state_changed_at of the write
	// before; zero when unknown, as for a create).
	Provider string    `json:"-"`
	Since    time.Time `json:"-"`
}

// DetailType returns the EventBridge detail-type, "Session " and the target
// state in title case, e.g. "Session Paused".
func (e Event) DetailType() string {
	s := string(e.To)
	if s == "" {
		return "Session"
	}
	return "Session " + strings.ToUpper(s[:1]) + s[1:]
}

// NewEvent returns the event for a committed transition of s from from. s
// must already carry its new state and version.
func NewEvent(s *Session, from State) Event {
	return Event{
		EventID:   EventID(s.ID, s.Version),
		SessionID: s.ID, AccountID: s.AccountID, SandboxID: s.SandboxID,
		From: from, To: s.State, Version: s.Version, Reason: s.Reason, Time: s.UpdatedAt,
	}
}

// EventID returns the id of the event of a session's transition to version:
// "<session_id>:<version>" (docs/DESIGN.md "Events out"). A version is written
// once, so the id names one transition and is stable across redeliveries.
func EventID(sessionID string, version int64) string {
	return sessionID + ":" + strconv.FormatInt(version, 10)
}

// Publisher sends lifecycle events out: EventBridge in AWS, a JSON-lines file
// locally. Publish sends every event or returns an error naming what was not
// sent; implementations retry transient failures themselves.
type Publisher interface {
	Publish(ctx context.Context, events ...Event) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, events ...Event) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, events ...Event) error { return f(ctx, events...) }
