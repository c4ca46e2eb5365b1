package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Service is Sandman's lifecycle logic: every API operation, the pause the
// sweep uses, and the webhook rules. It talks to the world only through
// Store and Provider, so it runs the same in Lambda, in the local stack and
// in tests. Every state change is a conditional write through
// Store.UpdateSession; the committed session item is the record of the
// transition, and the table's stream publishes its Event (internal/outbox,
// DESIGN.md "Events out"), never the request.
type Service struct {
	Store    Store
	Provider Provider
	Clock    Clock
	Policy   Policy
	Log      *slog.Logger

	// CallTimeout bounds each provider call (default 30 s).
	CallTimeout time.Duration
	// ProbeTimeout bounds reconnect's live probe (default 15 s).
	ProbeTimeout time.Duration
	// ResumeAttempts is how many times resume asks the provider (default 2),
	// waiting ResumeBackoff (default 1 s, doubled each time) in between.
	ResumeAttempts int
	ResumeBackoff  time.Duration
	// Deployment names this Sandman deployment (default: none). It is set as
	// provider metadata (MetadataDeployment) on every sandbox created, and
	// the sweep only lists and reaps sandboxes that carry it, so deployments
	// sharing one provider account leave each other's sandboxes alone.
	Deployment string
	// ConfirmGoneDelay is how long to wait before asking the provider a
	// second time about a sandbox it reported gone (default 2 s).
	ConfirmGoneDelay time.Duration
	// RetryAfter is sent with 503s when the provider gave no hint (default 5 s).
	RetryAfter time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24 h).
	IdempotencyTTL time.Duration
	// WebhookDedupeTTL is how long a webhook event id is remembered (default 7 days).
	WebhookDedupeTTL time.Duration
	// Sleep waits d or until ctx ends; tests replace it (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// NewID returns a new session id (default: "ses_" + 26 random base32 characters).
	NewID func() string
}

// maxConflictRetries bounds how often an operation re-reads a session after
// losing a race before it reports the conflict.
const maxConflictRetries = 3

// Metadata limits (ours): enough for labels, small enough for an item.
const (
	maxMetadataKeys     = 32
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
	maxTemplateLen      = 128
	maxIdempotencyKey   = 255
)

// NewService returns a Service with the defaults above filled in. Store,
// Provider and Clock are required; log may be nil.
func NewService(store Store, provider Provider, clock Clock, policy Policy, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{Store: store, Provider: provider, Clock: clock, Policy: policy, Log: log}
}

func (s *Service) callTimeout() time.Duration  { return orDefault(s.CallTimeout, 30*time.Second) }
func (s *Service) probeTimeout() time.Duration { return orDefault(s.ProbeTimeout, 15*time.Second) }
func (s *Service) retryAfter() time.Duration   { return orDefault(s.RetryAfter, 5*time.Second) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Service) now() time.Time { return s.Clock.Now().UTC() }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

func (s *Service) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

func (s *Service) newID() string {
	if s.NewID != nil {
		return s.NewID()
	}
	return NewSessionID()
}

// NewSessionID returns "ses_" followed by 26 lowercase base32 characters
// (128 random bits).
func NewSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return "ses_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// commit writes sess, conditional on it still having state from and its
// current version, and logs the transition when the state changed. It
// publishes nothing: the committed item is the outbox record.
func (s *Service) commit(ctx context.Context, sess *Session, from State, guard Guard) error {
	if err := s.Store.UpdateSession(ctx, sess, from, guard); err != nil {
		return err
	}
	if sess.State != from {
		s.logTransition(ctx, NewEvent(sess, from))
	}
	return nil
}

// logTransition logs a committed transition; its event is published by the
// table's stream consumer (internal/outbox), with the same event_id.
func (s *Service) logTransition(ctx context.Context, ev Event) {
	s.log().InfoContext(ctx, "session transition", "session_id", ev.SessionID, "account_id", ev.AccountID,
		"from", ev.From, "to", ev.To, "version", ev.Version, "reason", ev.Reason, "event_id", ev.EventID)
}

// transition moves sess to state to for reason and commits it.
func (s *Service) transition(ctx context.Context, sess *Session, to State, reason string, guard Guard) error {
	from := sess.State
	if err := sess.Transition(to, reason, s.now(), s.Policy); err != nil {
		return err
	}
	return s.commit(ctx, sess, from, guard)
}

// Transition moves sess to state to for reason with a conditional write. It is the building block the sweep uses.
// Errors: conflict (refused by the table or a lost race), not_found.
func (s *Service) Transition(ctx context.Context, sess *Session, to State, reason string, guard Guard) error {
	return s.transition(ctx, sess, to, reason, guard)
}

// owned reads a session and checks that account owns it.
// Errors: not_found, forbidden.
func (s *Service) owned(ctx context.Context, accountID, id string) (*Session, error) {
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if sess.AccountID != accountID {
		return nil, Errorf(CodeForbidden, "session %s belongs to another account", id)
	}
	return sess, nil
}

// retryConflicts runs op on a fresh read of the session until it succeeds,
// fails with anything but a conflict, or has lost maxConflictRetries races.
func (s *Service) retryConflicts(ctx context.Context, accountID, id string, op func(*Session) error) (*Session, error) {
	var err error
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		var sess *Session
		if sess, err = s.owned(ctx, accountID, id); err != nil {
			return nil, err
		}
		if err = op(sess); err == nil || !IsLostRace(err) {
			return sess, err
		}
	}
	return nil, err
}

// errLostRace marks a conflict from the store, as opposed to a conflict the
// rules decided on; only the former is worth a re-read.
type errLostRace struct{ err error }

func (e errLostRace) Error() string { return e.err.Error() }
func (e errLostRace) Unwrap() error { return e.err }

// IsLostRace reports whether err is a conditional write that lost a race
// (another writer changed the session first), as opposed to a conflict the
// rules or the provider decided on. Only a lost race is worth a re-read.
func IsLostRace(err error) bool {
	var lr errLostRace
	return errors.As(err, &lr)
}

// raced wraps a store conflict so retryConflicts re-reads.
func raced(err error) error {
	if IsCode(err, CodeConflict) {
		return errLostRace{err}
	}
	return err
}

// providerError turns a provider failure into the API's error.
func (s *Service) providerError(err error, what string) error {
	switch {
	case errors.Is(err, ErrSandboxGone):
		return &Error{Code: CodeUnavailable, Type: TypeSandboxExpired,
			Message: "the sandbox is gone; the session is now expired", Err: err}
	case errors.Is(err, ErrProviderTransient), errors.Is(err, context.DeadlineExceeded):
		ra := RetryAfter(err)
		if ra <= 0 {
			ra = s.retryAfter()
		}
		return &Error{Code: CodeUnavailable, Type: TypeSandboxUnreachable, RetryAfter: ra,
			Message: fmt.Sprintf("the sandbox provider did not answer while trying to %s; retry later", what), Err: err}
	case errors.Is(err, ErrSandboxConflict):
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("the provider cannot %s this sandbox right now", what), Err: err}
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
