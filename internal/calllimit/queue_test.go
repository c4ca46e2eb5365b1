package calllimit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var queueT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// drain releases q's held ticket at its time, again and again, until no
// call waits, and returns the tickets in the order they were granted.
func drain(q *Queue, held *Ticket) []*Ticket {
	var order []*Ticket
	for held != nil {
		order = append(order, q.Release(held, held.At)...)
		held = q.Held()
	}
	return order
}

// TestCallQueueGivesTheNextTokenToAUser: behind a held token, 10 pauses and
// 10 refreshes wait; a user call arriving last gets the next token, then
// the pauses go in arrival order, then the refreshes; the tokens come one
// interval apart.
func TestCallQueueGivesTheNextTokenToAUser(t *testing.T) {
	q := NewQueue(Limit{PerSecond: 10, Burst: 1})
	if first := q.Arrive(queueT0, lifecycle.PriorityBackground); !first.Granted() || !first.At.Equal(queueT0) {
		t.Fatalf("the first call: granted %v at %v, want at once", first.Granted(), first.At)
	}
	held := q.Arrive(queueT0, lifecycle.PriorityBackground)
	if !held.Granted() || held.At.Sub(queueT0) != 100*time.Millisecond {
		t.Fatalf("the second call: granted %v at %v, want the next token, 100 ms on", held.Granted(), held.At.Sub(queueT0))
	}
	var pauses, refreshes []*Ticket
	for range 10 {
		pauses = append(pauses, q.Arrive(queueT0, lifecycle.PriorityBackground))
		refreshes = append(refreshes, q.Arrive(queueT0, lifecycle.PriorityRefresh))
	}
	user := q.Arrive(queueT0.Add(50*time.Millisecond), lifecycle.PriorityUser)
	if got, want := q.Waiting(lifecycle.PriorityBackground)+q.Waiting(lifecycle.PriorityRefresh)+q.Waiting(lifecycle.PriorityUser), 21; got != want {
		t.Fatalf("%d calls wait, want %d", got, want)
	}

	order := drain(q, held)
	want := append(append([]*Ticket{user}, pauses...), refreshes...)
	if len(order) != len(want) {
		t.Fatalf("%d calls granted, want %d", len(order), len(want))
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("grant %d went to a %s call, want %s (the user first, then pauses, then refreshes, each in arrival order)",
				i, order[i].Priority, want[i].Priority)
		}
		if got, want := order[i].At.Sub(queueT0), time.Duration(i+2)*100*time.Millisecond; got != want {
			t.Errorf("grant %d at %v, want %v (one token per 100 ms)", i, got, want)
		}
	}
}

// TestCallQueueNeverServesALowerClassWhileAHigherWaits: 3,000 calls of
// random classes arriving at random times through a 50/s bucket: every
// token goes to the oldest call of the highest class waiting when it is
// given out, so no waiting call is passed over by a lower class or a later
// one of its own; and the tokens never come faster than the bucket allows.
func TestCallQueueNeverServesALowerClassWhileAHigherWaits(t *testing.T) {
	const perSecond, burst = 50.0, 4
	rng := rand.New(rand.NewPCG(7, 30))
	q := NewQueue(Limit{PerSecond: perSecond, Burst: burst})
	type arrival struct {
		at time.Duration
		p  lifecycle.CallPriority
	}
	var arrivals []arrival
	at := time.Duration(0)
	for range 3000 {
		at += time.Duration(rng.ExpFloat64() * float64(time.Second) / 70) // 70/s on average: over the limit
		arrivals = append(arrivals, arrival{at, lifecycle.CallPriority(rng.IntN(int(lifecycle.NumCallPriorities)))})
	}

	var waiting []*Ticket // in arrival order
	var grants []time.Time
	check := func(granted []*Ticket) {
		t.Helper()
		for _, g := range granted {
			best := -1
			for i, w := range waiting {
				if best < 0 || w.Priority < waiting[best].Priority {
					best = i
				}
			}
			if best < 0 || waiting[best] != g {
				t.Fatalf("a %s call was granted while an older or higher call waited", g.Priority)
			}
			waiting = append(waiting[:best], waiting[best+1:]...)
			grants = append(grants, g.At)
		}
	}
	for _, a := range arrivals {
		now := queueT0.Add(a.at)
		for q.Held() != nil && !q.Held().At.After(now) {
			check(q.Release(q.Held(), q.Held().At))
		}
		tk := q.Arrive(now, a.p)
		if tk.Granted() {
			grants = append(grants, tk.At)
			continue
		}
		waiting = append(waiting, tk)
	}
	for q.Held() != nil {
		check(q.Release(q.Held(), q.Held().At))
	}
	if len(waiting) != 0 || len(grants) != len(arrivals) {
		t.Fatalf("%d calls still wait, %d of %d granted", len(waiting), len(grants), len(arrivals))
	}
	for i := range grants {
		for j := i + 1; j < len(grants) && grants[j].Sub(grants[i]) < time.Second; j++ {
			if n, allowed := j-i+1, burst+int(perSecond); n > allowed {
				t.Fatalf("%d tokens within a second from %v, want at most %d", n, grants[i].Sub(queueT0), allowed)
			}
		}
	}
}

// TestCallQueueBurstIsUnchanged: a full bucket lets its depth of calls
// through at once whatever their class; the next call holds the next token.
func TestCallQueueBurstIsUnchanged(t *testing.T) {
	q := NewQueue(Limit{PerSecond: 10, Burst: 5})
	for i := range 5 {
		tk := q.Arrive(queueT0, lifecycle.CallPriority(i%int(lifecycle.NumCallPriorities)))
		if !tk.Granted() || !tk.At.Equal(queueT0) {
			t.Fatalf("call %d of the burst: granted %v at %v, want at once", i, tk.Granted(), tk.At.Sub(queueT0))
		}
	}
	tk := q.Arrive(queueT0, lifecycle.PriorityUser)
	if !tk.Granted() || tk.At.Sub(queueT0) != 100*time.Millisecond {
		t.Errorf("the call after the burst: granted %v at %v, want the next token at 100 ms", tk.Granted(), tk.At.Sub(queueT0))
	}
	if later := q.Arrive(queueT0, lifecycle.PriorityUser); later.Granted() {
		t.Errorf("a second call after the burst was granted, want it to wait behind the held token")
	}
}

// TestCallQueueLeaveLosesNoToken: a waiting call that leaves is out of its
// queue and never granted; a holder that leaves gives its token back, and
// the next call gets it at the same time.
func TestCallQueueLeaveLosesNoToken(t *testing.T) {
	q := NewQueue(Limit{PerSecond: 10, Burst: 1})
	q.Arrive(queueT0, lifecycle.PriorityBackground)
	held := q.Arrive(queueT0, lifecycle.PriorityBackground)
	gone := q.Arrive(queueT0, lifecycle.PriorityUser)
	next := q.Arrive(queueT0, lifecycle.PriorityRefresh)
	if got := q.Leave(gone, queueT0); len(got) != 0 || q.Waiting(lifecycle.PriorityUser) != 0 {
		t.Fatalf("a waiting call left: granted %d, %d user calls wait; want none, none", len(got), q.Waiting(lifecycle.PriorityUser))
	}
	at := held.At
	got := q.Leave(held, queueT0.Add(10*time.Millisecond))
	if len(got) != 1 || got[0] != next || !next.At.Equal(at) {
		t.Fatalf("the holder left: granted %d calls, next at %v; want the refresh at the held token's %v", len(got), next.At.Sub(queueT0), at.Sub(queueT0))
	}
	if gone.Granted() {
		t.Error("the call that left was granted")
	}
}
