// Package calllimit is a provider's call limiter: one token bucket
// (golang.org/x/time/rate) per provider per process that serves calls by
// class (lifecycle.CallPriority), highest first (docs/CAPACITY.md "Provider
// call limiter"). Wrap puts a lifecycle.Provider behind it; Queue is its
// bookkeeping, which the cost replay also drives on a simulated clock.
//
// It lives outside internal/lifecycle so that the domain imports only the
// standard library: the Service only sets a call's class on its context
// (lifecycle.WithCallPriority), and app wraps each provider once at cold
// start.
package calllimit
