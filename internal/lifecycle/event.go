package lifecycle

import (
	"context"
	"strings"
	"time"
)

// EventSource is the EventBridge source of every lifecycle event.
const EventSource = "sandman"

// Event is one committed transition, published once (DESIGN.md "Events out").
type Event struct {
	SessionID string    `json:"session_id"`
	AccountID string    `json:"account_id"`
	SandboxID string    `json:"sandbox_id,omitempty"`
	From      State     `json:"from"`
	To        State     `json:"to"`
	Version   int64     `json:"version"` // the session's version after the write
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"` // when the transition was committed (UTC)
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
		SessionID: s.ID, AccountID: s.AccountID, SandboxID: s.SandboxID,
		From: from, To: s.State, Version: s.Version, Reason: s.Reason, Time: s.UpdatedAt,
	}
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
