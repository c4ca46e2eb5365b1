package lifecycle

import (
	"container/list"
	"context"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// CallPriority is a provider call's class in a provider's call limiter
// (LimitCalls): when calls wait for tokens, the next token goes to the
// oldest waiting call of the highest class. docs/CAPACITY.md "Provider call
// limiter" lists which call takes which class and which callers override.
type CallPriority uint8

// The classes, highest first.
const (
	// PriorityUser is a call someone waits on: Create, Resume, Probe, and
	// a readiness job's StartCommand, CommandStatus and PortURL.
	PriorityUser CallPriority = iota
	// PriorityBackground is the sweep's, the timers' and reconcile's work:
	// Pause, Get, List, Kill.
	PriorityBackground
	// PriorityRefresh is a guard refresh (SetTimeout, SetTimeoutUntil): it
	// has headroom, the provider's timeout lying well past the pause
	// deadline.
	PriorityRefresh
	callPriorities
)

// String is "user", "background" or "refresh".
func (p CallPriority) String() string {
	if p >= callPriorities {
		return "unknown"
	}
	return [...]string{"user", "background", "refresh"}[p]
}

type callPriorityKey struct{}

// WithCallPriority returns a ctx whose provider calls take their tokens in
// class p, whatever each method's own class: e.g. an operator's diagnosis
// reads the sandbox (Get) as a user call, a pool spare's SetTimeout is
// background work. A p out of range is ignored.
func WithCallPriority(ctx context.Context, p CallPriority) context.Context {
	return context.WithValue(ctx, callPriorityKey{}, p)
}

// CallPriorityOf returns the class ctx sets (WithCallPriority) and whether
// it sets one in range.
func CallPriorityOf(ctx context.Context) (CallPriority, bool) {
	p, ok := ctx.Value(callPriorityKey{}).(CallPriority)
	return p, ok && p < callPriorities
}

// callPriority returns the class ctx sets, or def.
func callPriority(ctx context.Context, def CallPriority) CallPriority {
	if p, ok := CallPriorityOf(ctx); ok {
		return p
	}
	return def
}

// CallQueue is a priority limiter's bookkeeping, without locks, goroutines
// or clock of its own: one token bucket (golang.org/x/time/rate) and a
// first-in-first-out queue of waiting calls per CallPriority. LimitCalls
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
type CallQueue struct {
	lim     *rate.Limiter
	waiting [callPriorities]list.List // of *CallTicket
	held    *CallTicket               // granted, its token not yet due
}

// CallTicket is one call's place in a CallQueue.
type CallTicket struct {
	// Priority is the call's class.
	Priority CallPriority
	// At is when the call may go: set when it is granted its token.
	At time.Time

	granted bool
	r       *rate.Reservation
	el      *list.Element // in its queue while it waits
	wake    chan struct{} // LimitCalls's: closed when granted
}

// Granted reports whether t has its token (due at t.At).
func (t *CallTicket) Granted() bool { return t.granted }

// NewCallQueue returns an empty queue for limit (which must not be Off).
func NewCallQueue(limit CallLimit) *CallQueue {
	return &CallQueue{lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.burst())}
}

// Limit returns the queue's rate and burst.
func (q *CallQueue) Limit() CallLimit {
	return CallLimit{PerSecond: float64(q.lim.Limit()), Burst: q.lim.Burst()}
}

// Arrive enters a call of class p asking for a token at now. When no call
// waits and no token is held, the call is granted at once (At is now when
// the bucket has a token, else when the next one comes, and the call then
// holds it: its caller must Release it at At, or Leave). Otherwise it waits
// in p's queue until Release or Leave grants it.
func (q *CallQueue) Arrive(now time.Time, p CallPriority) *CallTicket {
	t := &CallTicket{Priority: min(p, callPriorities-1)}
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
func (q *CallQueue) Release(t *CallTicket, now time.Time) []*CallTicket {
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
func (q *CallQueue) Leave(t *CallTicket, now time.Time) []*CallTicket {
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
func (q *CallQueue) Held() *CallTicket { return q.held }

// Waiting returns the number of calls of class p waiting for a token.
func (q *CallQueue) Waiting(p CallPriority) int {
	if p >= callPriorities {
		return 0
	}
	return q.waiting[p].Len()
}

// Ahead returns how long, at the bucket's rate, the calls now waiting in
// class p and the classes above it take to be served: the honest lower
// bound of a newcomer's wait in p when none of them leaves.
func (q *CallQueue) Ahead(p CallPriority) time.Duration {
	n := 0
	for c := range min(p, callPriorities-1) + 1 {
		n += q.waiting[c].Len()
	}
	return time.Duration(math.Round(float64(n) / float64(q.lim.Limit()) * float64(time.Second)))
}

// dispatch promises tokens to the waiting calls, highest class first and
// oldest first within a class, until one has to wait for its token (it
// then holds it) or none waits.
func (q *CallQueue) dispatch(now time.Time) []*CallTicket {
	var out []*CallTicket
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
func (q *CallQueue) next() *CallTicket {
	for p := range q.waiting {
		if e := q.waiting[p].Front(); e != nil {
			q.waiting[p].Remove(e)
			t := e.Value.(*CallTicket)
			t.el = nil
			return t
		}
	}
	return nil
}

// grant reserves a token for t at now; a token not due yet is held.
func (q *CallQueue) grant(t *CallTicket, now time.Time) {
	t.r = q.lim.ReserveN(now, 1) // always OK: burst is at least 1
	t.granted = true
	t.At = now.Add(t.r.DelayFrom(now))
	if t.At.After(now) {
		q.held = t
	}
}
