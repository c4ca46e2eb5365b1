package governor

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The rules of the user lane's leases ahead and of a probe after an
// outage, on a manual clock, inside the package: a governor of a 200/s
// provider with a 2 s burst (a lease's life 667 ms: its tokens are kept
// for the user calls 444 ms, then shared).

// nopProvider is a lifecycle.Provider that answers every call at once.
type nopProvider struct{}

func (nopProvider) Name() string { return "nop" }
func (nopProvider) Create(context.Context, lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, nil
}
func (nopProvider) Get(context.Context, string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, nil
}
func (nopProvider) List(context.Context, lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, nil
}
func (nopProvider) Pause(context.Context, string) error { return nil }
func (nopProvider) Resume(context.Context, string, time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, nil
}
func (nopProvider) SetTimeout(context.Context, string, time.Duration) error { return nil }
func (nopProvider) Probe(context.Context, string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, nil
}
func (nopProvider) Kill(context.Context, string) error { return nil }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testGovernor returns a governor of a 200/s provider (burst 400) on
// table, on a manual clock at t0, whose user calls come at perSecond and
// whose table answered its leases of late in slow.
func testGovernor(table Table, perSecond float64, slow time.Duration) *governor {
	g := newGovernor(nopProvider{}, Config{Limit: calllimit.Limit{PerSecond: 200, Burst: 400}, Table: table,
		Clock: lifecycle.NewManualClock(t0)})
	g.demand[RankOf(lifecycle.PriorityUser, false)] = rate{v: perSecond, at: t0}
	g.slow = slow
	return g
}

// TestUserTokensRunLowBeforeTheyAreShared: the user calls' kept tokens
// are those still theirs alone a lease's answer time ahead. Six tokens
// leased ahead at t0 (kept until 444 ms) cover 10 calls a second on a
// table answering in 50 ms, until 394 ms: then the lane is low although
// no call took one, so the next lease ahead is asked while these are
// still the user calls', not when a call finds none. Tokens leased for
// the background ranks are not the user calls' reserve.
func TestUserTokensRunLowBeforeTheyAreShared(t *testing.T) {
	g := testGovernor(&MemTable{}, 10, 50*time.Millisecond)
	if g.leaseFor != 2*time.Second/3 {
		t.Fatalf("a lease's life is %v, want 667 ms", g.leaseFor)
	}
	g.blocks = []block{{n: 6, rank: RankOf(lifecycle.PriorityUser, true), at: t0, until: t0.Add(g.leaseFor)},
		{n: 100, rank: RankOf(lifecycle.PriorityBackground, false), at: t0, until: t0.Add(g.leaseFor)}}
	if g.low(t0) {
		t.Errorf("low at t0 with 6 kept tokens, want not (reserve %.2f)", g.reserve(10))
	}
	for _, at := range []time.Duration{390 * time.Millisecond, 400 * time.Millisecond} {
		g.demand[0] = rate{v: 10, at: t0.Add(at)} // the calls go on coming
		if low := g.low(t0.Add(at)); low != (at > 394*time.Millisecond) {
			t.Errorf("low at %v = %v, want %v: the 6 tokens are shared from 444 ms, a 50 ms lease before", at, low, !low)
		}
	}
	g.demand[0] = rate{v: 10, at: t0}
	due, ok := g.refreshAt(userLane, t0.Add(100*time.Millisecond))
	if want := g.blocks[0].sharedAt().Add(-50 * time.Millisecond); !ok || !due.Equal(want) {
		t.Errorf("next lease ahead due at %v (%v), want %v: a 50 ms lease before the kept tokens are shared", due.Sub(t0), ok, want.Sub(t0))
	}
	if due, _ := g.refreshAt(userLane, t0); !due.Equal(t0.Add(g.leaseFor / 2)) {
		t.Errorf("next look at t0: %v, want within half a lease's life (333 ms)", due.Sub(t0))
	}
}

// TestALeaseAheadCoversTheUserCallsUntilTheNext: a lease ahead asks for
// the user calls' demand until the next one is due and the reserve for
// that one's answer, less the tokens still kept then: on a table answering
// in 50 ms, 10 calls a second take 8 (3.94 until the next + a 3.62
// reserve); on one answering in a second, 14 (the lead is capped at half
// a lease's life, 333 ms: 3.33 + 9.81), not twice the reserve (20), which
// the processes of a fleet would lease only to hand most of it to the
// background calls, crowding the top of the bucket the user calls lease
// from.
func TestALeaseAheadCoversTheUserCallsUntilTheNext(t *testing.T) {
	for _, tc := range []struct {
		slow time.Duration
		kept int
		want int
	}{{50 * time.Millisecond, 0, 8}, {50 * time.Millisecond, 3, 5}, {time.Second, 0, 14}} {
		g := testGovernor(&MemTable{}, 10, tc.slow)
		if tc.kept > 0 {
			g.blocks = []block{{n: tc.kept, rank: RankOf(lifecycle.PriorityUser, false), at: t0, until: t0.Add(g.leaseFor)}}
		}
		r, n, ahead := g.want(userLane, t0)
		if r != RankOf(lifecycle.PriorityUser, true) || !ahead || n != tc.want {
			t.Errorf("table %v, %d kept: lease ahead %d at rank %s (ahead %v), want %d at rank user, over share",
				tc.slow, tc.kept, n, r, ahead, tc.want)
		}
	}
}

// TestFewUserCallsLeaseWhenTheyFindNoToken: a process whose user calls
// are too few for a block to serve one of them while it is kept (2 a
// second: 0.9 a block) does not lease ahead on a timer; its lane's loop
// ends when no call waits.
func TestFewUserCallsLeaseWhenTheyFindNoToken(t *testing.T) {
	g := testGovernor(&MemTable{}, 2, 50*time.Millisecond)
	if _, ok := g.refreshAt(userLane, t0); ok {
		t.Error("a lease ahead is due for 2 user calls a second, want none")
	}
	g = testGovernor(&MemTable{}, 3, 50*time.Millisecond)
	if _, ok := g.refreshAt(userLane, t0); !ok {
		t.Error("no lease ahead due for 3 user calls a second (1.3 a block), want one")
	}
	if _, ok := g.refreshAt(restLane, t0); ok {
		t.Error("the background lane leases ahead, want only the user lane")
	}
}

// TestAnIdleUserLoopIsWokenOnlyForWork: the user lane's loop waiting for
// its next lease ahead is not woken by a user call that finds its token,
// only when the lane has work (a call waits, or the kept tokens run low).
func TestAnIdleUserLoopIsWokenOnlyForWork(t *testing.T) {
	g := testGovernor(&MemTable{}, 10, 50*time.Millisecond)
	g.leasing[userLane], g.leaseRank[userLane] = true, idle
	g.blocks = []block{{n: 20, rank: RankOf(lifecycle.PriorityUser, true), at: t0, until: t0.Add(g.leaseFor)}}
	g.kick(t0, RankOf(lifecycle.PriorityUser, false))
	select {
	case <-g.wake[userLane]:
		t.Error("the idle loop was woken with 20 kept tokens")
	default:
	}
	g.blocks[0].n = 1
	g.kick(t0, RankOf(lifecycle.PriorityUser, false))
	select {
	case <-g.wake[userLane]:
	default:
		t.Error("the idle loop was not woken with 1 kept token for 10 calls a second")
	}
}

// TestAProbeAfterAnOutageTakesTheBucketsDepth: a process back from 5 s in
// fallback finds the bucket full (nobody leased from it meanwhile) and
// takes its whole depth with its probe's token: the fleet's fallback spent
// the provider's burst, so leases start again at the rate. After 300 ms in
// fallback it takes 300 ms; a bucket another process leases from already
// is left as it is (the probe's token is not granted).
func TestAProbeAfterAnOutageTakesTheBucketsDepth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    time.Duration
		tat    time.Time // the bucket's before the probe
		wantAt time.Time // after
	}{
		{"full, 5 s out", 5 * time.Second, time.Time{}, t0.Add(4 * time.Second / 3)},
		{"full, 300 ms out", 300 * time.Millisecond, t0.Add(-time.Second), t0.Add(300 * time.Millisecond)},
		{"leased from", 5 * time.Second, t0.Add(200 * time.Millisecond), t0.Add(200 * time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &MemTable{}
			g := testGovernor(tb, 10, 0)
			if !tc.tat.IsZero() {
				tb.shards = map[string]State{g.keys[0]: {TAT: tc.tat}}
			}
			g.fallbackOn, g.fellAt, g.retryAt = true, t0.Add(-tc.out), t0
			g.mu.Lock()
			g.probe(t0)
			g.mu.Unlock()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				g.mu.Lock()
				done := !g.probing
				g.mu.Unlock()
				if done {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the probe never ended")
				}
			}
			if g.fallbackOn {
				t.Fatal("still in fallback after the table answered the probe")
			}
			got := tb.shards[g.keys[0]].TAT
			if d := got.Sub(tc.wantAt); math.Abs(float64(d)) > float64(time.Millisecond) {
				t.Errorf("the bucket's TAT is %v after the probe, want %v", got.Sub(t0), tc.wantAt.Sub(t0))
			}
			if granted := len(g.blocks) > 0; granted != !tc.tat.After(t0) {
				t.Errorf("the probe's token granted: %v, want %v", granted, !granted)
			}
		})
	}
}

// TestAUserLeaseTakesWhatRoomThereIs: a lease for user calls, of an
// account over its share too, takes a single token when that is the room
// the bucket has at its rank; a background or refresh lease waits for
// half of what it asks.
func TestAUserLeaseTakesWhatRoomThereIs(t *testing.T) {
	for r := range NumRanks {
		want := 10
		if r.Class() == lifecycle.PriorityUser {
			want = 1
		}
		if got := leastOf(r, 20); got != want {
			t.Errorf("rank %s takes at least %d of 20, want %d", r, got, want)
		}
	}
	sh := Shape{Rate: 200, Depth: time.Second}
	over := RankOf(lifecycle.PriorityUser, true)
	// room for one token at the over-share rank's depth (85 %): the TAT 845 ms ahead
	s := State{TAT: t0.Add(845 * time.Millisecond)}
	if tk, _, ok := sh.plan("k", s, t0, over, 10, leastOf(over, 10)); !ok || tk.Tokens != 1 {
		t.Errorf("an over-share user lease with room for 1: %+v, %v; want 1 token", tk, ok)
	}
}
