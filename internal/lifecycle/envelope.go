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
	// PauseDeadlineWhy says what set it (PauseDeadlineWhy): fixed, a
	// learned plan's reason, hold, away or lifetime; "" when not running.
	PauseDeadlineWhy string
	// PreResumeAt is when a paused session under the learned idle policy
	// is resumed before its user's predicted return; zero: none.
	PreResumeAt time.Time
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
	e.PauseDeadlineWhy = PauseDeadlineWhy(s)
	if s.State == StatePaused && s.Learned() {
		e.PreResumeAt = s.Idle.PreResumeAt
	}
	return e
}
