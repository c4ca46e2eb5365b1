package calllimit

import (
	"container/list"
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Queue is a priority limiter's bookkeeping, without locks, goroutines
// or clock of its own: one token bucket (golang.org/x/time/rate) and a
// first-in-first-out queue of waiting calls per CallPriority. Wrap
// drives one under a mutex on the wall clock; the cost replay drives one on
// its simulated clock, so both grant tokens in the same order.
//
// At most one token is promised ahead of its time: a call granted a token
// that is not due yet holds it (its caller waits it out, then calls
// Release), and the next token is given out only then, to the call at the
// head of the highest class waiting at that moment. So a user call that
// arrives behind any number of waiting background calls and refreshes gets
// the token after the one already promised: it waits at most one token
// interval (1 / rate) plus the user calls ahead of it.
//
// Its methods take now, the caller's clock, as golang.org/x/time/rate does.
type Queue struct {
	lim     *rate.Limiter
	waiting [lifecycle.NumCallPriorities]list.List // of *Ticket
	held    *Ticket                                // granted, its token not yet due
}

// Ticket is one call's place in a Queue.
type Ticket struct {
	// Priority is the call's class.
	Priority lifecycle.CallPriority
	// At is when the call may go: set when it is granted its token.
	At time.Time

	granted bool
	r       *rate.Reservation
	el      *list.Element // in its queue while it waits
	wake    chan struct{} // Wrap's: closed when granted
}

// Granted reports whether t has its token (due at t.At).
func (t *Ticket) Granted() bool { return t.granted }

// NewQueue returns an empty queue for limit (which must not be Off).
func NewQueue(limit Limit) *Queue {
	return &Queue{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.burst())}
}

// Limit returns the queue's rate and burst.
func (q *Queue) Limit() Limit {
	return Limit{PerSecond: float64(q.lim.Limit()), Burst: q.lim.Burst()}
}

// Arrive enters a call of class p asking for a token at now. When no call
// waits and no token is held, the call is granted at once (At is now when
// the bucket has a token, else when the next one comes, and the call then
// holds it: its caller must Release it at At, or Leave). Otherwise it waits
// in p's queue until Release or Leave grants it.
func (q *Queue) Arrive(now time.Time, p lifecycle.CallPriority) *Ticket {
	t := &Ticket{Priority: min(p, lifecycle.NumCallPriorities-1)}
	if q.held == nil { // then nothing waits: grant hands out every token it can
		q.grant(t, now)
		return t
	}
	t.el = q.waiting[t.Priority].PushBack(t)
	return t
}

// Release says that t goes: when t holds the promised token (its time has
// come), the next token is promised to the waiting calls, highest class
// first. It returns the calls granted by this (none when t held nothing).
func (q *Queue) Release(t *Ticket, now time.Time) []*Ticket {
	if q.held != t || t == nil {
		return nil
	}
	q.held = nil
	return q.dispatch(now)
}

// Leave takes t out: a waiting call leaves its queue; a granted one gives
// its token back when it can (rate.Reservation.CancelAt: none of it is
// lost when no later token was promised, which holds for the held one),
// and the next token is promised as Release does. It returns the calls
// granted by this.
func (q *Queue) Leave(t *Ticket, now time.Time) []*Ticket {
	if !t.granted {
		if t.el != nil {
			q.waiting[t.Priority].Remove(t.el)
			t.el = nil
		}
		return nil
	}
	t.r.CancelAt(now)
	return q.Release(t, now)
}

// Held returns the call holding the token promised ahead of its time (its
// caller waits until its At, then calls Release), or nil when none does.
func (q *Queue) Held() *Ticket { return q.held }

// Waiting returns the number of calls of class p waiting for a token.
func (q *Queue) Waiting(p lifecycle.CallPriority) int {
	if p >= lifecycle.NumCallPriorities {
		return 0
	}
	return q.waiting[p].Len()
}

// Ahead returns how long, at the bucket's rate, the calls now waiting in
// class p and the classes above it take to be served: the honest lower
// bound of a newcomer's wait in p when none of them leaves.
func (q *Queue) Ahead(p lifecycle.CallPriority) time.Duration {
	n := 0
	for c := range min(p, lifecycle.NumCallPriorities-1) + 1 {
		n += q.waiting[c].Len()
	}
	return time.Duration(math.Round(float64(n) / float64(q.lim.Limit()) * float64(time.Second)))
}

// dispatch promises tokens to the waiting calls, highest class first and
// oldest first within a class, until one has to wait for its token (it
// then holds it) or none waits.
func (q *Queue) dispatch(now time.Time) []*Ticket {
	var out []*Ticket
	for q.held == nil {
		t := q.next()
		if t == nil {
			break
		}
		q.grant(t, now)
		out = append(out, t)
	}
	return out
}

// next takes the oldest call of the highest class that has one out of its
// queue, or returns nil.
func (q *Queue) next() *Ticket {
	for p := range q.waiting {
		if e := q.waiting[p].Front(); e != nil {
			q.waiting[p].Remove(e)
			t := e.Value.(*Ticket)
			t.el = nil
			return t
		}
	}
	return nil
}

// grant reserves a token for t at now; a token not due yet is held.
func (q *Queue) grant(t *Ticket, now time.Time) {
	t.r = q.lim.ReserveN(now, 1) // always OK: burst is at least 1
	t.granted = true
	t.At = now.Add(t.r.DelayFrom(now))
	if t.At.After(now) {
		q.held = t
	}
}
