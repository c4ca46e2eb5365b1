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
	// Readiness is set on a readiness event (IsReadiness: From == To ==
	// running, the app became ready or failed; docs/READINESS.md "Events"),
	// with ReadinessDetail saying why it failed.
	Readiness       Readiness `json:"readiness,omitempty"`
	ReadinessDetail string    `json:"readiness_detail,omitempty"`
	// Lost is set on the resuming → restoring event of a recovery (reason
	// lost): "gone", "foreign" or "partial", the checkpoint it restores
	// and that checkpoint's age, e.g. "gone checkpoint=chk_… age_seconds=3600"
	// (docs/RELIABILITY.md "Recovery").
	Lost string `json:"lost,omitempty"`
	// Checkpoint is set on a checkpoint event (IsCheckpoint: a
	// checkpoint became ready or failed, docs/CHECKPOINTS.md "Events"):
	// EventID is "<checkpoint_id>:<version>", From and To are empty and
	// Version is the checkpoint's.
	Checkpoint *CheckpointEvent `json:"checkpoint,omitempty"`

	// Provider and Since are for the publisher's usage counters (usage.go)
	// and the session's timeline, and are not part of the published event:
	// the session's provider, and when the session entered From (the
	// state_changed_at of the write before; zero when unknown, as for a
	// create). Time - Since is the event's duration.
	Provider string    `json:"-"`
	Since    time.Time `json:"-"`
	// CheckpointBytes is the session's CheckpointBytes while it was in
	// From (the write before's; 0 when unknown), for the stored
	// GB-hours of the usage counters; not published.
	CheckpointBytes int64 `json:"-"`
	// Actor is who caused the transition (Session.Actor; actor.go). It is
	// recorded with the event (the session's timeline, UsageStore) and not
	// published.
	Actor string `json:"-"`
}

// CheckpointEvent is what a checkpoint event says of its checkpoint.
type CheckpointEvent struct {
	ID        string            `json:"id"`
	State     CheckpointState   `json:"state"`
	Reason    string            `json:"reason,omitempty"` // failed: why
	Kind      CheckpointKind    `json:"kind"`
	Keeps     Keeps             `json:"keeps,omitempty"`
	Trigger   CheckpointTrigger `json:"trigger"`
	Label     string            `json:"label,omitempty"`
	SizeBytes int64             `json:"size_bytes,omitempty"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

// NewCheckpointEvent returns the event of a committed write that made c
// ready or failed (c carries its new state and version).
func NewCheckpointEvent(c *Checkpoint) Event {
	ce := &CheckpointEvent{ID: c.ID, State: c.State, Reason: c.Reason, Kind: c.Kind, Keeps: c.Keeps,
		Trigger: c.Trigger, Label: c.Label, SizeBytes: c.SizeBytes}
	if !c.ExpiresAt.IsZero() {
		at := c.ExpiresAt.UTC()
		ce.ExpiresAt = &at
	}
	return Event{EventID: EventID(c.ID, c.Version), SessionID: c.SessionID, AccountID: c.AccountID,
		SandboxID: c.SourceSandboxID, Version: c.Version, Time: c.UpdatedAt.UTC(), Checkpoint: ce}
}

// IsCheckpoint reports whether e is a checkpoint event rather than a
// session's: usage counters and a session's timeline skip it.
func (e Event) IsCheckpoint() bool { return e.Checkpoint != nil }

// DetailType returns the EventBridge detail-type: "Session " and the target
// state in title case, e.g. "Session Paused"; for a readiness event
// "Session Ready" or "Session Not Ready"; for a checkpoint event
// "Checkpoint Ready" or "Checkpoint Failed".
func (e Event) DetailType() string {
	switch {
	case e.IsCheckpoint() && e.Checkpoint.State == CheckpointReady:
		return "Checkpoint Ready"
	case e.IsCheckpoint():
		return "Checkpoint Failed"
	case e.IsReadiness() && e.Readiness == ReadinessReady:
		return "Session Ready"
	case e.IsReadiness():
		return "Session Not Ready"
	}
	s := string(e.To)
	if s == "" {
		return "Session"
	}
	return "Session " + strings.ToUpper(s[:1]) + s[1:]
}

// IsReadiness reports whether e is a readiness event rather than a state
// transition: the state stayed running and the app became ready or failed.
// Usage counters skip it (it moves no time between states).
func (e Event) IsReadiness() bool {
	return e.From == e.To && (e.Readiness == ReadinessReady || e.Readiness == ReadinessFailed)
}

// NewReadinessEvent returns the event of a committed readiness change of
// the running session s (s carries its new readiness and version).
func NewReadinessEvent(s *Session) Event {
	ev := NewEvent(s, s.State)
	ev.Readiness, ev.ReadinessDetail = s.Readiness, s.ReadinessDetail
	return ev
}

// NewEvent returns the event for a committed transition of s from from. s
// must already carry its new state and version.
func NewEvent(s *Session, from State) Event {
	ev := Event{
		EventID:   EventID(s.ID, s.Version),
		SessionID: s.ID, AccountID: s.AccountID, SandboxID: s.SandboxID,
		From: from, To: s.State, Version: s.Version, Reason: s.Reason, Time: s.UpdatedAt, Actor: s.Actor,
	}
	if s.Reason == ReasonLost {
		ev.Lost = s.Lost
	}
	return ev
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
