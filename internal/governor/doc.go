// Package governor is the fleet's provider governor: one budget per
// provider for every process of a deployment (every Lambda container, or
// the local stack), kept in the sessions table (docs/CAPACITY.md "Fleet
// provider governor").
//
// Each provider has a bucket in the table (Table; internal/governor/
// dynamostore), filled at the provider's published rate (its adapter's
// registry.Adapter.Calls). A process leases tokens in blocks, about a lease's
// life (Config.LeaseFor) of its recent demand, each lease one conditional
// update that adds to the bucket's theoretical arrival time (a generic
// cell rate algorithm), so concurrent leases do not conflict and the table
// costs a small fraction of a write per provider call. Calls then take the
// leased tokens locally.
//
// Order: a call's rank is its class (lifecycle.CallPriority: user, then
// background, then refresh) and, within the class, whether its account is
// over its fair share of the class (fair.go). Lower ranks go first in a
// process's queue, and fleet-wide each rank may lease only while the
// bucket is fuller than its depth allows (rankDepth): the top of the
// bucket is kept for the ranks above.
//
// A provider's 429 cuts the fleet's rate for everyone (additive increase,
// multiplicative decrease) and holds every lease until its Retry-After;
// the call is asked again after it. When the table is slow or down, the
// lease loops lease from a bucket of the process's own at a share of the
// limit (Config.Fallback) instead, for the same queue (so a call waiting
// when the table comes back takes a token of the table's, and the
// process's calls never come from two budgets at once); calls never wait
// past their ctx.
//
// Wrap puts a lifecycle.Provider behind it; internal/app wraps each
// provider once per process. It lives outside internal/lifecycle so that
// the domain imports only the standard library.
package governor
