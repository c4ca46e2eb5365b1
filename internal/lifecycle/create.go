package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CreateInput is a validated-at-the-edge create request (docs/DESIGN.md
// POST /v1/sessions). Zero IdleTimeoutSeconds means the default; zero
// MaxLifetimeSeconds means no limit.
type CreateInput struct {
	Template           string
	IdleTimeoutSeconds int64
	MaxLifetimeSeconds int64
	Metadata           map[string]string
	// Provider names the provider to create the sandbox on (one of
	// Service.ProviderNames); "" means the default. The session keeps it
	// for life.
	Provider string
	// AwayTimeoutSeconds: nil for DefaultAwayTimeout, 0 for presence off,
	// else 1..MaxAwayTimeout in seconds (docs/DESIGN.md "Client channel").
	AwayTimeoutSeconds *int64
	// ResumeOnReturn: nil for on exactly when presence is on (away timeout
	// > 0); see ResumeOnReturnDefault and docs/WAKE.md "Resume on return".
	ResumeOnReturn *bool
	// App is the session's app spec as given (nil: none, or the
	// template's default from Config.TemplateApps).
	App *AppInput
	// Checkpoints are the session's automatic checkpoint options.
	Checkpoints CheckpointOptions
	// IdlePolicy is the session's idle policy (idle_policy): "" for the
	// deployment's (Config.IdlePolicy), fixed or learned.
	IdlePolicy IdlePolicy
	// OnLost is what a resume that finds the sandbox lost does ("" for
	// the default, OnLostRestore; docs/RELIABILITY.md "Recovery").
	OnLost OnLost
	// Tiers are the session's retention tiers (archive_after_seconds,
	// delete_after_seconds; tiers.go): nil fields take the deployment's
	// (Config.Tiers), then the provider's default.
	Tiers Tiers
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
// moved to running with its preview URL, or to failed. A create whose
// provider, template and app spec match a warm pool with a ready spare
// takes the spare instead (createFromPool, docs/POOLS.md) and resumes it. It returns the session
// and whether it is an Idempotency-Key replay.
// A create that fails gives its Idempotency-Key back, so a retry with the
// same key tries again; a replay returns the session of the create that
// succeeded (or is still under way: conflict), and a key held by a create
// known dead is given back (see claim.go).
// Errors: invalid (bad input, unknown template, a provider this service
// does not hold), quota_exceeded (the account is at Config.MaxRunning or
// the key's override, WithMaxRunning;
// nothing was asked of the provider), conflict (same
// Idempotency-Key still in flight, or the session was deleted meanwhile),
// unavailable (provider trouble).
func (s *Service) Create(ctx context.Context, accountID string, in CreateInput) (*Session, bool, error) {
	sess, err := s.newSession(ctx, accountID, in)
	if err != nil {
		return nil, false, err
	}
	if sess.Learned() {
		s.startLearning(ctx, sess)
	}
	sess.RunningLimit = s.maxRunning(ctx) // the key's override, if any (quota.go)
	sess.Actor = ActorOf(ctx)
	if err := s.checkTemplate(ctx, sess); err != nil {
		return nil, false, err
	}
	prior, release, err := s.claimIdempotencyKey(ctx, accountID, in.IdempotencyKey, sess.ID)
	if err != nil || prior != nil {
		return prior, prior != nil, err
	}
	if handled, err := s.createFromPool(ctx, sess, release); handled {
		if err != nil {
			return nil, false, err
		}
		return sess, false, nil
	}
	if err := s.createSandbox(ctx, sess, release); err != nil {
		return nil, false, err
	}
	return sess, false, nil
}

// claimIdempotencyKey claims key (when set) for accountID's new session
// sessionID. It returns the session of an earlier create that claimed the
// key (a replay), or else a release func that gives the key back when this
// create fails, so a retry with the same key makes a new attempt instead of
// replaying the failure (or waiting IdempotencyTTL on a session that was
// never written). release is never nil and does nothing without a key.
// Errors: conflict (the earlier create is still under way), the store's.
func (s *Service) claimIdempotencyKey(ctx context.Context, accountID, key, sessionID string) (*Session, func(), error) {
	if key == "" {
		return nil, func() {}, nil
	}
	return s.claimSessionKey(ctx, accountID, idempotencyClaimKey(accountID, key), sessionID, s.resolveClaim)
}

// claimSessionKey claims claimKey for the new session sessionID (holdClaim
// with resolve): the earlier request's session to replay, or a release
// func giving the key back.
func (s *Service) claimSessionKey(ctx context.Context, accountID, claimKey, sessionID string, resolve claimResolver) (*Session, func(), error) {
	claimValue := newClaimValue(sessionID, s.now())
	prior, err := s.holdClaim(ctx, accountID, claimKey, claimValue, resolve)
	if err != nil || prior != nil {
		return prior, nil, err
	}
	return nil, func() { s.releaseClaim(ctx, claimKey, claimValue) }, nil
}

// createSandbox writes sess (provisioning), asks the provider for its
// sandbox and records the outcome: running, or failed (provisionSandbox).
// release runs when the create fails.
func (s *Service) createSandbox(ctx context.Context, sess *Session, release func()) error {
	if err := s.cfg.Store.CreateSession(ctx, sess); err != nil {
		release()
		return fmt.Errorf("create session: %w", err)
	}
	s.logTransition(ctx, NewEvent(sess, ""))
	return s.provisionSandbox(ctx, sess, release)
}

// provisionSandbox is the provider step of a cold create for sess, a
// provisioning session already stored (by createSandbox, or by a claim whose
// spare turned out gone: claimFallBack): it asks the provider for a sandbox
// tagged with the session and records the outcome, running with the
// sandbox's preview, or failed (release runs). A transient failure first
// kills any sandbox the provider may have made and lost the answer for.
func (s *Service) provisionSandbox(ctx context.Context, sess *Session, release func()) error {
	now := s.now()
	sess.MarkActivity(now, s.cfg.Policy.ActivityGranularity)
	provider := s.provider(sess)
	req := CreateRequest{
		Template:  sess.Template,
		Timeout:   s.cfg.Policy.ProviderTimeout(sess, now),
		AutoPause: true,
		Metadata:  s.sandboxMetadata(sess),
	}
	return settle(ctx, s.cfg.CallTimeout, func(pctx context.Context) (Sandbox, error) {
		return provider.Create(pctx, req)
	}, func(wctx context.Context, sb Sandbox, err error) error {
		if err != nil {
			if errors.Is(err, ErrProviderTransient) || errors.Is(err, context.DeadlineExceeded) {
				// The provider may have made the sandbox and lost the answer.
				if kerr := s.killOrphans(wctx, sess); kerr != nil {
					s.log().WarnContext(ctx, "look for a sandbox the failed create may have made; the sweep reaps it later",
						"session_id", sess.ID, "err", kerr)
				}
			}
			if ferr := s.transition(wctx, sess, StateFailed, ReasonRequest, Guard{}); ferr != nil {
				s.log().ErrorContext(ctx, "mark session failed", "session_id", sess.ID, "err", ferr)
			}
			release()
			return s.providerError(err, "create the sandbox")
		}
		s.writeMarker(wctx, sess, sb.ID, "")
		sess.SandboxID, sess.PreviewURL, sess.SandboxExpiresAt = sb.ID, sb.PreviewURL, sb.ExpiresAt
		sess.PreviewURL = s.appPreviewURL(wctx, sess, sb.PreviewURL)
		if err := s.transition(wctx, sess, StateRunning, ReasonRequest, Guard{}); err != nil {
			if !IsCode(err, CodeConflict) {
				return s.runningWriteUnknown(wctx, sess, sb.ID, err, release)
			}
			// The row moved under us (a delete, or a reconcile of an expired
			// lease); the store already told our own retried write apart
			// from a lost race. Do not leak the sandbox.
			s.killQuietly(wctx, sess, sb.ID)
			release()
			if IsCode(err, CodeConflict) {
				return &Error{Code: CodeConflict, Err: err,
					Message: "the session was deleted while its sandbox was being created; the sandbox was killed"}
			}
			return fmt.Errorf("record running session: %w", err)
		}
		return nil
	})
}

// runningWriteUnknown settles a create whose write of running failed with
// something other than a conflict (werr: a timeout, a stalled table): the
// write may have committed, so it is not a conflict and nothing is killed
// before a re-read says so. It re-reads the session:
//   - running with the new sandbox: the write committed; the create
//     succeeded (sess is updated to what is stored);
//   - final (a delete or a reconcile won): the sandbox is nobody's; it is
//     killed and the create answers conflict, as for a lost race;
//   - still provisioning, or unreadable: the outcome stays unknown. The
//     session is left to its lease and the sweep (Reconcile marks it failed
//     by a conditional write before killing anything, so a write of running
//     that lands late wins and keeps its sandbox), the Idempotency-Key stays
//     claimed so that a retry with it replays whatever the lease settles,
//     and the create answers unavailable with a retry-after.
func (s *Service) runningWriteUnknown(ctx context.Context, sess *Session, sandboxID string, werr error, release func()) error {
	cur, err := s.cfg.Store.GetSession(ctx, sess.ID)
	switch {
	case err == nil && cur.State == StateRunning && cur.SandboxID == sandboxID:
		*sess = *cur
		s.logTransition(ctx, NewEvent(sess, StateProvisioning))
		s.countTransition(StateProvisioning, sess)
		s.armIfSoon(ctx, sess)
		return nil
	case err == nil && cur.State.Final():
		s.killQuietly(ctx, sess, sandboxID)
		release()
		return &Error{Code: CodeConflict, Err: werr,
			Message: "the session was deleted while its sandbox was being created; the sandbox was killed"}
	}
	s.log().WarnContext(ctx, "create: the write of running has an unknown outcome; the lease settles it",
		"session_id", sess.ID, "sandbox_id", sandboxID, "err", werr, "reread_err", err)
	return &Error{Code: CodeUnavailable, RetryAfter: s.cfg.RetryAfter, Err: werr,
		Message: "the session store did not confirm the new session; retry with the same Idempotency-Key, which answers the session once it is settled"}
}

// newSession validates in and returns the provisioning session to write;
// its tiers resolve with the account's settings on ctx (WithAccountTiers).
func (s *Service) newSession(ctx context.Context, accountID string, in CreateInput) (*Session, error) {
	if in.Template == "" {
		return nil, Errorf(CodeInvalid, "template is required")
	}
	if utf8.RuneCountInString(in.Template) > maxTemplateLen {
		return nil, Errorf(CodeInvalid, "template must be at most %d characters", maxTemplateLen)
	}
	if len(in.IdempotencyKey) > maxIdempotencyKey {
		return nil, Errorf(CodeInvalid, "Idempotency-Key must be at most %d characters", maxIdempotencyKey)
	}
	idle, err := s.cfg.Policy.IdleTimeout(in.IdleTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	life, err := s.cfg.Policy.MaxLifetime(in.MaxLifetimeSeconds)
	if err != nil {
		return nil, err
	}
	if err := validateMetadata(in.Metadata); err != nil {
		return nil, err
	}
	provider, err := s.chooseProvider(in.Provider)
	if err != nil {
		return nil, err
	}
	away, err := AwayTimeout(in.AwayTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	app, err := ResolveApp(s.cfg.TemplateApps[in.Template], in.App)
	if err != nil {
		return nil, err
	}
	idlePolicy, err := s.idlePolicy(in.IdlePolicy)
	if err != nil {
		return nil, err
	}
	onLost, err := ParseOnLost(string(in.OnLost))
	if err != nil {
		return nil, err
	}
	now := s.now()
	sess := &Session{
		ID: s.cfg.NewID(), AccountID: accountID, Provider: provider, Template: in.Template,
		Metadata: in.Metadata, State: StateProvisioning, Reason: ReasonRequest,
		IdleTimeout: idle, MaxLifetime: life, AwayTimeout: away,
		ResumeOnReturn: ResumeOnReturnDefault(in.ResumeOnReturn, away), CreatedAt: now, UpdatedAt: now, StateChangedAt: now,
		LeaseExpiresAt: now.Add(s.cfg.Policy.LeaseDuration),
		RunningLimit:   s.cfg.MaxRunning,
		App:            app, OnLost: onLost,
	}
	if err := s.applyCheckpointOptions(sess, in.Checkpoints); err != nil {
		return nil, err
	}
	if err := ValidTiers(in.Tiers); err != nil {
		return nil, err
	}
	sess.ArchiveAfter, sess.DeleteAfter = resolveTiers(DefaultArchiveAfter(s.cfg.PausedRetention[provider]), in.Tiers,
		accountTiers(ctx), s.cfg.Tiers)
	if idlePolicy == IdlePolicyLearned {
		sess.Idle = &IdleState{Policy: IdlePolicyLearned} // planned by Create (startLearning)
	}
	return sess, nil
}

// validateMetadata checks a create's metadata: at most maxMetadataKeys
// keys; keys of 1..maxMetadataKeyLen and values of at most
// maxMetadataValueLen characters (Unicode code points), valid UTF-8; no key
// starting with MetadataPrefix in any letter case (Unicode case folding: hasReservedPrefix).
func validateMetadata(m map[string]string) error {
	if len(m) > maxMetadataKeys {
		return Errorf(CodeInvalid, "metadata may hold at most %d keys", maxMetadataKeys)
	}
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return Errorf(CodeInvalid, "metadata keys and values must be valid UTF-8")
		}
		if n := utf8.RuneCountInString(k); n == 0 || n > maxMetadataKeyLen {
			return Errorf(CodeInvalid, "metadata keys must be 1 to %d characters", maxMetadataKeyLen)
		}
		if hasReservedPrefix(k) {
			return Errorf(CodeInvalid, "metadata keys starting with %q (in any case) are reserved (got %q)", MetadataPrefix, k)
		}
		if utf8.RuneCountInString(v) > maxMetadataValueLen {
			return Errorf(CodeInvalid, "metadata value for %q must be at most %d characters", k, maxMetadataValueLen)
		}
	}
	return nil
}

// hasReservedPrefix reports whether key starts with MetadataPrefix under
// Unicode case folding (strings.EqualFold), not only ASCII or ToLower case:
// "ſandman_x" (U+017F folds to "s") and "SANDMAN_x" are reserved too, since
// a provider or a reader that folds case would take them for ours.
func hasReservedPrefix(key string) bool {
	rest := key
	for range utf8.RuneCountInString(MetadataPrefix) {
		_, size := utf8.DecodeRuneInString(rest)
		if size == 0 {
			return false // shorter than the prefix
		}
		rest = rest[size:]
	}
	return strings.EqualFold(key[:len(key)-len(rest)], MetadataPrefix)
}

// killQuietly kills sess's sandbox sandboxID that nobody will track,
// logging a failure.
func (s *Service) killQuietly(ctx context.Context, sess *Session, sandboxID string) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if err := s.provider(sess).Kill(pctx, sandboxID); err != nil {
		s.log().ErrorContext(ctx, "kill untracked sandbox", "sandbox_id", sandboxID, "err", err)
	}
}
