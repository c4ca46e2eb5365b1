package lifecycle

import "time"

// Envelope is the lifecycle envelope of docs/DESIGN.md, returned by status and
// reconnect. Times are RFC 3339 UTC strings when encoded; a zero time encodes
// as null (see internal/apigw).
type Envelope struct {
	ServerTime     time.Time // the server's clock when the envelope was built
	State          State
	LastActivityAt time.Time
	// PauseDeadline is when the session is due to be paused if nothing
	// happens: Session.PauseDeadline while running, zero otherwise.
	PauseDeadline time.Time
	// SandboxExpiresAt is the provider-side timeout as last known.
	SandboxExpiresAt time.Time
}

// NewEnvelope builds the envelope for s at now.
func NewEnvelope(s *Session, now time.Time) Envelope {
	e := Envelope{
		ServerTime:       now,
		State:            s.State,
		LastActivityAt:   s.LastActivityAt,
		SandboxExpiresAt: s.SandboxExpiresAt,
	}
	if s.State == StateRunning {
		e.PauseDeadline = s.PauseDeadline()
	}
	return e
}
