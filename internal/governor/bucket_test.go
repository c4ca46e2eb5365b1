package governor

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLeasesNeverExceedTheRateAndDepth: 8 lessees asking for blocks of 1
// to 12 tokens at random ranks, one of them every millisecond for 20 s of
// simulated time, on one bucket of 100 tokens a second and 0.5 s deep: in
// every window of w the tokens granted are at most depth × rate + rate × w
// (+ one block), and over the run they are the rate within the depth: the
// bucket neither lets the fleet through faster than its rate nor wastes it
// while it is asked for.
func TestLeasesNeverExceedTheRateAndDepth(t *testing.T) {
	sh := Shape{Rate: 100, Depth: 500 * time.Millisecond}
	tb := &MemTable{}
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cache := make([]State, 8)
	type grant struct {
		at time.Time
		n  int
	}
	var grants []grant
	const run = 20 * time.Second
	for ms := time.Duration(0); ms < run; ms += time.Millisecond {
		now := t0.Add(ms)
		i := rng.IntN(len(cache))
		r := Rank(rng.IntN(int(NumRanks)))
		for try := 0; try < 3; try++ {
			tk, _, ok := sh.plan("p#0", cache[i], now, r, 1+rng.IntN(12), 1)
			if !ok {
				break
			}
			s, applied, _ := tb.Take(context.Background(), tk)
			cache[i] = s
			if applied {
				grants = append(grants, grant{now, tk.Tokens})
				break
			}
		}
	}
	total := 0
	for _, g := range grants {
		total += g.n
	}
	if want := sh.Rate * run.Seconds(); float64(total) > want+sh.Rate*sh.Depth.Seconds() || float64(total) < want {
		t.Errorf("%d tokens granted in %s, want the rate's %.0f (+ the depth's %.0f at most)", total, run, want, sh.Rate*sh.Depth.Seconds())
	}
	for _, w := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second, 5 * time.Second} {
		allowed := sh.Rate*sh.Depth.Seconds() + sh.Rate*w.Seconds() + 12
		j, sum := 0, 0
		for i, g := range grants {
			sum += g.n
			for grants[j].at.Before(g.at.Add(-w)) {
				sum -= grants[j].n
				j++
			}
			if float64(sum) > allowed {
				t.Fatalf("%d tokens within %s ending at grant %d (%s), want at most %.0f", sum, w, i, g.at.Sub(t0), allowed)
			}
		}
	}
}

// TestRanksKeepTheTopOfTheBucketForTheRanksAbove: while every rank below
// asks for as many tokens as it can get, a user call still finds the
// bucket's top (40 % of its depth over background's, 15 % over an
// over-share user's), and each rank is refused where the one above it is
// not.
func TestRanksKeepTheTopOfTheBucketForTheRanksAbove(t *testing.T) {
	sh := Shape{Rate: 100, Depth: 500 * time.Millisecond}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := Rank(1); r < NumRanks; r++ {
		tb := &MemTable{}
		var s State
		for { // rank r drains the bucket as far as it may
			tk, _, ok := sh.plan("p#0", s, now, r, 1000, 1)
			if !ok {
				break
			}
			s, _, _ = tb.Take(context.Background(), tk)
		}
		for above := range r {
			tk, _, ok := sh.plan("p#0", s, now, above, 1000, 1)
			want := int((rankDepth[above] - rankDepth[r]) * sh.Depth.Seconds() * sh.Rate)
			if !ok || tk.Tokens < want-1 {
				t.Errorf("rank %s drained the bucket: rank %s gets %d tokens at once (ok %v), want about %d", r, above, tk.Tokens, ok, want)
			}
		}
		if _, at, ok := sh.plan("p#0", s, now, r, 1, 1); ok || !at.After(now) {
			t.Errorf("rank %s after draining its share: granted %v, next at %s", r, ok, at)
		}
	}
}

// TestACutSlowsTheBucketAndClimbsBack: after a 429 the rate is half, a
// second cut within the hold-off changes nothing, and it climbs back to
// the limit at 2 % of it a second.
func TestACutSlowsTheBucketAndClimbsBack(t *testing.T) {
	sh := Shape{Rate: 100, Depth: 500 * time.Millisecond}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := sh.cutFor("p#0", State{}, now, 3*time.Second).Apply(State{})
	if f := s.Factor(now); f != 0.5 {
		t.Errorf("factor after a cut %v, want 0.5", f)
	}
	if iv := sh.interval(s, now); iv != 20*time.Millisecond {
		t.Errorf("interval after a cut %v, want 20ms", iv)
	}
	if _, at, ok := sh.plan("p#0", s, now, 0, 1, 1); ok || at.Before(now.Add(3*time.Second)) {
		t.Errorf("a lease during the Retry-After: ok %v, next at %s; want none before 3 s", ok, at)
	}
	again := sh.cutFor("p#0", s, now.Add(500*time.Millisecond), 0).Apply(s)
	if again.CutAt != s.CutAt || again.CutTo != s.CutTo {
		t.Errorf("a second cut within the hold-off: %+v, want %+v", again, s)
	}
	if f := s.Factor(now.Add(10 * time.Second)); f < 0.69 || f > 0.71 {
		t.Errorf("factor 10 s after the cut %v, want 0.7", f)
	}
	if f := s.Factor(now.Add(time.Minute)); f != 1 {
		t.Errorf("factor a minute after %v, want 1", f)
	}
	got := slices.Collect(func(yield func(float64) bool) {
		for range 10 {
			s = sh.cutFor("p#0", s, s.CutAt.Add(2*time.Second), 0).Apply(s)
			if !yield(s.Factor(s.CutAt)) {
				return
			}
		}
	})
	if last := got[len(got)-1]; last < minFactor || last > 2*minFactor {
		t.Errorf("after 10 cuts in a row the factor is %v, want it held at the floor %v", last, minFactor)
	}
}
