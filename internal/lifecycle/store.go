package lifecycle

import (
	"context"
	"strconv"
	"time"
)

// Store persists sessions, API keys and claims (DynamoDB in production and
// tests, see internal/dynamo). Every session write is conditional; a lost
// race is a CodeConflict error and writes nothing.
type Store interface {
	// CreateSession writes a new session and sets s.Version to 1, taking a
	// running slot of its account when its state holds one (quota.go).
	// Errors: conflict when the id exists, quota_exceeded when
	// s.RunningLimit > 0 and the account already holds that many slots.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession reads one session. Errors: not_found.
	GetSession(ctx context.Context, id string) (*Session, error)
	// ListSessions returns an account's sessions newest first, at most limit
	// (1..100), continuing after cursor ("" for the first page).
	// Errors: invalid for a cursor this store did not issue.
	ListSessions(ctx context.Context, accountID, cursor string, limit int) (SessionPage, error)
	// FindBySandbox returns the session that holds a provider's sandbox id.
	// Errors: not_found.
	FindBySandbox(ctx context.Context, provider, sandboxID string) (*Session, error)
	// UpdateSession writes s only if the stored session still has state from
	// and version s.Version and, when guard.DueBy is set, a pause deadline at
	// or before it. When s.State != from the transition table must allow it.
	// The idle deadline may never move backwards. On success s.Version is
	// incremented. Errors: conflict (lost race, refused transition, deadline
	// moved), not_found, quota_exceeded (the write takes a running slot,
	// s.RunningLimit > 0 and the account already holds that many). The
	// account's slot counter moves in the same atomic write (quota.go).
	UpdateSession(ctx context.Context, s *Session, from State, guard Guard) error
	// FindDue returns sessions of one due index whose due time is at or
	// before q.Before, across every shard, one page at a time.
	// Errors: invalid for a foreign cursor.
	FindDue(ctx context.Context, q DueQuery) (SessionPage, error)

	// Claim records key with value if no unexpired record of key exists, and
	// expires it after ttl. It returns claimed=false and the stored value when
	// one exists: used for webhook dedupe and Idempotency-Key replays.
	Claim(ctx context.Context, key, value string, ttl time.Duration, now time.Time) (claimed bool, stored string, err error)
	// ReleaseClaim deletes key's claim if it still holds value, so the key
	// can be claimed again (an Idempotency-Key whose create failed). A claim
	// that is gone or holds another value is left alone without an error.
	ReleaseClaim(ctx context.Context, key, value string) error

	// PutAPIKey stores an API key by the SHA-256 hash of its secret.
	// Errors: conflict when the hash exists.
	PutAPIKey(ctx context.Context, k APIKey) error
	// GetAPIKey looks an API key up by hash. Errors: not_found.
	GetAPIKey(ctx context.Context, hash string) (APIKey, error)
}

// Guard adds conditions to UpdateSession.
type Guard struct {
	// DueBy, when set, requires the stored pause deadline to be at or before
	// it: the sweep's re-check, so a heartbeat landing mid-sweep wins.
	DueBy time.Time
}

// DueIndex names a sparse index of sessions that the sweep must look at when
// their due time passes.
type DueIndex string

// The due indexes.
const (
	// IndexIdle holds only running sessions, due at their PauseDeadline.
	IndexIdle DueIndex = "idle"
	// IndexLease holds transitional sessions, due at LeaseExpiresAt, and
	// running sessions whose app is starting, due ReadinessRequeueAfter
	// after they became running (Session.LeaseDue).
	IndexLease DueIndex = "lease"
	// IndexPaused holds the paused sessions that have no tier deadline,
	// due at PausedAt (dormancy; Session.DormantDue).
	IndexPaused DueIndex = "paused"
	// IndexTier holds paused, archived and deleted sessions with a tier
	// transition due (Session.NextTier), at its time: the retention
	// tiers (tiers.go). The DynamoDB store keeps it in the same table
	// index as IndexPaused (internal/dynamo/due.go).
	IndexTier DueIndex = "tier"
)

// DueQuery asks FindDue for one page.
type DueQuery struct {
	Index  DueIndex
	Before time.Time // inclusive
	Limit  int       // page size, 1..1000
	Cursor string    // "" for the first page
}

// SessionPage is one page of sessions; Cursor is "" on the last page.
type SessionPage struct {
	Sessions []*Session
	Cursor   string
}

// APIKey maps the SHA-256 hash of a key's secret to an account. The secret
// itself is never stored.
type APIKey struct {
	Hash      string // lowercase hex SHA-256 of the secret
	AccountID string
	CreatedAt time.Time
	// MaxRunning, when positive, overrides Config.MaxRunning for the
	// creates and resumes made with this key (WithMaxRunning; quota.go);
	// 0 keeps the deployment's limit.
	MaxRunning int
	// Tiers are the account's retention tiers as this key sets them
	// (WithAccountTiers; tiers.go "Per-account tiers"): a nil field is
	// "not set" (the deployment's applies), zero is "never". Stores
	// refuse what ValidTiers refuses.
	Tiers Tiers
}

// ValidAPIKey checks what every Store needs to write k: its hash and
// account, a max_running that is not negative, tiers ValidTiers accepts.
// Errors: invalid naming what is wrong.
func ValidAPIKey(k APIKey) error {
	switch {
	case k.Hash == "" || k.AccountID == "":
		return Errorf(CodeInvalid, "api key needs a hash and an account id")
	case k.MaxRunning < 0:
		return Errorf(CodeInvalid, "api key max_running must not be negative")
	}
	return ValidTiers(k.Tiers)
}

// ValidStoredSession checks what every Store needs to write s: a session
// with an id, an account and a known state.
// Errors: invalid naming what is missing.
func ValidStoredSession(s *Session) error {
	switch {
	case s == nil:
		return Errorf(CodeInvalid, "session is required")
	case s.ID == "":
		return Errorf(CodeInvalid, "session id is required")
	case s.AccountID == "":
		return Errorf(CodeInvalid, "session %s has no account id", s.ID)
	case !s.State.Valid():
		return Errorf(CodeInvalid, "session %s has unknown state %s", s.ID, strconv.Quote(string(s.State)))
	}
	return nil
}
