package lifecycle

import (
	"context"
	"time"
)

// CallPriority is a provider call's class in a provider's call limiter
// (internal/calllimit): when calls wait for tokens, the next token goes to
// the oldest waiting call of the highest class. The Service sets a call's
// class on its ctx (WithCallPriority); the limiter reads it. docs/CAPACITY.md "Provider call
// limiter" lists which call takes which class and which callers override.
type CallPriority uint8

// The classes, highest first. Each provider call's own class is
// Op.Class; the lists below are its Provider methods'.
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

// NumCallPriorities is how many classes there are: a limiter keeps one
// queue per class, indexed by CallPriority (internal/calllimit).
const NumCallPriorities = callPriorities

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

type callAccountKey struct{}

// WithCallAccount returns a ctx whose provider calls are made for account
// accountID: the fleet's provider governor (internal/governor) gives each
// account its fair share of a class. The Service sets it on every call it
// makes for a session (Service.provider).
func WithCallAccount(ctx context.Context, accountID string) context.Context {
	return context.WithValue(ctx, callAccountKey{}, accountID)
}

// CallAccountOf returns the account ctx's provider calls are made for
// (WithCallAccount), "" when none.
func CallAccountOf(ctx context.Context) string {
	a, _ := ctx.Value(callAccountKey{}).(string)
	return a
}

// CallGate is told of every HTTP attempt a provider adapter makes within
// one provider call, and of each answer (internal/provider/internal/provhttp
// RoundTrip): the provider call limiters (internal/governor) put one on the
// call's ctx, so that an adapter's own retries take tokens too and a
// provider's 429 reaches the fleet. Implementations must be safe for
// concurrent use.
type CallGate interface {
	// Attempt is called before each attempt; the call's first attempt
	// has its token already. Errors: no token came within ctx (the
	// attempt is not made; the adapter returns the error).
	Attempt(ctx context.Context) error
	// Answered is told an answer's status and the wait its Retry-After
	// asks for (0: none).
	Answered(status int, retryAfter time.Duration)
}

type callGateKey struct{}

// WithCallGate returns a ctx whose provider calls tell g of their attempts.
func WithCallGate(ctx context.Context, g CallGate) context.Context {
	return context.WithValue(ctx, callGateKey{}, g)
}

// CallGateOf returns ctx's CallGate, nil when none.
func CallGateOf(ctx context.Context) CallGate {
	g, _ := ctx.Value(callGateKey{}).(CallGate)
	return g
}
