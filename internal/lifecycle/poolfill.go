package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// PoolMetrics is implemented by a Metrics that also counts pool trouble
// (internal/metrics): the stack alarms on PoolStopped. It is separate from
// Metrics so that existing implementations need not change.
type PoolMetrics interface {
	// SpareFailed counts one spare of pool poolID that failed to become ready.
	SpareFailed(poolID string)
	// PoolStopped counts one pool that stopped refilling after
	// PoolFailureLimit failures in a row (again after each backoff that
	// ends in a failure).
	PoolStopped(poolID string)
}

// PoolFillSummary says what one FillPools run did.
type PoolFillSummary struct {
	Made    int // spares made ready
	Failed  int // spares that failed to become ready (killed)
	Retired int // spares older than their pool's max age, or beyond its size (killed)
	Dropped int // making spares whose fill died (killed)
	Stopped int // pools skipped because they are backing off
}

// FillPools brings every configured pool to its size (docs/POOLS.md
// "Refill"): for each pool it drops spares a dead fill left making, retires
// ready spares older than the pool's max age (and any beyond its size),
// extends the provider timeout of running-tier spares, and makes the
// missing spares, at most Config.PoolFillConcurrency at once over all
// pools. A spare is made by creating a sandbox tagged with its pool
// (MetadataPool), recording it making, starting its app and probing its
// preview as a readiness job would, pausing it for TierPaused, and
// recording it ready. A spare that fails is killed; PoolFailureLimit
// failures in a row stop the pool until a backoff (DefaultPoolBackoff,
// doubling up to MaxPoolBackoff) has passed, after which one spare is tried
// again. The sweep calls it on every run; the local stack also on boot and
// after each claim (Config.RefillAfterClaim; in AWS a claim asks for
// FillPool through Config.PoolRefills instead). Runs within one process are
// serialised: a call while one runs asks that one for another round and
// returns at once. Failures are logged and counted, never returned.
func (s *Service) FillPools(ctx context.Context) PoolFillSummary {
	// Nobody waits on a spare: its create, commands and timeout refreshes
	// are background calls in the provider's call limiter.
	ctx = WithCallPriority(ctx, PriorityBackground)
	ps := s.poolStore()
	if ps == nil {
		return PoolFillSummary{}
	}
	if !s.filling.TryLock() {
		s.refillAgain.Store(true)
		return PoolFillSummary{}
	}
	defer s.filling.Unlock()
	var total PoolFillSummary
	for round := 0; round < 3; round++ {
		s.refillAgain.Store(false)
		sum := s.fillOnce(ctx, ps, s.cfg.Pools)
		total.Made += sum.Made
		total.Failed += sum.Failed
		total.Retired += sum.Retired
		total.Dropped += sum.Dropped
		total.Stopped += sum.Stopped
		if !s.refillAgain.Load() || ctx.Err() != nil {
			break
		}
	}
	return total
}

// PoolRefills queues refills of pools (Config.PoolRefills): in AWS a FIFO
// SQS queue with one message group per pool (internal/sweep/sqsrefill), so
// the refills of one pool run one after another, each a FillPool.
type PoolRefills interface {
	// RequestRefill asks for FillPool(poolID) soon, after the claim of
	// session sessionID (a retried request for the same claim may be
	// dropped as a duplicate). Errors: unavailable when the request could
	// not be queued; the pool then waits for the sweep's next run.
	RequestRefill(ctx context.Context, poolID, sessionID string) error
}

// kickRefill asks for a refill of pool poolID after session sessionID
// claimed one of its spares: through Config.PoolRefills when set, sent
// while the claim's resume runs (the returned wait ends when the request
// is sent; the caller waits before it answers, as a Lambda function is
// frozen after its answer); a request that could not be sent is logged:
// the sweep's next run refills the pool. Else, with
// Config.RefillAfterClaim, a FillPools in the background under
// Config.Background (not the request's context, which ends with the
// answer), and wait does nothing.
func (s *Service) kickRefill(ctx context.Context, poolID, sessionID string) (wait func()) {
	switch {
	case s.cfg.PoolRefills != nil:
		done := make(chan struct{})
		go func() {
			defer close(done)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
			defer cancel()
			if err := s.cfg.PoolRefills.RequestRefill(rctx, poolID, sessionID); err != nil {
				s.log().WarnContext(ctx, "ask for a refill of the pool; the sweep refills it on its next run",
					"pool_id", poolID, "session_id", sessionID, "err", err)
			}
		}()
		return func() { <-done }
	case s.cfg.RefillAfterClaim:
		go s.FillPools(s.cfg.Background)
	}
	return func() {}
}

// FillPool brings the one configured pool poolID to its size, as FillPools
// does for every pool: a refill after a claim (Config.PoolRefills). It is
// idempotent: a pool already at its size makes nothing, so a repeated or
// late request costs two reads. Within one process it waits for a fill
// under way (never two at once); across processes, the refill queue runs
// one refill of a pool at a time (its message group), and one that
// overlaps the sweep's may make a few spares too many, which the next fill
// retires (beyond the pool's size). Errors: not_found for a pool that is
// not configured (any more); the fill's own failures are logged and
// counted, never returned.
func (s *Service) FillPool(ctx context.Context, poolID string) (PoolFillSummary, error) {
	// Background calls in the provider's call limiter, as FillPools'.
	ctx = WithCallPriority(ctx, PriorityBackground)
	var pool *Pool
	for i := range s.cfg.Pools {
		if s.cfg.Pools[i].ID == poolID {
			pool = &s.cfg.Pools[i]
		}
	}
	ps := s.poolStore()
	if pool == nil || ps == nil {
		return PoolFillSummary{}, Errorf(CodeNotFound, "pool %s is not configured", poolID)
	}
	s.filling.Lock()
	defer s.filling.Unlock()
	return s.fillOnce(ctx, ps, []Pool{*pool}), nil
}

// fillOnce is one round of FillPools over pools.
func (s *Service) fillOnce(ctx context.Context, ps PoolStore, pools []Pool) PoolFillSummary {
	var (
		mu  sync.Mutex
		sum PoolFillSummary
		wg  sync.WaitGroup
	)
	add := func(f func(*PoolFillSummary)) { mu.Lock(); f(&sum); mu.Unlock() }
	sem := make(chan struct{}, s.cfg.PoolFillConcurrency)
	for _, pool := range pools {
		need := s.tendPool(ctx, ps, pool, add)
		for range need {
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-sem }()
				err := s.makeSpare(ctx, ps, pool)
				s.recordSpare(ctx, ps, pool, err)
				add(func(sm *PoolFillSummary) {
					if err != nil {
						sm.Failed++
					} else {
						sm.Made++
					}
				})
			}()
		}
	}
	wg.Wait()
	return sum
}

// tendPool drops, retires and refreshes pool's spares and returns how many
// to make.
func (s *Service) tendPool(ctx context.Context, ps PoolStore, pool Pool, add func(func(*PoolFillSummary))) int {
	log := s.log().With("pool_id", pool.ID)
	st, err := ps.PoolStatus(ctx, pool.ID)
	if err != nil {
		log.WarnContext(ctx, "read the pool's status; not filling it this round", "err", err)
		return 0
	}
	spares, err := ps.ListSpares(ctx, pool.ID)
	if err != nil {
		log.WarnContext(ctx, "list the pool's spares; not filling it this round", "err", err)
		return 0
	}
	now := s.now()
	live := 0
	var ready []*Spare
	for _, sp := range spares {
		switch {
		case sp.Status == SpareMaking && !now.Before(sp.UpdatedAt.Add(s.makingBound(pool))):
			if s.dropSpare(ctx, ps, pool, sp, "its fill died") {
				add(func(sm *PoolFillSummary) { sm.Dropped++ })
			}
		case sp.Status == SpareMaking:
			live++
		case !now.Before(sp.CreatedAt.Add(pool.MaxAge)):
			if s.dropSpare(ctx, ps, pool, sp, "older than the pool's max age") {
				add(func(sm *PoolFillSummary) { sm.Retired++ })
			}
		default:
			live++
			ready = append(ready, sp)
		}
	}
	for i := 0; live > pool.Size && i < len(ready); i++ { // oldest first
		if s.dropSpare(ctx, ps, pool, ready[i], "beyond the pool's size") {
			add(func(sm *PoolFillSummary) { sm.Retired++ })
			live--
		}
		ready[i] = nil
	}
	if pool.Tier == TierRunning {
		for _, sp := range ready {
			if sp != nil {
				s.refreshSpare(ctx, ps, pool, sp)
			}
		}
	}
	need := pool.Size - live
	if need <= 0 {
		return 0
	}
	if now.Before(st.BackoffUntil) {
		log.InfoContext(ctx, "pool stopped refilling; backing off", "until", st.BackoffUntil, "last_error", st.LastError)
		add(func(sm *PoolFillSummary) { sm.Stopped++ })
		return 0
	}
	if st.ConsecutiveFailures > 0 {
		// Failing: one spare at a time, so the pool stops at
		// PoolFailureLimit failures, and once a backoff passed one try
		// decides whether it fills again.
		return 1
	}
	return need
}

// makingBound is how long a spare may stay making before its fill is taken
// for dead: a lease plus the app's ready timeout.
func (s *Service) makingBound(pool Pool) time.Duration {
	d := s.cfg.Policy.LeaseDuration
	if pool.App != nil {
		d += pool.App.ReadyTimeout
	}
	return d
}

// spareTimeout is the provider-side timeout a spare is created (and a
// running one refreshed) with: for TierPaused long enough to come up
// before it is paused, for TierRunning its max age; a lease on top, capped
// at Policy.MaxProviderTimeout. The provider pauses it at the timeout
// (AutoPause): a paused spare can still be claimed.
func (s *Service) spareTimeout(pool Pool) time.Duration {
	d := s.makingBound(pool)
	if pool.Tier == TierRunning {
		d = pool.MaxAge + s.cfg.Policy.LeaseDuration
	}
	if m := s.cfg.Policy.MaxProviderTimeout; m > 0 && d > m {
		d = m
	}
	return d
}

// refreshSpare extends the provider timeout of a running-tier spare once
// less than half of it is left.
func (s *Service) refreshSpare(ctx context.Context, ps PoolStore, pool Pool, sp *Spare) {
	timeout := s.spareTimeout(pool)
	now := s.now()
	if sp.ExpiresAt.IsZero() || sp.ExpiresAt.Sub(now) >= timeout/2 {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	err := s.providerFor(sp.Provider).SetTimeout(pctx, sp.SandboxID, timeout)
	cancel()
	if err != nil {
		s.log().WarnContext(ctx, "extend a running spare's timeout", "pool_id", pool.ID, "sandbox_id", sp.SandboxID, "err", err)
		return
	}
	sp.ExpiresAt, sp.UpdatedAt = now.Add(timeout), now
	if err := ps.UpdateSpare(ctx, sp, SpareReady); err != nil && !IsCode(err, CodeConflict) {
		s.log().WarnContext(ctx, "record a running spare's timeout", "pool_id", pool.ID, "sandbox_id", sp.SandboxID, "err", err)
	}
}

// dropSpare deletes sp (conditional on its status and version, so a claim
// that took it meanwhile wins) and then kills its sandbox. It reports
// whether it dropped it.
func (s *Service) dropSpare(ctx context.Context, ps PoolStore, pool Pool, sp *Spare, why string) bool {
	// Also when the fill's context ended (a sweep's deadline): the spare
	// must not stay making with nobody bringing it up.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if err := ps.DeleteSpare(ctx, sp); err != nil {
		if !IsCode(err, CodeConflict) && !IsCode(err, CodeNotFound) {
			s.log().WarnContext(ctx, "drop a spare", "pool_id", sp.PoolID, "sandbox_id", sp.SandboxID, "err", err)
		}
		return false
	}
	s.killSpareSandbox(ctx, sp.Provider, sp.SandboxID)
	if err := ps.CountPool(context.WithoutCancel(ctx), sp.PoolID, spareCounts(sp, pool.Tier, s.now())); err != nil {
		s.log().WarnContext(ctx, "count a dropped spare's usage", "pool_id", sp.PoolID, "err", err)
	}
	s.log().InfoContext(ctx, "dropped a spare", "pool_id", sp.PoolID, "sandbox_id", sp.SandboxID, "why", why)
	return true
}

// killSpareSandbox kills a spare's sandbox that no item names any more; a
// failure is logged and left to the sweep's reconcile (ReapOrphan kills a
// pool sandbox without a spare item).
func (s *Service) killSpareSandbox(ctx context.Context, provider, sandboxID string) {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if err := s.providerFor(provider).Kill(pctx, sandboxID); err != nil && !errors.Is(err, ErrSandboxGone) {
		s.log().WarnContext(ctx, "kill a spare's sandbox; the sweep reaps it later", "sandbox_id", sandboxID, "err", err)
	}
}

// makeSpare makes one spare of pool and records it ready, or kills what it
// made and returns why it failed.
func (s *Service) makeSpare(ctx context.Context, ps PoolStore, pool Pool) error {
	provider := s.providerFor(pool.Provider)
	meta := map[string]string{MetadataPool: pool.ID}
	if s.cfg.Deployment != "" {
		meta[MetadataDeployment] = s.cfg.Deployment
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	sb, err := provider.Create(pctx, CreateRequest{Template: pool.Template, Timeout: s.spareTimeout(pool), AutoPause: true, Metadata: meta})
	cancel()
	if err != nil {
		return fmt.Errorf("create a sandbox of template %s: %w", pool.Template, err)
	}
	now := s.now()
	sp := &Spare{PoolID: pool.ID, SandboxID: sb.ID, Provider: provider.Name(), Status: SpareMaking,
		CreatedAt: now, UpdatedAt: now, PreviewURL: sb.PreviewURL, ExpiresAt: sb.ExpiresAt}
	if err := ps.PutSpare(ctx, sp); err != nil {
		s.killSpareSandbox(ctx, sp.Provider, sb.ID)
		return fmt.Errorf("record the spare: %w", err)
	}
	fail := func(err error) error {
		s.dropSpare(ctx, ps, pool, sp, "it failed")
		return err
	}
	url, err := s.bringUpSpare(ctx, provider, pool, sp)
	if err != nil {
		return fail(err)
	}
	sp.PreviewURL = url
	if pool.Tier == TierPaused {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		err := provider.Pause(pctx, sp.SandboxID)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("pause the ready spare: %w", err))
		}
		sp.ExpiresAt = time.Time{}
	}
	now = s.now()
	sp.Status, sp.ReadyAt, sp.UpdatedAt = SpareReady, now, now
	if err := ps.UpdateSpare(ctx, sp, SpareMaking); err != nil {
		if IsCode(err, CodeConflict) || IsCode(err, CodeNotFound) {
			return fmt.Errorf("record the spare ready: it was dropped meanwhile: %w", err)
		}
		sp.Status = SpareMaking
		return fail(fmt.Errorf("record the spare ready: %w", err))
	}
	s.log().InfoContext(ctx, "spare ready", "pool_id", pool.ID, "sandbox_id", sp.SandboxID, "tier", pool.Tier,
		"after_ms", now.Sub(sp.CreatedAt).Milliseconds())
	return nil
}

// bringUpSpare starts pool's app in the spare's sandbox and probes its
// preview until it answers, as a readiness job does for a session
// (docs/READINESS.md "How the app is brought up"). It returns the preview
// URL of the app's port (the sandbox's own for a pool without an app).
// Errors: the command exited, the ready timeout passed, the provider's.
func (s *Service) bringUpSpare(ctx context.Context, provider Provider, pool Pool, sp *Spare) (string, error) {
	app := pool.App
	if app == nil {
		return sp.PreviewURL, nil
	}
	base := sp.PreviewURL
	runner, _ := As[CommandRunner](provider)
	if runner != nil {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		u, err := runner.PortURL(pctx, sp.SandboxID, app.Port)
		if err == nil {
			_, err = runner.StartCommand(pctx, sp.SandboxID, Command{Name: AppCommandName,
				Line: app.StartCommand, Cwd: app.Cwd, Env: app.Env, Port: app.Port})
		}
		cancel()
		if err != nil {
			return "", fmt.Errorf("start the app: %w", err)
		}
		base = u
	}
	url := readyURL(base, app.ReadyPath)
	deadline := s.now().Add(app.ReadyTimeout)
	backoff := s.cfg.ReadyBackoff
	for {
		ok, why := s.probeReady(ctx, runner, url)
		if ok {
			return base, nil
		}
		if runner != nil {
			pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
			st, err := runner.CommandStatus(pctx, sp.SandboxID, AppCommandName)
			cancel()
			switch {
			case errors.Is(err, ErrNoCommand):
				return "", errors.New("the start command is no longer in the sandbox")
			case err != nil:
				return "", fmt.Errorf("read the app command: %w", err)
			case !st.Running:
				return "", errors.New(withOutput(fmt.Sprintf("the start command exited with code %d before the preview answered", st.ExitCode), st.Output))
			}
		}
		if !s.now().Before(deadline) {
			return "", fmt.Errorf("the preview did not answer at %s within %d s (%s)", app.ReadyPath, int64(app.ReadyTimeout/time.Second), why)
		}
		if err := s.sleep(ctx, min(backoff, deadline.Sub(s.now())+time.Millisecond)); err != nil {
			return "", err
		}
		backoff = min(2*backoff, s.cfg.ReadyBackoffMax)
	}
}

// maxPoolErrorLen bounds PoolHealth.LastError, in bytes.
const maxPoolErrorLen = 1024

// recordSpare records the outcome of one spare in pool's health: a success
// clears the failure count and any backoff; a failure counts, is kept as
// the last error and, at PoolFailureLimit in a row, stops the pool until
// the backoff passes (logged as an error and counted as PoolStopped).
func (s *Service) recordSpare(ctx context.Context, ps PoolStore, pool Pool, made error) {
	log := s.log().With("pool_id", pool.ID)
	pm, _ := s.cfg.Metrics.(PoolMetrics)
	if made != nil && ctx.Err() != nil {
		// The fill ran out of time (a sweep's deadline, a stop): the
		// spare was dropped, but that says nothing of the pool's health.
		log.InfoContext(ctx, "a spare was cut short by the end of its fill", "err", made)
		return
	}
	ctx = context.WithoutCancel(ctx)
	if made != nil {
		log.WarnContext(ctx, "a spare failed", "err", made)
		if err := ps.CountPool(ctx, pool.ID, PoolCounts{Failed: 1}); err != nil {
			log.WarnContext(ctx, "count a failed spare", "err", err)
		}
		if pm != nil {
			pm.SpareFailed(pool.ID)
		}
	}
	h, saved := s.updatePoolHealth(ctx, ps, pool.ID, func(h *PoolHealth) bool {
		if made == nil {
			if h.ConsecutiveFailures == 0 && h.BackoffUntil.IsZero() {
				return false
			}
			h.ConsecutiveFailures, h.BackoffUntil = 0, time.Time{}
			return true
		}
		h.ConsecutiveFailures++
		h.LastError, h.LastErrorAt = TruncateDetail(made.Error()), s.now()
		if len(h.LastError) > maxPoolErrorLen {
			h.LastError = h.LastError[len(h.LastError)-maxPoolErrorLen:]
		}
		if h.ConsecutiveFailures >= PoolFailureLimit {
			h.BackoffUntil = h.LastErrorAt.Add(PoolBackoff(h.ConsecutiveFailures))
		}
		return true
	})
	if saved && !h.BackoffUntil.IsZero() {
		log.ErrorContext(ctx, "pool stopped refilling after failures in a row; it tries again after a backoff",
			"failures", h.ConsecutiveFailures, "backoff_until", h.BackoffUntil, "last_error", h.LastError)
		if pm != nil {
			pm.PoolStopped(pool.ID)
		}
	}
}

// updatePoolHealth applies edit to pool poolID's stored health and saves
// it under its version, re-reading and re-applying on a conflict (a few
// times). edit returns false when there is nothing to save. It returns the
// health saved and whether it was; failures are logged.
func (s *Service) updatePoolHealth(ctx context.Context, ps PoolStore, poolID string, edit func(*PoolHealth) bool) (PoolHealth, bool) {
	log := s.log().With("pool_id", poolID)
	for attempt := 0; attempt < 5; attempt++ {
		st, err := ps.PoolStatus(ctx, poolID)
		if err != nil {
			log.WarnContext(ctx, "read the pool's health", "err", err)
			return PoolHealth{}, false
		}
		h := st.PoolHealth
		if !edit(&h) {
			return h, false
		}
		if _, err := ps.SavePoolHealth(ctx, poolID, h, st.Version); err != nil {
			if IsCode(err, CodeConflict) {
				continue
			}
			log.WarnContext(ctx, "save the pool's health", "err", err)
			return PoolHealth{}, false
		}
		return h, true
	}
	log.WarnContext(ctx, "save the pool's health: it kept changing meanwhile")
	return PoolHealth{}, false
}

// PoolBackoff returns how long a pool with failures failures in a row
// waits before it tries again: DefaultPoolBackoff at PoolFailureLimit,
// doubled with each further failure, at most MaxPoolBackoff; 0 below the
// limit.
func PoolBackoff(failures int) time.Duration {
	if failures < PoolFailureLimit {
		return 0
	}
	d := DefaultPoolBackoff
	for i := PoolFailureLimit; i < failures && d < MaxPoolBackoff; i++ {
		d *= 2
	}
	return min(d, MaxPoolBackoff)
}
