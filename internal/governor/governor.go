package governor

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Defaults of Config (docs/CAPACITY.md "Fleet provider governor").
const (
	// A lease's tokens may be used for a third of the provider's burst
	// (Config.LeaseFor; at least minLeaseFor, at most maxLeaseFor): a token
	// unused that long after its lease is dropped, so the calls a process
	// makes in any window never exceed what the bucket granted for that
	// window plus that much. The bucket's depth is the burst's rest.
	minLeaseFor = 100 * time.Millisecond
	maxLeaseFor = time.Second
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
	// Table keeps the fleet's buckets; nil: the per-process bucket alone
	// (the fallback's, at Limit × Fallback).
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
	// LeaseFor is how long a lease's tokens may be used (default a third
	// of the burst's time, 100 ms to 1 s); TableTimeout and RetryTable
	// default to DefaultTableTimeout and DefaultRetryTable.
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
	// Fallback says the governor went to its per-process bucket (on) or
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
	local    Shape // the per-process bucket of the fallback: Limit × Fallback

	mu         sync.Mutex
	cache      []State     // per shard, as last seen
	seen       []time.Time // when each was seen
	shard      int         // the next shard to lease from
	blocks     []block     // leased tokens, oldest first
	waiting    [NumRanks]rankQueue
	nwaiting   int
	leasing    [lanes]bool
	wake       [lanes]chan struct{} // tells a backing-off lease loop a higher rank waits
	leaseRank  [lanes]Rank          // the rank each lease loop works for
	fails      [lanes]int           // leases refused in a row (backoff)
	latency    time.Duration        // the table's recent answer time (EWMA)
	slow       time.Duration        // its slow answers of late (a decaying maximum)
	fallbackOn bool
	own        State     // the per-process bucket (local), which the lease loops lease from in fallback
	retryAt    time.Time // when, in fallback, the table is tried again
	fellAt     time.Time // when the fallback began
	probing    bool      // a probe of the table is under way
	shares     shares
	demand     [NumRanks]rate
}

// block is tokens of one lease, leased at rank rank (at, until: their
// life). A call of rank r takes tokens leased at rank r or a lower one
// (below it in the order); those leased for the ranks above it only in
// the last third of their life, when nobody above has taken them: tokens
// leased from the top of the bucket are not spent on lower ranks while
// they may still serve the calls they were leased for.
type block struct {
	n         int
	rank      Rank
	at, until time.Time
}

// usable reports whether a call of rank r may take b's tokens at now.
func (b *block) usable(r Rank, now time.Time) bool {
	if b.n == 0 || !now.Before(b.until) {
		return false
	}
	return b.rank >= r || now.After(b.sharedAt())
}

// sharedAt returns when b's tokens may go to the ranks below the one they
// were leased for: the last third of their life.
func (b *block) sharedAt() time.Time { return b.until.Add(-b.until.Sub(b.at) / 3) }

// waiter is a call waiting for a token.
type waiter struct {
	rank     Rank
	account  string
	arrived  time.Time
	deadline time.Time    // its ctx's, zero: none
	done     chan verdict // one verdict
}

// verdict is what a waiting call is told: granted (zero), or refused: no
// token can come before the call's deadline; it may come at next.
type verdict struct {
	refused bool
	next    time.Time
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
	burstTime := time.Duration(float64(burst) / cfg.Limit.PerSecond * float64(time.Second))
	if cfg.LeaseFor <= 0 {
		cfg.LeaseFor = min(max(burstTime/3, minLeaseFor), maxLeaseFor)
	}
	// The bucket's depth plus a lease's life is the provider's burst in
	// time, so a process spending its leased tokens late never bunches
	// more calls in a window than the provider allows.
	perShard := cfg.Limit.PerSecond / float64(shards)
	depth := max(burstTime-cfg.LeaseFor, cfg.LeaseFor/2)
	shape := Shape{Rate: perShard, Depth: depth}
	g := &governor{name: p.Name(), table: cfg.Table, shape: shape, leaseFor: cfg.LeaseFor, timeout: cfg.TableTimeout,
		retry: cfg.RetryTable, m: cfg.Metrics, log: cfg.Log, clock: cfg.Clock, sleep: cfg.Sleep,
		maxLease: max(1, int(maxLeaseShare*depth.Seconds()*shape.Rate)), cache: make([]State, shards), seen: make([]time.Time, shards),
		shard: rand.IntN(shards), wake: [lanes]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}}
	for i := range shards {
		g.keys = append(g.keys, fmt.Sprintf("%s#%d", cfg.Key, i))
	}
	// The fallback's bucket is a tenth of a second deep (one token at
	// least), and starts empty (toFallback): the fleet's calls emptied the
	// provider's bucket when the table went slow, so the processes must
	// not start their fallback with a burst each.
	fbRate := cfg.Limit.PerSecond * cfg.Fallback
	g.local = Shape{Rate: fbRate, Depth: time.Duration(math.Ceil(fbRate/10) / fbRate * float64(time.Second))}
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

// admit waits for a token for a call of class c on ctx's account: one
// leased from the table, or, in fallback, from the per-process bucket
// (the same queue either way, so a call waiting when the table comes back
// gets a token of the table's). Errors: ctx ended first, or its deadline
// comes before the next token (transient, Refused).
func (g *governor) admit(ctx context.Context, c lifecycle.CallPriority, op, sandboxID string) error {
	if err := ctx.Err(); err != nil {
		g.m.CallRefused(g.name, c)
		return refused(op, sandboxID, 0, fmt.Errorf("no provider call token: %w", err))
	}
	g.mu.Lock()
	now := g.now()
	if g.inFallback(now) {
		g.probe(now)
	}
	r := RankOf(c, g.shares.arrive(c, lifecycle.CallAccountOf(ctx), now))
	g.demand[r].add(now, 1)
	if g.ahead(r) == 0 && g.take(r, now) {
		g.kick(now, r)
		g.mu.Unlock()
		g.m.CallGranted(g.name, c, 0)
		return nil
	}
	w := &waiter{rank: r, account: lifecycle.CallAccountOf(ctx), arrived: now, done: make(chan verdict, 1)}
	w.deadline, _ = ctx.Deadline()
	g.waiting[r].push(w)
	g.nwaiting++
	g.kick(now, r)
	g.mu.Unlock()

	select {
	case v := <-w.done:
		if v.refused {
			g.m.CallRefused(g.name, c)
			return refused(op, sandboxID, max(0, v.next.Sub(g.now())),
				fmt.Errorf("fleet provider call limit: the next token for class %s comes at %s, after the call's deadline", r, v.next.Format(time.RFC3339Nano)))
		}
		g.m.CallGranted(g.name, c, max(0, g.now().Sub(now)))
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if g.waiting[r].remove(w) {
			g.nwaiting--
			g.mu.Unlock()
			g.m.CallRefused(g.name, c)
			return refused(op, sandboxID, g.shape.interval(State{}, now),
				fmt.Errorf("waiting for a fleet provider call token (class %s): %w", r, ctx.Err()))
		}
		g.mu.Unlock()
		v := <-w.done // granted meanwhile: give the token back
		if !v.refused {
			g.mu.Lock()
			now := g.now()
			g.blocks = append(g.blocks, block{n: 1, rank: r, at: now, until: now.Add(g.leaseFor)})
			g.dispatch(g.now())
			g.mu.Unlock()
		}
		g.m.CallRefused(g.name, c)
		return refused(op, sandboxID, 0, fmt.Errorf("waiting for a fleet provider call token: %w", ctx.Err()))
	}
}

// inFallback reports whether the lease loops lease from the per-process
// bucket instead of the table; g.mu held. They do until a probe of the
// table (probe) finds it answering.
func (g *governor) inFallback(time.Time) bool { return g.fallbackOn }

// probe starts, once RetryTable has passed since the table last failed, a
// lease of one token in the background (calls go on through the
// fallback meanwhile): its answer ends the fallback, its failure moves
// retryAt on; g.mu held.
//
// The probe finds the bucket full when nobody leased from it during the
// outage (the fleet was in fallback too), but the fleet's per-process
// limiters went on spending the provider's budget meanwhile, at about
// its limit when they are many: so the probe takes a full bucket's depth
// with its token (outageHold), and the fleet leases again at the rate,
// not its burst on a provider whose own burst is spent. A bucket some
// process leases from already (not full) is left as it is.
func (g *governor) probe(now time.Time) {
	if g.probing || now.Before(g.retryAt) || g.table == nil {
		return
	}
	g.probing = true
	shard := g.shard
	t := Take{Key: g.keys[shard], Now: now, Full: true, Delta: g.outageHold(now), CutAt: g.cache[shard].CutAt, Tokens: 1}
	go func() {
		defer func() {
			g.mu.Lock()
			g.probing = false
			g.mu.Unlock()
		}()
		st, applied, err := g.probeTake(t)
		if err == nil && !applied && !st.TAT.After(t.Now) && !st.CutAt.Equal(t.CutAt) {
			t.CutAt = st.CutAt // full, but cut since this process last saw it: once more with its cut
			st, applied, err = g.probeTake(t)
		}
		if err != nil {
			g.toFallback(err)
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		g.cache[shard], g.seen[shard] = st, g.now()
		g.backFromFallback()
		if applied {
			g.blocks = append(g.blocks, block{n: t.Tokens, rank: NumRanks - 1, at: t.Now, until: t.Now.Add(g.leaseFor)})
		}
	}()
}

// probeTake is one probe's update, within the table timeout.
func (g *governor) probeTake(t Take) (State, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	return g.table.Take(ctx, t)
}

// outageHold returns how far ahead of now a probe at now pushes a full
// bucket's TAT: the bucket's depth (the provider's burst the fallback may
// have spent), at most the time since the fallback began, at least one
// token's time; g.mu held.
func (g *governor) outageHold(now time.Time) time.Duration {
	iv := g.shape.interval(g.cache[g.shard], now)
	return max(iv, min(g.shape.Depth, now.Sub(g.fellAt)))
}

// ahead returns how many calls wait at rank r or above; g.mu held.
func (g *governor) ahead(r Rank) int {
	n := 0
	for i := range r + 1 {
		n += g.waiting[i].n
	}
	return n
}

// take takes one leased token a call of rank r may use at now (the
// oldest), dropping spent and expired blocks; g.mu held.
func (g *governor) take(r Rank, now time.Time) bool {
	g.blocks = slices.DeleteFunc(g.blocks, func(b block) bool { return b.n == 0 || !now.Before(b.until) })
	for i := range g.blocks {
		if b := &g.blocks[i]; b.usable(r, now) {
			b.n--
			return true
		}
	}
	return false
}

// tokens returns the leased tokens a call of rank r may use at now; g.mu
// held.
func (g *governor) tokens(r Rank, now time.Time) int {
	n := 0
	for i := range g.blocks {
		if b := &g.blocks[i]; b.usable(r, now) {
			n += b.n
		}
	}
	return n
}

// dispatch hands leased tokens to the waiting calls, the lowest rank
// first, accounts in turn within a rank; g.mu held.
func (g *governor) dispatch(now time.Time) {
	for r := range NumRanks {
		for g.waiting[r].n > 0 && g.take(r, now) {
			w := g.waiting[r].pop()
			g.nwaiting--
			w.done <- verdict{}
		}
	}
}

// toFallback puts the governor in fallback after the table failed: the
// lease loops lease from the per-process bucket, empty to start with, until
// a probe, RetryTable later, finds the table answering again; the tokens
// leased from the table are dropped.
func (g *governor) toFallback(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	g.retryAt = now.Add(g.retry)
	if g.fallbackOn {
		return
	}
	g.fallbackOn, g.fellAt = true, now
	g.blocks = nil
	g.own = State{TAT: now.Add(g.local.Depth)}
	g.wakeAll()
	g.log.Warn("governor: the table is slow or unavailable; calls take tokens of the per-process bucket",
		"provider", g.name, "retry_in", g.retry, "err", err)
	g.m.Fallback(g.name, true)
}

// backFromFallback leaves fallback after the table answered; g.mu held.
func (g *governor) backFromFallback() {
	if !g.fallbackOn {
		return
	}
	g.fallbackOn = false
	g.wakeAll()
	g.log.Info("governor: the table answers again; calls lease from it", "provider", g.name)
	g.m.Fallback(g.name, false)
}

// wakeAll wakes the lease loops waiting, to lease from where the tokens
// come from now (the table, or the per-process bucket); g.mu held.
func (g *governor) wakeAll() {
	for l := range lanes {
		select {
		case g.wake[l] <- struct{}{}:
		default:
		}
	}
}

// leaseLocal leases rank r up to want tokens (at least one) from the
// per-process bucket at now, or returns when the first comes; g.mu held.
// The bucket is too shallow for the ranks' depths: the queue's order
// (dispatch) alone orders the ranks in fallback.
func (g *governor) leaseLocal(r Rank, want int, now time.Time) (time.Time, bool) {
	t, next, ok := g.local.plan("", g.own, now, 0, want, 1)
	if !ok {
		return next, false
	}
	g.own, _ = t.Apply(g.own)
	g.blocks = append(g.blocks, block{n: t.Tokens, rank: r, at: now, until: now.Add(g.leaseFor)})
	return time.Time{}, true
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
		g.cache[i], g.seen[i] = st, g.now()
		g.mu.Unlock()
	}
}
