package governor

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Two lease loops run per governor, one lane each: the user ranks' (their
// waiting calls, and leases ahead of their demand) and the others', so that
// a user call never waits behind a background lease's back-off.
const (
	userLane = 0
	restLane = 1
	lanes    = 2
)

// laneOf returns rank r's lane.
func laneOf(r Rank) int {
	if r.Class() == lifecycle.PriorityUser {
		return userLane
	}
	return restLane
}

// kick starts rank r's lane's lease loop when calls of the lane wait, or,
// for the user lane, when the tokens users may take run low for their
// recent demand (a lease ahead, so that they find a token), unless it runs;
// a running loop working for a lower rank than r, or waiting idle for its
// next lease ahead (leaseRank idle), is woken to lease for r. g.mu held.
func (g *governor) kick(now time.Time, r Rank) {
	l := laneOf(r)
	if g.leasing[l] {
		if r < g.leaseRank[l] && (g.leaseRank[l] != idle || g.busy(l, now)) {
			select {
			case g.wake[l] <- struct{}{}:
			default:
			}
		}
		return
	}
	if !g.busy(l, now) {
		return
	}
	g.leasing[l] = true
	go g.leaseLoop(l)
}

// busy reports whether lane l has work: calls waiting, or (the user lane)
// user tokens running low; g.mu held.
func (g *governor) busy(l int, now time.Time) bool {
	for r := range NumRanks {
		if laneOf(r) == l && g.waiting[r].n > 0 {
			return true
		}
	}
	return l == userLane && g.low(now)
}

// low reports whether the tokens kept for the user calls fall short, a
// lease's answer time from now (lead), of what they are likely to need
// while a lease asked now comes back (reserve): tokens the user calls
// spend, and tokens that reach the last third of their life meanwhile
// (when the ranks below take them, or expire), both count. User calls
// then find a token without waiting for the table; g.mu held.
func (g *governor) low(now time.Time) bool {
	d := g.userDemand(now)
	return d >= 0.5 && float64(g.kept(now, now.Add(g.lead()))) < g.reserve(d)
}

// lead returns how long a lease is likely to take: the table's slow
// answers of late, at least 20 ms, at most half a lease's life; g.mu held.
func (g *governor) lead() time.Duration {
	return min(max(g.slow, 20*time.Millisecond), g.leaseFor/2)
}

// reserve returns the user tokens to keep at hand for a demand of d calls a
// second: the calls of a lease's answer time (lead) and three deviations
// of their arrivals, and one more; g.mu held.
func (g *governor) reserve(d float64) float64 {
	n := d * g.lead().Seconds()
	return n + 3*math.Sqrt(n) + 1
}

// kept returns the tokens leased for the user ranks that are still theirs
// alone at at (not yet shared with the ranks below: block.sharedAt); g.mu
// held.
func (g *governor) kept(now, at time.Time) int {
	n := 0
	for i := range g.blocks {
		if b := &g.blocks[i]; b.n > 0 && b.rank.Class() == lifecycle.PriorityUser && now.Before(b.until) && at.Before(b.sharedAt()) {
			n += b.n
		}
	}
	return n
}

// idle is the leaseRank of a user lease loop waiting for its next lease
// ahead (refreshAt).
const idle = NumRanks

// refreshAt returns when the user lane's next lease ahead is due, at the
// latest, while the lane has no work at now: a lease's answer time (lead)
// before the kept tokens reach the last third of their life, so that a
// fresh block is at hand when they go to the ranks below (and, within
// half a lease's life, to look at the demand again); false when the user
// calls are too few for a block to serve one of them in its kept two
// thirds of life (each call then leases when it finds no token, as a
// process that makes a call now and then does). g.mu held.
func (g *governor) refreshAt(l int, now time.Time) (time.Time, bool) {
	d := g.userDemand(now)
	if l != userLane || d*(g.leaseFor*2/3).Seconds() < 1 {
		return time.Time{}, false
	}
	at := now.Add(g.leaseFor / 2)
	for i := range g.blocks {
		if b := &g.blocks[i]; b.n > 0 && b.rank.Class() == lifecycle.PriorityUser {
			if due := b.sharedAt().Add(-g.lead()); due.After(now) && due.Before(at) {
				at = due
			}
		}
	}
	return at, true
}

// userDemand returns the user calls' recent rate; g.mu held.
func (g *governor) userDemand(now time.Time) float64 {
	return g.demand[RankOf(lifecycle.PriorityUser, false)].perSecond(now) + g.demand[RankOf(lifecycle.PriorityUser, true)].perSecond(now)
}

// want returns the rank and size of lane l's next lease, and whether it is
// ahead of demand; g.mu held. For waiting calls: the lane's best waiting
// rank, for them and for the demand of that rank and above over a lease's
// life; ahead (no user call waits): the user class's lower rank (so that
// every user call may take them), for twice the reserve or 80 % of a
// lease's life of the user calls' demand, whichever is more.
func (g *governor) want(l int, now time.Time) (Rank, int, bool) {
	r, waiting := Rank(0), false
	for i := range NumRanks {
		if laneOf(i) == l && g.waiting[i].n > 0 {
			r, waiting = i, true
			break
		}
	}
	if !waiting {
		top := RankOf(lifecycle.PriorityUser, true) // usable by every user call
		// the demand until the next lease ahead is due (its tokens are
		// kept two thirds of a lease's life, the next one asked a lead
		// before that), and the reserve for that one's answer
		d := g.userDemand(now)
		lead := g.lead()
		n := int(math.Ceil(d*max(g.leaseFor*2/3-lead, lead).Seconds()+g.reserve(d))) - g.kept(now, now.Add(lead))
		return top, min(max(n, 1), g.maxLease), true
	}
	d := 0.0
	for i := range r + 1 {
		d += g.demand[i].perSecond(now)
	}
	n := max(int(math.Ceil(d*g.leaseFor.Seconds()))-g.tokens(r, now), g.ahead(r))
	return r, min(max(n, 1), g.maxLease), false
}

// leaseLoop leases tokens from the table (in fallback, from the
// per-process bucket) for lane l while its calls wait (or ahead of the
// user calls' demand), one lease at a time, and hands them out; it ends
// when the lane has no work.
func (g *governor) leaseLoop(l int) {
	conflicts, tried := 0, 0
	var soonest time.Time
	for {
		g.mu.Lock()
		now := g.now()
		g.dispatch(now)
		if !g.busy(l, now) {
			// The user lane stays, idle, while its calls are many enough:
			// its next lease ahead is due before the kept tokens are shared
			// or spent, not when a call finds none.
			at, ok := g.refreshAt(l, now)
			if !ok {
				g.leasing[l] = false
				g.mu.Unlock()
				return
			}
			g.leaseRank[l] = idle
			g.mu.Unlock()
			g.nap(l, at.Sub(now))
			continue
		}
		r, want, ahead := g.want(l, now)
		g.leaseRank[l] = r
		if g.inFallback(now) {
			next, ok := g.leaseLocal(r, want, now)
			g.mu.Unlock()
			switch {
			case ok:
			case ahead:
				g.stop(l)
				return
			default:
				g.refuseHopeless(r, next)
				g.nap(l, next.Sub(now))
			}
			continue
		}
		shard := g.shard
		s := g.cache[shard]
		if busy := s.TAT.Sub(g.seen[shard]); busy > 0 {
			// The bucket was busy when last seen: the other processes have
			// leased since, assume half of what it gained meanwhile, so as not
			// to ask for room that is likely taken (a failed update costs
			// a write too).
			s.TAT = s.TAT.Add(now.Sub(g.seen[shard]) / 2)
		}
		g.mu.Unlock()

		t, next, ok := g.shape.plan(g.keys[shard], s, now, r, want, leastOf(r, want))
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
				g.stop(l)
				return
			}
			g.refuseHopeless(r, soonest)
			g.backoff(l, soonest)
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
		g.latency = (g.latency*7 + took) / 8
		g.slow = max(took, g.slow*15/16)
		if st.TAT.After(g.cache[shard].TAT) || !st.CutAt.Equal(g.cache[shard].CutAt) {
			g.cache[shard], g.seen[shard] = st, g.now() // the other lane may have seen a later state
		}
		g.backFromFallback()
		if applied {
			g.blocks = append(g.blocks, block{n: t.Tokens, rank: r, at: t.Now, until: t.Now.Add(g.leaseFor)})
			g.fails[l], conflicts, tried, soonest = 0, 0, 0, time.Time{}
			g.shard = (shard + 1) % len(g.keys)
		}
		g.mu.Unlock()
		if applied {
			g.m.Leased(g.name, t.Tokens, took)
			continue
		}
		// The shard moved since this process last saw it (another lessee
		// took the room): plan again on what the table answered. The user
		// lane does so at once; the other, whose calls can wait, after a
		// jittered wait of up to a table answer's time, so that the
		// processes that lost a race do not run the next one together. A
		// few in a row: back off a little.
		if conflicts++; conflicts > 3 {
			conflicts = 0
			g.backoff(l, g.now())
		} else if l == restLane {
			g.mu.Lock()
			wait := time.Duration(rand.Int64N(int64(max(g.latency, time.Millisecond))))
			g.mu.Unlock()
			_ = g.sleep(context.Background(), wait)
		}
	}
}

// leastOf returns the fewest tokens a lease for rank r asking for want
// takes: a user call, over its account's share or not, takes what room
// there is (waiting for a block on a crowded bucket is waiting for the
// table again and again); the others wait for a block worth a write, half
// of what they ask, instead of polling for single tokens.
func leastOf(r Rank, want int) int {
	if r.Class() == lifecycle.PriorityUser {
		return 1
	}
	return max(1, want/2)
}

// advance moves to the next shard.
func (g *governor) advance() {
	g.mu.Lock()
	g.shard = (g.shard + 1) % len(g.keys)
	g.mu.Unlock()
}

// stop ends lane l's lease loop.
func (g *governor) stop(l int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leasing[l] = false
	// A call may have come while the lock was free: it found the loop
	// running, so start it again for it.
	for r := range NumRanks {
		if laneOf(r) == l && g.waiting[r].n > 0 {
			g.leasing[l] = true
			go g.leaseLoop(l)
			return
		}
	}
}

// backoff waits until at, and a jittered while more after refusals in a
// row (so that processes waiting on one bucket do not all ask at once),
// or until a call of a higher rank than lane l's loop works for comes.
func (g *governor) backoff(l int, at time.Time) {
	g.mu.Lock()
	g.fails[l]++
	spread := min(g.leaseFor/4, g.shape.interval(g.cache[g.shard], at)<<min(g.fails[l], 10))
	g.mu.Unlock()
	g.nap(l, max(0, at.Sub(g.now()))+time.Duration(rand.Int64N(int64(spread)+1)))
}

// nap waits d, or until lane l's loop is woken (kick).
func (g *governor) nap(l int, d time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-g.wake[l]:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = g.sleep(ctx, d)
}

// refuseHopeless refuses at once the waiting calls of rank r and the ranks
// below it in its lane whose deadline comes before next, when the first
// token for r may come: none of them can be let through in time.
func (g *governor) refuseHopeless(r Rank, next time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for rr := r; rr < NumRanks && laneOf(rr) == laneOf(r); rr++ {
		q := &g.waiting[rr]
		var hopeless []*waiter
		for _, ws := range q.byAccount {
			for _, w := range ws {
				if !w.deadline.IsZero() && w.deadline.Before(next) {
					hopeless = append(hopeless, w)
				}
			}
		}
		for _, w := range hopeless {
			if q.remove(w) {
				g.nwaiting--
				w.done <- verdict{refused: true, next: next}
			}
		}
	}
}
