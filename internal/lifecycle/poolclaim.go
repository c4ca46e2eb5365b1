package lifecycle

import (
	"context"
	"errors"
	"fmt"
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
			refilled := s.kickRefill(ctx, pool.ID, sess.ID)
			err := s.completeClaim(ctx, sess, release, false)
			refilled()
			return true, err
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
// (docs/DESIGN.md "Belt and braces"). The sandbox gone at the provider (it
// expired or was killed there): the session gets a cold sandbox instead
// (claimFallBack). Any other failure leaves the session provisioning under
// its lease, for Reconcile to complete, and answers unavailable.
// recovering says Reconcile runs it for a create that died (claimFallBack).
func (s *Service) completeClaim(ctx context.Context, sess *Session, release func(), recovering bool) error {
	sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	sandboxID := sess.SandboxID
	gone := false
	err := settle(ctx, 0, func(ctx context.Context) (Sandbox, error) {
		return s.resumeWithRetry(ctx, sess)
	}, func(wctx context.Context, sb Sandbox, err error) error {
		if err != nil {
			if errors.Is(err, ErrSandboxGone) {
				gone = true
				return nil
			}
			s.log().WarnContext(ctx, "resume a claimed spare; its lease settles it", "session_id", sess.ID,
				"sandbox_id", sandboxID, "err", err)
			return s.providerError(err, "resume the pool's spare sandbox")
		}
		if sb.PreviewURL != "" {
			sess.PreviewURL = sb.PreviewURL
		}
		sess.PreviewURL = s.appPreviewURL(wctx, sess, sess.PreviewURL)
		sess.SandboxExpiresAt = sb.ExpiresAt
		// The spare was made for no session: it gets this one's marker
		// before it is handed over.
		s.writeMarker(wctx, sess, sandboxID, "")
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
	if gone {
		return s.claimFallBack(ctx, sess, sandboxID, release, recovering)
	}
	return err
}

// claimFallBack gives sess, a provisioning session whose claimed spare's
// sandbox goneID the provider no longer has, a cold sandbox instead
// (docs/POOLS.md "A spare gone at the provider"): the same session item,
// with its running slot, its Idempotency-Key and its Session Provisioning
// event, goes on with the provider step of a cold create (provisionSandbox)
// and ends running with from_pool false, or failed (release runs). Once
// that outcome is written the pool counts the spare lost, a miss instead of
// a hit, and shows why as its last error. The table keeps the claim
// (from_pool, the spare's sandbox) until then, so a process that dies in
// between leaves the session to Reconcile, which comes back here with
// recovering set: a fallback cut short may have left a sandbox tagged with
// the session, which is killed before the new one is made.
func (s *Service) claimFallBack(ctx context.Context, sess *Session, goneID string, release func(), recovering bool) error {
	poolID := sess.PoolID
	s.log().WarnContext(ctx, "the claimed spare's sandbox is gone at the provider; creating one cold for the session",
		"session_id", sess.ID, "pool_id", poolID, "sandbox_id", goneID, "recovering", recovering)
	if recovering {
		if err := s.killOrphans(ctx, sess); err != nil {
			s.log().WarnContext(ctx, "look for a sandbox an earlier fallback made; the sweep reaps it later",
				"session_id", sess.ID, "err", err)
		}
	}
	sess.SandboxID, sess.FromPool, sess.PoolID, sess.PreviewURL = "", false, "", ""
	err := s.provisionSandbox(ctx, sess, release)
	// Counted once the outcome is written, by the completion that wrote it:
	// a fallback that died and is completed by Reconcile counts once, and of
	// two overlapping completions the one that lost its conditional write
	// (a conflict) counts nothing.
	if !IsCode(err, CodeConflict) && s.settled(ctx, sess.ID, err) {
		s.noteLostSpare(ctx, poolID, goneID)
	}
	// In case the provider's "gone" was wrong: nothing names the sandbox now.
	s.killSpareSandbox(ctx, sess.Provider, goneID)
	return err
}

// settled reports whether the outcome of a create of session id, which
// answered err, is written: it succeeded, or the session is no longer
// provisioning (it was recorded failed).
func (s *Service) settled(ctx context.Context, id string, err error) bool {
	if err == nil {
		return true
	}
	wctx, cancel := settleContext(ctx)
	defer cancel()
	cur, gerr := s.cfg.Store.GetSession(wctx, id)
	return gerr == nil && cur.State != StateProvisioning
}

// noteLostSpare records on pool poolID's status that a claimed spare's
// sandbox was gone at the provider: one lost, and the create counted a
// miss instead of the hit counted at the claim; its last error says so.
func (s *Service) noteLostSpare(ctx context.Context, poolID, sandboxID string) {
	ps := s.poolStore()
	if ps == nil || poolID == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := ps.CountPool(ctx, poolID, PoolCounts{Lost: 1, Hits: -1, Misses: 1}); err != nil {
		s.log().WarnContext(ctx, "count a lost spare", "pool_id", poolID, "err", err)
	}
	why := fmt.Sprintf("claimed spare %s was gone at the provider (expired or killed there); its create went cold", sandboxID)
	s.updatePoolHealth(ctx, ps, poolID, func(h *PoolHealth) bool {
		h.LastError, h.LastErrorAt = why, s.now()
		return true
	})
}

// reconcileClaim completes the claim of sess, a provisioning session that
// took a spare and whose create died before it resumed the sandbox or
// recorded a cold one instead (its lease ran out): completeClaim, now. It
// reports whether the session changed.
func (s *Service) reconcileClaim(ctx context.Context, sess *Session) (bool, error) {
	err := s.completeClaim(ctx, sess, func() {}, true)
	if err == nil {
		s.log().InfoContext(ctx, "completed the claim of a pool spare", "session_id", sess.ID, "sandbox_id", sess.SandboxID,
			"from_pool", sess.FromPool)
		return true, nil
	}
	return sess.State != StateProvisioning, err
}
