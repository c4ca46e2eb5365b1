package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// An Idempotency-Key claim must always resolve: to the live
// session of the create that holds it, or, once that create is known dead,
// back to free so a retry with the same key makes a fresh attempt. The claim
// is written before the session, so a create that dies in between (a crash,
// a Lambda timeout, a store that stopped answering) leaves a claim naming a
// session that was never written, and one that dies later leaves a
// provisioning session that the sweep (or the next claimant) marks failed.
//
// A claim's value is "<session id> <claimed at, RFC 3339 UTC with
// nanoseconds>". Its holder is known dead when:
//   - its session is missing a lease (Policy.LeaseDuration) after the
//     claim: the create writes its session right after claiming, and no
//     request outlives a lease;
//   - its session is failed: the create failed (its own release was lost);
//   - its session is provisioning past its lease: the create died after
//     writing it (the session is reconciled first, as the sweep would).
//
// A claim written before this rule (a bare session id) has no claim time;
// a missing session behind it is waited out (the claim's TTL).

// idempotencyClaimKey returns the claim key of an Idempotency-Key, length
// prefixed so that no account id or key containing '#' can collide with
// another account's.
func idempotencyClaimKey(accountID, key string) string {
	return fmt.Sprintf("idempotency#%d:%s#%s", len(accountID), accountID, key)
}

// newClaimValue returns the claim value naming sessionID, claimed at now.
func newClaimValue(sessionID string, now time.Time) string {
	return sessionID + " " + now.UTC().Format(time.RFC3339Nano)
}

// parseClaimValue splits a claim value into the session id and the claim
// time (zero for a claim written without one).
func parseClaimValue(v string) (string, time.Time) {
	id, at, ok := strings.Cut(v, " ")
	if !ok {
		return v, time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return id, time.Time{}
	}
	return id, t
}

// errCreateInProgress answers a create whose Idempotency-Key is held by a
// create that may still be under way.
func errCreateInProgress() error {
	return &Error{Code: CodeConflict, RetryAfter: time.Second,
		Message: "a create with this Idempotency-Key is still in progress"}
}

// holdClaim claims key for value (see newClaimValue). It returns
// (nil, nil) when this create now holds the key, and the session of the
// create that holds it for a replay. A key held by a create known dead is
// released and claimed again. Errors: conflict (the holder may still be
// under way; Retry-After 1 s), the store's.
func (s *Service) holdClaim(ctx context.Context, accountID, key, value string, resolve claimResolver) (*Session, error) {
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		claimed, stored, err := s.cfg.Store.Claim(ctx, key, value, s.cfg.IdempotencyTTL, s.now())
		if err != nil {
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		if claimed {
			return nil, nil
		}
		prior, dead, err := resolve(ctx, accountID, stored)
		if err != nil || !dead {
			return prior, err
		}
		// Give the dead create's key back (only if it still holds it: a
		// concurrent retry may have done so and claimed it already).
		if err := s.cfg.Store.ReleaseClaim(ctx, key, stored); err != nil {
			return nil, fmt.Errorf("release the idempotency key of a dead create: %w", err)
		}
		s.log().InfoContext(ctx, "released the idempotency key of a dead create", "claim", stored)
	}
	return nil, errCreateInProgress()
}

// claimResolver looks at the request holding an Idempotency-Key (claim
// value stored): its session to replay, or dead=true when it is known dead
// (resolveClaim for a create, resolveForkClaim for a fork).
type claimResolver func(ctx context.Context, accountID, stored string) (*Session, bool, error)

// resolveClaim looks at the create holding an Idempotency-Key (claim value
// stored): it returns that create's session to replay, or dead=true when the
// create is known dead. Errors: conflict (it may still be under way), the
// store's.
func (s *Service) resolveClaim(ctx context.Context, accountID, stored string) (*Session, bool, error) {
	id, claimedAt := parseClaimValue(stored)
	now := s.now()
	sess, err := s.cfg.Store.GetSession(ctx, id)
	switch {
	case IsCode(err, CodeNotFound):
		if !claimedAt.IsZero() && !now.Before(claimedAt.Add(s.cfg.Policy.LeaseDuration)) {
			return nil, true, nil
		}
		return nil, false, errCreateInProgress()
	case err != nil:
		return nil, false, err
	case sess.AccountID != accountID: // cannot happen with the key above; never leak a session
		return nil, false, fmt.Errorf("idempotency claim %q names session %s of another account", stored, sess.ID)
	}
	if sess.State == StateProvisioning && !now.Before(sess.LeaseExpiresAt) {
		// The create died after writing its session: settle it now, as the
		// sweep would, instead of making the caller wait for the sweep.
		if _, err := s.Reconcile(ctx, sess); err != nil && !IsCode(err, CodeConflict) {
			return nil, false, err
		}
		if sess, err = s.cfg.Store.GetSession(ctx, id); err != nil {
			return nil, false, err
		}
	}
	switch sess.State {
	case StateFailed:
		return nil, true, nil
	case StateProvisioning:
		return nil, false, errCreateInProgress()
	}
	return sess, false, nil
}
