package governor

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of Config (docs/CAPACITY.md "Fleet provider governor").
const (
	// DefaultLeaseFor is how long a lease's tokens may be used: a token
	// unused that long after its lease is dropped, so the calls a process
	// makes in any window never exceed what the bucket granted for that
	// window plus this much.
	DefaultLeaseFor = 500 * time.Millisecond
	// DefaultTableTimeout bounds one table update; a slower answer, or an
	// error, puts the governor in fallback.
	DefaultTableTimeout = 250 * time.Millisecond
	// DefaultRetryTable is how long the governor stays in fallback before it
	// tries the table again.
	DefaultRetryTable = 2 * time.Second
	// DefaultFallback is the share of the limit each process's own limiter
	// allows while the table is slow or down (SANDMAN_GOVERNOR_FALLBACK).
	DefaultFallback = 0.1
	// maxLeaseShare bounds one lease: at most this share of the bucket's
	// depth, so one process never takes all of it.
	maxLeaseShare = 0.25
	// maxRetries429 is how many times a call the provider answered 429 is
	// asked again (after its Retry-After, each with a new token).
	maxRetries429 = 3
)

// Config configures Wrap.
type Config struct {
	// Limit is the provider's published rate (calls a second) and burst:
	// the whole fleet's (registry.Adapter.Calls). Off: Wrap returns the
	// provider unwrapped.
	Limit calllimit.Limit
	// Table keeps the fleet's buckets; nil: the per-process limiter alone
	// (calllimit.Wrap at Limit × Fallback).
	Table Table
	// Key names the provider's buckets in the table (default the
	// provider's name).
	Key string
	// Shards spreads the provider's bucket over this many items (default
	// 1), each with 1/Shards of the rate and depth, for a fleet whose
	// leases would be too many for one item (docs/CAPACITY.md).
	Shards int
	// Fallback is the share of Limit a process's own limiter allows while
	// the table is slow or unavailable (0: DefaultFallback).
	Fallback float64
	// LeaseFor, TableTimeout and RetryTable default to DefaultLeaseFor,
	// DefaultTableTimeout and DefaultRetryTable.
	LeaseFor, TableTimeout, RetryTable time.Duration
	// Metrics receives grants, refusals, leases, 429s and fallbacks (nil:
	// none).
	Metrics Metrics
	// Log receives fallbacks and table errors (default slog.Default()).
	Log *slog.Logger
	// Clock and Sleep tell and wait the time (default the wall clock and
	// lifecycle.Sleep): the budget is the provider's, in real time.
	Clock lifecycle.Clock
	Sleep func(ctx context.Context, d time.Duration) error
}

// Metrics receives what a governor did: calllimit.Metrics' grants and
// refusals (a call let through from a fleet lease, with its wait, or
// refused), and the fleet's own. internal/metrics' Emitter implements it;
// implementations must be safe for concurrent use and must not block.
type Metrics interface {
	calllimit.Metrics
	// Leased counts tokens a process leased from the table, and how long
	// the table took to answer.
	Leased(provider string, tokens int, took time.Duration)
	// Throttled counts a provider answer 429 to a call of class class.
	Throttled(provider string, class lifecycle.CallPriority)
	// Fallback says the governor went to its per-process limiter (on) or
	// came back to the table (off).
	Fallback(provider string, on bool)
}

type noMetrics struct{}

func (noMetrics) CallGranted(string, lifecycle.CallPriority, time.Duration) {}
func (noMetrics) CallRefused(string, lifecycle.CallPriority)                {}
func (noMetrics) Leased(string, int, time.Duration)                         {}
func (noMetrics) Throttled(string, lifecycle.CallPriority)                  {}
func (noMetrics) Fallback(string, bool)                                     {}

// governor is one provider's in one process: its share of the fleet's
// buckets, the calls waiting for a token, and the fallback.
type governor struct {
	name     string
	table    Table
	shape    Shape // of one shard
	keys     []string
	leaseFor time.Duration
	timeout  time.Duration
	retry    time.Duration
	maxLease int
	m        Metrics
	log      *slog.Logger
	clock    lifecycle.Clock
	sleep    func(ctx context.Context, d time.Duration) error
	fallback lifecycle.Provider // calllimit.Wrap of the provider at Limit × Fallback

	mu         sync.Mutex
	cache      []State // per shard, as last seen
	shard      int     // the next shard to lease from
	blocks     []block // leased tokens, oldest first
	waiting    [NumRanks]rankQueue
	nwaiting   int
	leasing    bool
	wake       chan struct{} // tells a backing-off lease loop a higher rank waits
	leaseRank  Rank          // the rank the lease loop works for
	fails      int           // leases refused in a row (backoff)
	fallbackOn bool
	retryAt    time.Time // when, in fallback, the table is tried again
	shares     shares
	demand     [NumRanks]rate
}

// block is tokens of one lease, usable until until.
type block struct {
	n     int
	until time.Time
}

// waiter is a call waiting for a token.
type waiter struct {
	rank    Rank
	account string
	arrived time.Time
	done    chan verdict // one verdict, then closed
}

// verdict is what a waiting call is told.
type verdict struct {
	fallback bool // go through the per-process limiter
}

// rate is an exponentially decaying rate of events (1 s time constant).
type rate struct {
	v  float64
	at time.Time
}

func (r *rate) add(now time.Time, n float64) {
	r.decay(now)
	r.v += n
}

func (r *rate) decay(now time.Time) {
	if dt := now.Sub(r.at).Seconds(); dt > 0 {
		r.v *= math.Exp(-dt)
		r.at = now
	}
}

// perSecond returns the rate at now (events a second).
func (r *rate) perSecond(now time.Time) float64 {
	r.decay(now)
	return r.v
}

func newGovernor(p lifecycle.Provider, cfg Config) *governor {
	shards := max(1, cfg.Shards)
	if cfg.Key == "" {
		cfg.Key = p.Name()
	}
	if cfg.Fallback <= 0 || cfg.Fallback > 1 {
		cfg.Fallback = DefaultFallback
	}
	if cfg.LeaseFor <= 0 {
		cfg.LeaseFor = DefaultLeaseFor
	}
	if cfg.TableTimeout <= 0 {
		cfg.TableTimeout = DefaultTableTimeout
	}
	if cfg.RetryTable <= 0 {
		cfg.RetryTable = DefaultRetryTable
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = lifecycle.Sleep
	}
	burst := cfg.Limit.Burst
	if burst <= 0 {
		burst = max(1, int(math.Ceil(cfg.Limit.PerSecond)))
	}
	// The bucket's depth plus a lease's life is the provider's burst in
	// time, so a process spending its leased tokens late never bunches
	// more calls in a window than the provider allows.
	// It is at least enough for the lowest rank to lease one token of a
	// shard (a small limit's bucket is deeper than its burst).
	perShard := cfg.Limit.PerSecond / float64(shards)
	depth := max(time.Duration(float64(burst)/cfg.Limit.PerSecond*float64(time.Second))-cfg.LeaseFor, cfg.LeaseFor/2,
		time.Duration(float64(time.Second)/perShard/rankDepth[NumRanks-1])+time.Millisecond)
	shape := Shape{Rate: perShard, Depth: depth}
	g := &governor{name: p.Name(), table: cfg.Table, shape: shape, leaseFor: cfg.LeaseFor, timeout: cfg.TableTimeout,
		retry: cfg.RetryTable, m: cfg.Metrics, log: cfg.Log, clock: cfg.Clock, sleep: cfg.Sleep,
		maxLease: max(1, int(maxLeaseShare*depth.Seconds()*shape.Rate)), cache: make([]State, shards),
		shard: rand.IntN(shards), wake: make(chan struct{}, 1)}
	for i := range shards {
		g.keys = append(g.keys, fmt.Sprintf("%s#%d", cfg.Key, i))
	}
	fb := calllimit.Limit{PerSecond: cfg.Limit.PerSecond * cfg.Fallback,
		Burst: max(1, int(math.Ceil(float64(burst)*cfg.Fallback)))}
	g.fallback = calllimit.Wrap(p, calllimit.Config{Limit: fb, Metrics: cfg.Metrics})
	if g.table == nil {
		g.fallbackOn, g.retryAt = true, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return g
}

func (g *governor) now() time.Time { return g.clock.Now() }

// refused is the governor's transient error: the provider was not asked
// (lifecycle.ProviderError.Refused).
func refused(op, sandboxID string, retryAfter time.Duration, cause error) *lifecycle.ProviderError {
	return &lifecycle.ProviderError{Kind: lifecycle.ErrProviderTransient, Op: op, SandboxID: sandboxID, RetryAfter: retryAfter,
		Refused: true, Err: cause}
}

// admit waits for a token for a call of class c on ctx's account and
// reports whether it goes through the per-process fallback instead (which
// then takes its own token). Errors: ctx ended first (transient, Refused).
func (g *governor) admit(ctx context.Context, c lifecycle.CallPriority, op, sandboxID string) (bool, error) {
	if err := ctx.Err(); err != nil {
		g.m.CallRefused(g.name, c)
		return false, refused(op, sandboxID, 0, fmt.Errorf("no provider call token: %w", err))
	}
	g.mu.Lock()
	now := g.now()
	if g.inFallback(now) {
		g.mu.Unlock()
		return true, nil
	}
	r := RankOf(c, g.shares.arrive(c, lifecycle.CallAccountOf(ctx), now))
	g.demand[r].add(now, 1)
	if g.ahead(r) == 0 && g.take(now) {
		g.kick(now, r)
		g.mu.Unlock()
		g.m.CallGranted(g.name, c, 0)
		return false, nil
	}
	w := &waiter{rank: r, account: lifecycle.CallAccountOf(ctx), arrived: now, done: make(chan verdict, 1)}
	g.waiting[r].push(w)
	g.nwaiting++
	g.kick(now, r)
	g.mu.Unlock()

	select {
	case v := <-w.done:
		if !v.fallback {
			g.m.CallGranted(g.name, c, max(0, g.now().Sub(now)))
		}
		return v.fallback, nil
	case <-ctx.Done():
		g.mu.Lock()
		if g.waiting[r].remove(w) {
			g.nwaiting--
			g.mu.Unlock()
			g.m.CallRefused(g.name, c)
			return false, refused(op, sandboxID, g.shape.interval(State{}, now),
				fmt.Errorf("waiting for a fleet provider call token (class %s): %w", r, ctx.Err()))
		}
		g.mu.Unlock()
		v := <-w.done // granted meanwhile: give the token back
		if !v.fallback {
			g.mu.Lock()
			g.blocks = append(g.blocks, block{n: 1, until: g.now().Add(g.leaseFor)})
			g.dispatch(g.now())
			g.mu.Unlock()
		}
		g.m.CallRefused(g.name, c)
		return false, refused(op, sandboxID, 0, fmt.Errorf("waiting for a fleet provider call token: %w", ctx.Err()))
	}
}

// inFallback reports whether calls go to the per-process limiter at now;
// g.mu held. Past retryAt the table is tried again by the next lease.
func (g *governor) inFallback(now time.Time) bool {
	return g.fallbackOn && now.Before(g.retryAt)
}

// ahead returns how many calls wait at rank r or above; g.mu held.
func (g *governor) ahead(r Rank) int {
	n := 0
	for i := range r + 1 {
		n += g.waiting[i].n
	}
	return n
}

// take takes one leased token at now, dropping expired ones; g.mu held.
func (g *governor) take(now time.Time) bool {
	for len(g.blocks) > 0 {
		b := &g.blocks[0]
		if !now.Before(b.until) || b.n == 0 {
			g.blocks = g.blocks[1:]
			continue
		}
		b.n--
		return true
	}
	return false
}

// tokens returns the leased tokens usable at now; g.mu held.
func (g *governor) tokens(now time.Time) int {
	n := 0
	for _, b := range g.blocks {
		if now.Before(b.until) {
			n += b.n
		}
	}
	return n
}

// dispatch hands leased tokens to the waiting calls, the lowest rank
// first, accounts in turn within a rank; g.mu held.
func (g *governor) dispatch(now time.Time) {
	for g.nwaiting > 0 {
		r := g.best()
		if !g.take(now) {
			return
		}
		w := g.waiting[r].pop()
		g.nwaiting--
		w.done <- verdict{}
	}
}

// best returns the lowest rank with a waiting call; g.mu held, nwaiting > 0.
func (g *governor) best() Rank {
	for r := range NumRanks {
		if g.waiting[r].n > 0 {
			return r
		}
	}
	return NumRanks - 1
}

// handOff sends every waiting call to the fallback; g.mu held.
func (g *governor) handOff() {
	for r := range NumRanks {
		for w := g.waiting[r].pop(); w != nil; w = g.waiting[r].pop() {
			g.nwaiting--
			w.done <- verdict{fallback: true}
		}
	}
}

// kick starts the lease loop when calls wait, or when the leased tokens
// run low for the recent demand (a lease ahead, so that calls find a
// token), unless it runs; a running loop working for a lower rank than r
// is woken to lease for r. g.mu held.
func (g *governor) kick(now time.Time, r Rank) {
	if g.leasing {
		if g.nwaiting > 0 && r < g.leaseRank {
			select {
			case g.wake <- struct{}{}:
			default:
			}
		}
		return
	}
	if g.nwaiting == 0 && !g.low(now) {
		return
	}
	g.leasing = true
	go g.leaseLoop()
}

// low reports whether the leased tokens fall short of a third of a
// lease's life of the recent demand; g.mu held.
func (g *governor) low(now time.Time) bool {
	d := 0.0
	for r := range NumRanks {
		d += g.demand[r].perSecond(now)
	}
	return d >= 1 && float64(g.tokens(now)) < d*g.leaseFor.Seconds()/3
}

// want returns the rank and size of the next lease; g.mu held. For
// waiting calls: the best waiting rank, for them and for the demand of
// that rank and above over a lease's life; ahead of demand: the lowest
// rank with recent demand, for the demand over a lease's life.
func (g *governor) want(now time.Time) (Rank, int, bool) {
	ahead := g.nwaiting == 0
	r := Rank(0)
	if !ahead {
		r = g.best()
	} else {
		for i := range NumRanks {
			if g.demand[i].perSecond(now) >= 0.5 {
				r = i
			}
		}
	}
	d := 0.0
	for i := range r + 1 {
		d += g.demand[i].perSecond(now)
	}
	n := int(math.Ceil(d*g.leaseFor.Seconds())) - g.tokens(now)
	if !ahead {
		n = max(n, g.ahead(r))
	}
	return r, min(max(n, 1), g.maxLease), ahead
}

// leaseLoop leases tokens from the table while calls wait (or ahead of
// demand), one lease at a time, and hands them out; it ends when nothing
// waits and the tokens suffice, or in fallback (handing the waiting calls
// over).
func (g *governor) leaseLoop() {
	conflicts, tried := 0, 0
	var soonest time.Time
	for {
		g.mu.Lock()
		now := g.now()
		g.dispatch(now)
		if g.inFallback(now) {
			g.handOff()
			g.leasing = false
			g.mu.Unlock()
			return
		}
		if g.nwaiting == 0 && !g.low(now) {
			g.leasing = false
			g.mu.Unlock()
			return
		}
		r, want, ahead := g.want(now)
		g.leaseRank = r
		shard := g.shard
		s := g.cache[shard]
		g.mu.Unlock()

		t, next, ok := g.shape.plan(g.keys[shard], s, now, r, want)
		if !ok {
			if soonest.IsZero() || next.Before(soonest) {
				soonest = next
			}
			tried++
			g.advance()
			if tried < len(g.keys) {
				continue // another shard may have room
			}
			if ahead {
				g.stop()
				return
			}
			g.backoff(soonest)
			tried, soonest = 0, time.Time{}
			continue
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		st, applied, err := g.table.Take(ctx, t)
		cancel()
		took := time.Since(start)
		if err == nil && took > g.timeout {
			err = fmt.Errorf("the table took %v (more than %v)", took, g.timeout)
		}
		if err != nil {
			g.toFallback(err)
			continue
		}
		g.mu.Lock()
		g.cache[shard] = st
		g.backFromFallback()
		if applied {
			g.blocks = append(g.blocks, block{n: t.Tokens, until: t.Now.Add(g.leaseFor)})
			g.fails, conflicts, tried, soonest = 0, 0, 0, time.Time{}
			g.shard = (shard + 1) % len(g.keys)
		}
		g.mu.Unlock()
		if applied {
			g.m.Leased(g.name, t.Tokens, took)
			continue
		}
		// The shard moved since this process last saw it: plan again on
		// what the table answered, a few times, then back off a little.
		if conflicts++; conflicts > 3 {
			conflicts = 0
			g.backoff(g.now())
		}
	}
}

// advance moves to the next shard.
func (g *governor) advance() {
	g.mu.Lock()
	g.shard = (g.shard + 1) % len(g.keys)
	g.mu.Unlock()
}

// stop ends the lease loop.
func (g *governor) stop() {
	g.mu.Lock()
	g.leasing = false
	// A call may have come while the lock was free: it found the loop
	// running, so start it again for it.
	if g.nwaiting > 0 {
		g.leasing = true
		go g.leaseLoop()
	}
	g.mu.Unlock()
}

// backoff waits until at, and a jittered while more after refusals in a
// row (so that processes waiting on one bucket do not all ask at once),
// or until a call of a higher rank than the loop's comes.
func (g *governor) backoff(at time.Time) {
	g.mu.Lock()
	g.fails++
	spread := min(time.Second, g.shape.interval(g.cache[g.shard], at)<<min(g.fails, 10))
	g.mu.Unlock()
	d := max(0, at.Sub(g.now())) + time.Duration(rand.Int64N(int64(spread)+1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-g.wake:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = g.sleep(ctx, d)
}

// toFallback puts the governor in fallback after the table failed: calls
// go to the per-process limiter until RetryTable has passed.
func (g *governor) toFallback(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.retryAt = now.Add(g.retry)
	if g.fallbackOn {
		return
	}
	g.fallbackOn = true
	g.blocks = nil
	g.log.Warn("governor: the table is slow or unavailable; calls go to the per-process limiter",
		"provider", g.name, "retry_in", g.retry, "err", err)
	g.m.Fallback(g.name, true)
}

// backFromFallback leaves fallback after the table answered; g.mu held.
func (g *governor) backFromFallback() {
	if !g.fallbackOn {
		return
	}
	g.fallbackOn = false
	g.log.Info("governor: the table answers again; calls lease from it", "provider", g.name)
	g.m.Fallback(g.name, false)
}

// throttled records a provider's 429 to a call of class c: the fleet's
// rate is cut (AIMD) and no lease is granted until its Retry-After ra has
// passed; this process drops the tokens it holds. Best effort: a table
// that does not answer puts the governor in fallback.
func (g *governor) throttled(c lifecycle.CallPriority, ra time.Duration) {
	g.m.Throttled(g.name, c)
	g.mu.Lock()
	now := g.now()
	g.blocks = nil
	if g.inFallback(now) {
		g.mu.Unlock()
		return
	}
	cuts := make([]Cut, len(g.keys))
	for i, k := range g.keys {
		cuts[i] = g.shape.cutFor(k, g.cache[i], now, ra)
	}
	g.mu.Unlock()
	for i, c := range cuts {
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		st, err := g.table.Cut(ctx, c)
		cancel()
		if err != nil {
			g.toFallback(err)
			return
		}
		g.mu.Lock()
		g.cache[i] = st
		g.mu.Unlock()
	}
}
