// Package lifecycle is Sandman's domain: the session type, its states and the
// one transition table every other package asks, the idle policy (idle
// deadline, max lifetime, heartbeat coalescing), the lifecycle envelope, the
// application error type, the clock, lifecycle events, and the interfaces the
// adapters implement (Store, Provider, Publisher).
//
// It imports only the standard library. The rules come from docs/DESIGN.md;
// where a rule is ours rather than the design's, its doc comment says so.
package lifecycle
