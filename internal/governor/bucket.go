package governor

import (
	"math"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Rank is a call's place in the fleet's order: its class
// (lifecycle.CallPriority) and whether its account is over its fair share of
// the class (2 × class + 1 when over). Lower ranks go first.
type Rank uint8

// NumRanks is how many ranks there are.
const NumRanks = Rank(2 * lifecycle.NumCallPriorities)

// RankOf returns the rank of a call of class c whose account is over its
// fair share of the class (over) or not.
func RankOf(c lifecycle.CallPriority, over bool) Rank {
	r := Rank(2 * min(c, lifecycle.NumCallPriorities-1))
	if over {
		r++
	}
	return r
}

// Class returns r's class.
func (r Rank) Class() lifecycle.CallPriority { return lifecycle.CallPriority(r / 2) }

// Over reports whether r is the rank of an account over its fair share.
func (r Rank) Over() bool { return r%2 == 1 }

// String is "<class>" or "<class>, over share".
func (r Rank) String() string {
	if r.Over() {
		return r.Class().String() + ", over share"
	}
	return r.Class().String()
}

// rankDepth is each rank's share of the bucket's depth: how far ahead of
// now a lease of that rank may push the bucket's theoretical arrival time.
// The top of the bucket is kept for the ranks above: while background calls
// drain it to 60 % of its depth, a user call still finds 40 % of it; a
// class never takes a token a higher one asks for while it waits.
var rankDepth = [NumRanks]float64{1, 0.85, 0.6, 0.5, 0.3, 0.2}

// The rate's additive increase and multiplicative decrease (AIMD) after a
// provider's 429 (ours, TCP's shape): the fleet's rate is cut to
// cutFactor × its rate at the time, at most once per cutHoldoff (a burst of
// 429s is one signal), never below minFactor, and climbs back by
// climbPerSecond of the limit each second.
const (
	cutFactor      = 0.5
	cutHoldoff     = time.Second
	minFactor      = 0.05
	climbPerSecond = 0.02
)

// State is one bucket shard as the table stores it: a generic cell rate
// algorithm's theoretical arrival time (TAT: the bucket holds
// (now − TAT) × rate tokens, at most its depth's worth, when TAT is before
// now, none when after) and the last cut of its rate (AIMD).
type State struct {
	// TAT is the theoretical arrival time; zero: the bucket is full.
	TAT time.Time
	// CutAt is when the rate was last cut (zero: never) and CutTo the
	// share of the limit it was cut to.
	CutAt time.Time
	CutTo float64
}

// Factor returns the share of the limit the rate is at now: CutTo after a
// cut, climbing back by climbPerSecond a second, 1 at most.
func (s State) Factor(now time.Time) float64 {
	if s.CutAt.IsZero() {
		return 1
	}
	return min(1, max(minFactor, s.CutTo+climbPerSecond*max(0, now.Sub(s.CutAt).Seconds())))
}

// Shape is a bucket shard's rate and depth.
type Shape struct {
	// Rate is the tokens a second at a factor of 1.
	Rate float64
	// Depth is how far ahead of now the top rank may push the TAT: the
	// bucket's burst in time, Depth × Rate tokens.
	Depth time.Duration
}

// interval returns the time one token takes at s's factor at now.
func (sh Shape) interval(s State, now time.Time) time.Duration {
	return time.Duration(float64(time.Second) / (sh.Rate * s.Factor(now)))
}

// depth returns how far ahead of now rank r may push the TAT.
func (sh Shape) depth(r Rank) time.Duration {
	return time.Duration(float64(sh.Depth) * rankDepth[min(r, NumRanks-1)])
}

// Take is one lease as one conditional update of a shard: either the TAT
// moves by Delta while it lies within [Now, Max] (Full false), or, when
// the bucket is full (its TAT before Now, or none), it is set to Now +
// Delta (Full true); both only while the shard's last cut is CutAt, the
// cut the caller's interval was computed at. Tokens is what the update
// grants.
type Take struct {
	Key    string
	Now    time.Time
	Full   bool
	Delta  time.Duration
	Max    time.Time
	CutAt  time.Time
	Tokens int
}

// plan returns the Take that grants rank r up to want tokens, and at least
// least of them, at now on a shard last seen in state s, or, when fewer
// fit, when least would: the TAT must stay within rank r's depth of now.
func (sh Shape) plan(key string, s State, now time.Time, r Rank, want, least int) (Take, time.Time, bool) {
	iv := sh.interval(s, now)
	full := !s.TAT.After(now)
	from := s.TAT
	if full {
		from = now
	}
	least = max(1, min(least, want))
	room := int(math.Floor(float64(now.Add(sh.depth(r)).Sub(from)) / float64(iv)))
	if full && room < 1 {
		room = 1 // a full bucket gives any rank a token, however shallow its share of a small burst
	}
	if room < least {
		next := from.Add(time.Duration(least) * iv).Add(-sh.depth(r))
		if least == 1 && from.Before(next) {
			next = from // it is full then
		}
		return Take{}, next, false
	}
	n := min(want, room)
	delta := time.Duration(n) * iv
	return Take{Key: key, Now: now, Full: full, Delta: delta, Max: now.Add(sh.depth(r)).Add(-delta), CutAt: s.CutAt, Tokens: n}, time.Time{}, true
}

// Apply is t on a shard in state s, as the table applies it: the state
// after and whether its condition held. MemTable uses it; the DynamoDB
// table states the same condition in its update.
func (t Take) Apply(s State) (State, bool) {
	if !s.CutAt.Equal(t.CutAt) {
		return s, false
	}
	if t.Full {
		if s.TAT.After(t.Now) {
			return s, false
		}
		s.TAT = t.Now.Add(t.Delta)
		return s, true
	}
	if s.TAT.Before(t.Now) || s.TAT.After(t.Max) {
		return s, false
	}
	s.TAT = s.TAT.Add(t.Delta)
	return s, true
}

// Cut is a provider's 429 recorded on a shard: the rate cut to To of the
// limit at At, unless the shard's last cut is after NotAfter (one cut per
// cutHoldoff); and the TAT pushed to at least Until, so that no lease is
// granted before Until minus the depth (a Retry-After).
type Cut struct {
	Key      string
	At       time.Time
	To       float64
	NotAfter time.Time
	Until    time.Time
}

// Apply is c on a shard in state s: the state after.
func (c Cut) Apply(s State) State {
	if s.CutAt.IsZero() || !s.CutAt.After(c.NotAfter) {
		s.CutAt, s.CutTo = c.At, c.To
	}
	if s.TAT.Before(c.Until) {
		s.TAT = c.Until
	}
	return s
}

// cutFor returns the Cut a 429 at now asks of a shard last seen in state s,
// with the provider's Retry-After ra (0: none).
func (sh Shape) cutFor(key string, s State, now time.Time, ra time.Duration) Cut {
	c := Cut{Key: key, At: now, To: max(minFactor, s.Factor(now)*cutFactor), NotAfter: now.Add(-cutHoldoff)}
	if ra > 0 {
		c.Until = now.Add(ra).Add(sh.Depth)
	}
	return c
}

// Bucket is one bucket of the fleet's governor in memory, on its caller's
// clock: the leases' arithmetic (Shape, State, Take) without a table or
// processes, for simulations (the cost replay drives one).
type Bucket struct {
	Shape Shape
	State State
}

// Lease grants rank r up to want tokens (at least one) at now and returns
// how many; 0 and when the first would fit when none does.
func (b *Bucket) Lease(now time.Time, r Rank, want int) (int, time.Time) {
	t, next, ok := b.Shape.plan("", b.State, now, r, max(want, 1), 1)
	if !ok {
		return 0, next
	}
	b.State, _ = t.Apply(b.State)
	return t.Tokens, time.Time{}
}
