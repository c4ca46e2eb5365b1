package api

// SessionEvent is one entry of a session's timeline (GET
// /v1/sessions/{id}/events; docs/API.md "The timeline"): a committed
// transition, or a readiness change of a running session, as the stream
// publisher recorded it.
type SessionEvent struct {
	EventID string `json:"event_id"` // "<session_id>:<version>", as on the event bus
	Time    string `json:"time"`     // when it was committed
	From    string `json:"from"`     // the state before; "" for the create
	To      string `json:"to"`
	Reason  string `json:"reason"`
	// Actor is who caused it: api, client, provider, sweep, timer or
	// sandman (lifecycle's actor.go); null for an event recorded before
	// actors were.
	Actor   *string `json:"actor"`
	Version int64   `json:"version"`
	// DurationMS is how long the session was in From before this event,
	// in milliseconds (for a readiness event: since it became running);
	// null for the create.
	DurationMS *int64 `json:"duration_ms"`
	// Readiness is "ready" or "failed" on a readiness event (From == To ==
	// running), with ReadinessDetail saying why it failed; null otherwise.
	Readiness       *string `json:"readiness"`
	ReadinessDetail *string `json:"readiness_detail"`
}

// SessionEventList is one page of a session's timeline, newest first.
type SessionEventList struct {
	Events     []SessionEvent `json:"events"`
	NextCursor *string        `json:"next_cursor"`
}
