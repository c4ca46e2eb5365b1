package lifecycle

import (
	"context"
	"errors"
	"math/rand/v2"
)

// maxClaimTries bounds how many ready spares one create tries to claim
// before it gives up on the pool and creates cold: each try that loses is a
// spare another create took a moment before.
const maxClaimTries = 3

// createFromPool tries to give the new session sess a spare of its pool
// (docs/POOLS.md "Claim on create"). It returns handled=false when the
// create must go cold: no pool matches, the pool has no ready spare, every
// spare tried was taken by a concurrent create, or the pool could not be
// read. Otherwise the claim committed (or failed for a reason a cold create
// would share, such as the quota) and err is the create's outcome.
//
// The claim is one atomic write (PoolStore.ClaimSpare): the spare becomes a
// claimed marker and the session is created as provisioning with the
// spare's sandbox, taking its running slot. A crash after it leaves a
// provisioning session holding the sandbox, which Reconcile completes (the
// sweep at its lease's end, or the next create with the same
// Idempotency-Key); a crash before it leaves the spare as it was. The
// sandbox is then resumed (a running spare's timeout is extended the same
// way) and the session becomes running, its readiness starting as after
// any resume.
func (s *Service) createFromPool(ctx context.Context, sess *Session, release func()) (handled bool, err error) {
	pool, ok := s.poolFor(sess)
	ps := s.poolStore()
	if !ok || ps == nil {
		return false, nil
	}
	spares, err := ps.ListSpares(ctx, pool.ID)
	if err != nil {
		s.log().WarnContext(ctx, "read the pool's spares; creating cold", "pool_id", pool.ID, "err", err)
		return false, nil
	}
	var ready []*Spare
	for _, sp := range spares {
		if sp.Status == SpareReady {
			ready = append(ready, sp)
		}
	}
	// Concurrent creates start from different spares, so most win at once.
	rand.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
	counts := PoolCounts{}
	// count records the claims, hit or miss before the resume, so a create
	// that dies after its claim is still counted.
	count := func() {
		if cerr := ps.CountPool(context.WithoutCancel(ctx), pool.ID, counts); cerr != nil {
			s.log().WarnContext(ctx, "count the pool's claims", "pool_id", pool.ID, "err", cerr)
		}
	}
	for _, sp := range ready[:min(len(ready), maxClaimTries)] {
		sess.SandboxID, sess.FromPool, sess.PoolID = sp.SandboxID, true, pool.ID
		counts.Claims++
		err := ps.ClaimSpare(ctx, sp, sess)
		if err != nil && !IsCode(err, CodeConflict) && !IsCode(err, CodeQuotaExceeded) {
			// A store that did not answer may have committed the claim:
			// the session tells.
			if cur, gerr := s.cfg.Store.GetSession(ctx, sess.ID); gerr == nil && cur.SandboxID == sp.SandboxID {
				*sess = *cur
				err = nil
			}
		}
		if err == nil {
			counts.Hits++
			use := spareCounts(sp, pool.Tier, sess.CreatedAt)
			counts.RunningMS, counts.PausedMS = use.RunningMS, use.PausedMS
			count()
			s.logTransition(ctx, NewEvent(sess, ""))
			s.log().InfoContext(ctx, "session took a pool spare", "session_id", sess.ID, "pool_id", pool.ID, "sandbox_id", sp.SandboxID)
			s.kickRefill()
			return true, s.completeClaim(ctx, sess, release)
		}
		sess.SandboxID, sess.FromPool, sess.PoolID = "", false, ""
		if IsCode(err, CodeConflict) {
			continue // another create took it first
		}
		count()
		release()
		return true, err // quota_exceeded, or the store's trouble
	}
	counts.Misses++
	count()
	return false, nil
}

// completeClaim resumes the sandbox of sess, a provisioning session that
// claimed a spare, and records it running with a fresh preview URL, its
// provider timeout set beyond the pause deadline as for any resume
// (docs/DESIGN.md "Belt and braces"). The sandbox gone: the session fails
// and release gives its Idempotency-Key back. Any other failure leaves the
// session provisioning under its lease, for Reconcile to complete, and
// answers unavailable.
func (s *Service) completeClaim(ctx context.Context, sess *Session, release func()) error {
	sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	sandboxID := sess.SandboxID
	return settle(ctx, 0, func(ctx context.Context) (Sandbox, error) {
		return s.resumeWithRetry(ctx, sess)
	}, func(wctx context.Context, sb Sandbox, err error) error {
		if err != nil {
			if errors.Is(err, ErrSandboxGone) {
				if ferr := s.transition(wctx, sess, StateFailed, ReasonRequest, Guard{}); ferr != nil {
					s.log().ErrorContext(ctx, "mark the session of a lost spare failed", "session_id", sess.ID, "err", ferr)
				}
				release()
			} else {
				s.log().WarnContext(ctx, "resume a claimed spare; its lease settles it", "session_id", sess.ID,
					"sandbox_id", sandboxID, "err", err)
			}
			return s.providerError(err, "resume the pool's spare sandbox")
		}
		if sb.PreviewURL != "" {
			sess.PreviewURL = sb.PreviewURL
		}
		sess.PreviewURL = s.appPreviewURL(wctx, sess, sess.PreviewURL)
		sess.SandboxExpiresAt = sb.ExpiresAt
		if err := s.transition(wctx, sess, StateRunning, ReasonRequest, Guard{}); err != nil {
			if !IsCode(err, CodeConflict) {
				return s.runningWriteUnknown(wctx, sess, sandboxID, err, release)
			}
			// Deleted (or settled by a reconcile) meanwhile.
			if cur, gerr := s.cfg.Store.GetSession(wctx, sess.ID); gerr == nil && cur.State == StateRunning && cur.SandboxID == sandboxID {
				*sess = *cur
				return nil
			} else if gerr == nil && cur.State.Final() {
				s.killQuietly(wctx, sess, sandboxID)
			}
			release()
			return &Error{Code: CodeConflict, Err: err,
				Message: "the session was deleted while its pool sandbox was being resumed"}
		}
		return nil
	})
}

// reconcileClaim completes the claim of sess, a provisioning session that
// took a spare and whose create died before it resumed the sandbox (its
// lease ran out): it resumes the sandbox now (completeClaim). It reports
// whether the session changed.
func (s *Service) reconcileClaim(ctx context.Context, sess *Session) (bool, error) {
	err := s.completeClaim(ctx, sess, func() {})
	if err == nil {
		s.log().InfoContext(ctx, "completed the claim of a pool spare", "session_id", sess.ID, "sandbox_id", sess.SandboxID)
		return true, nil
	}
	return sess.State != StateProvisioning, err
}
