package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// CreateInput is a validated-at-the-edge create request (DESIGN.md
// POST /v1/sessions). Zero IdleTimeoutSeconds means the default; zero
// MaxLifetimeSeconds means no limit.
type CreateInput struct {
	Template           string
	IdleTimeoutSeconds int64
	MaxLifetimeSeconds int64
	Metadata           map[string]string
	// IdempotencyKey, when set, makes a repeated create return the first
	// result without a second sandbox.
	IdempotencyKey string
}

// Provider metadata keys Sandman sets on every sandbox it creates. Every key
// starting with MetadataPrefix is reserved: a create naming one is refused.
const (
	MetadataPrefix = "sandman_"
	// MetadataSessionID ties a sandbox back to its session.
	MetadataSessionID = "sandman_session_id"
	// MetadataDeployment names the Sandman deployment (Service.Deployment)
	// that created it, so deployments sharing one provider account never
	// reap each other's sandboxes.
	MetadataDeployment = "sandman_deployment"
)

// Create creates a session for accountID and its sandbox: the session is
// written as provisioning (with a lease) before the provider is asked, then
// moved to running with its preview URL, or to failed. It returns the session
// and whether it is an Idempotency-Key replay.
// A create that fails gives its Idempotency-Key back, so a retry with the
// same key tries again; a replay returns the session of the create that
// succeeded (or is still under way: conflict).
// Errors: invalid (bad input, unknown template), conflict (same
// Idempotency-Key still in flight, or the session was deleted meanwhile),
// unavailable (provider trouble).
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (*Session, bool, error) {
	sess, err := s.newSession(accountID, in)
	if err != nil {
		return nil, false, err
	}
	var claimKey string
	if in.IdempotencyKey != "" {
		// Length-prefixed, so no account id or key containing '#' can
		// collide with another account's.
		claimKey = fmt.Sprintf("idempotency#%d:%s#%s", len(accountID), accountID, in.IdempotencyKey)
		claimed, stored, err := s.Store.Claim(ctx, claimKey, sess.ID, s.idempotencyTTL(), s.now())
		if err != nil {
			return nil, false, fmt.Errorf("claim idempotency key: %w", err)
		}
		if !claimed {
			prior, err := s.Store.GetSession(ctx, stored)
			if IsCode(err, CodeNotFound) {
				return nil, false, &Error{Code: CodeConflict, RetryAfter: time.Second,
					Message: "a create with this Idempotency-Key is still in progress"}
			}
			if err != nil {
				return nil, false, err
			}
			if prior.AccountID != accountID { // cannot happen with the key above; never leak a session
				return nil, false, fmt.Errorf("idempotency key %q names session %s of another account", in.IdempotencyKey, prior.ID)
			}
			return prior, true, nil
		}
	}
	// release gives the Idempotency-Key back when this create fails, so a
	// retry with the same key makes a new attempt instead of replaying the
	// failure (or waiting 24 h on a session that was never written).
	release := func() {
		if claimKey == "" {
			return
		}
		wctx, cancel := settleContext(ctx)
		defer cancel()
		if err := s.Store.ReleaseClaim(wctx, claimKey, sess.ID); err != nil {
			s.log().WarnContext(ctx, "release idempotency key", "session_id", sess.ID, "err", err)
		}
	}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		release()
		return nil, false, fmt.Errorf("create session: %w", err)
	}
	s.logTransition(ctx, NewEvent(sess, ""))

	now := s.now()
	sess.RecordActivity(now, 0)
	meta := make(map[string]string, len(sess.Metadata)+2)
	for k, v := range sess.Metadata {
		meta[k] = v
	}
	meta[MetadataSessionID] = sess.ID // reserved keys last: callers cannot set them
	if s.Deployment != "" {
		meta[MetadataDeployment] = s.Deployment
	}
	pctx, cancel := context.WithTimeout(ctx, s.callTimeout())
	sb, err := s.Provider.Create(pctx, CreateRequest{
		Template:  sess.Template,
		Timeout:   s.Policy.ProviderTimeout(sess, now),
		AutoPause: true,
		Metadata:  meta,
	})
	cancel()
	// The outcome is recorded even when the caller has gone away.
	wctx, wcancel := settleContext(ctx)
	defer wcancel()
	if err != nil {
		if errors.Is(err, ErrProviderTransient) || errors.Is(err, context.DeadlineExceeded) {
			// The provider may have made the sandbox and lost the answer.
			if kerr := s.killOrphans(wctx, sess.ID); kerr != nil {
				s.log().WarnContext(ctx, "look for a sandbox the failed create may have made; the sweep reaps it later",
					"session_id", sess.ID, "err", kerr)
			}
		}
		if ferr := s.transition(wctx, sess, StateFailed, ReasonRequest, Guard{}); ferr != nil {
			s.log().ErrorContext(ctx, "mark session failed", "session_id", sess.ID, "err", ferr)
		}
		release()
		return nil, false, s.providerError(err, "create the sandbox")
	}
	sess.SandboxID, sess.PreviewURL, sess.SandboxExpiresAt = sb.ID, sb.PreviewURL, sb.ExpiresAt
	if err := s.transition(wctx, sess, StateRunning, ReasonRequest, Guard{}); err != nil {
		// The row moved under us (a delete, or a reconcile of an expired
		// lease); the store already told our own retried write apart from a
		// lost race. Do not leak the sandbox.
		s.killQuietly(wctx, sb.ID)
		release()
		if IsCode(err, CodeConflict) {
			return nil, false, &Error{Code: CodeConflict, Err: err,
				Message: "the session was deleted while its sandbox was being created; the sandbox was killed"}
		}
		return nil, false, fmt.Errorf("record running session: %w", err)
	}
	return sess, false, nil
}

func (s *Service) idempotencyTTL() time.Duration { return orDefault(s.IdempotencyTTL, 24*time.Hour) }

// newSession validates in and returns the provisioning session to write.
func (s *Service) newSession(accountID string, in CreateInput) (*Session, error) {
	if in.Template == "" {
		return nil, Errorf(CodeInvalid, "template is required")
	}
	if len(in.Template) > maxTemplateLen {
		return nil, Errorf(CodeInvalid, "template must be at most %d characters", maxTemplateLen)
	}
	if len(in.IdempotencyKey) > maxIdempotencyKey {
		return nil, Errorf(CodeInvalid, "Idempotency-Key must be at most %d characters", maxIdempotencyKey)
	}
	idle, err := s.Policy.IdleTimeout(in.IdleTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	life, err := s.Policy.MaxLifetime(in.MaxLifetimeSeconds)
	if err != nil {
		return nil, err
	}
	if err := validateMetadata(in.Metadata); err != nil {
		return nil, err
	}
	now := s.now()
	sess := &Session{
		ID: s.newID(), AccountID: accountID, Provider: s.Provider.Name(), Template: in.Template,
		Metadata: in.Metadata, State: StateProvisioning, Reason: ReasonRequest,
		IdleTimeout: idle, MaxLifetime: life, CreatedAt: now, UpdatedAt: now, StateChangedAt: now,
		LeaseExpiresAt: now.Add(s.Policy.LeaseDuration),
	}
	return sess, nil
}

func validateMetadata(m map[string]string) error {
	if len(m) > maxMetadataKeys {
		return Errorf(CodeInvalid, "metadata may hold at most %d keys", maxMetadataKeys)
	}
	for k, v := range m {
		if k == "" || len(k) > maxMetadataKeyLen {
			return Errorf(CodeInvalid, "metadata keys must be 1 to %d characters", maxMetadataKeyLen)
		}
		if strings.HasPrefix(k, MetadataPrefix) {
			return Errorf(CodeInvalid, "metadata keys starting with %q are reserved (got %q)", MetadataPrefix, k)
		}
		if len(v) > maxMetadataValueLen {
			return Errorf(CodeInvalid, "metadata value for %q must be at most %d characters", k, maxMetadataValueLen)
		}
	}
	return nil
}

// killQuietly kills a sandbox nobody will track, logging a failure.
func (s *Service) killQuietly(ctx context.Context, sandboxID string) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.callTimeout())
	defer cancel()
	if err := s.Provider.Kill(pctx, sandboxID); err != nil {
		s.log().ErrorContext(ctx, "kill untracked sandbox", "sandbox_id", sandboxID, "err", err)
	}
}
