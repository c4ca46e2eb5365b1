// Package sweep is the idle-pause sweep that the sweep Lambda runs on an
// EventBridge schedule (docs/DESIGN.md "Idle pause"), and the Lambda
// handler around it.
//
// One run (Sweeper.Run) has five phases, in this order of importance:
//
//  1. Idle: running sessions past their pause deadline, found page by page
//     through the sparse idle index (lifecycle.IndexIdle, never a scan), are
//     paused with lifecycle.Service.Pause, reason idle, guarded by
//     Guard{DueBy: now}: the conditional write re-checks the deadline, so a
//     heartbeat that lands between the query and the pause wins. When the
//     service has timers (lifecycle.Config.Timers, docs/DESIGN.md "Precise
//     pausing"), the same query reaches TimerHorizon further (the next tick
//     plus a margin) and every running session due in that window gets its
//     timer armed (Service.ArmTimer, no provider call): it is paused on its
//     deadline by lifecycle.Service.FireTimer, and this phase remains the
//     backstop for a timer that was lost, and for long deadlines (an SQS
//     delay is at most 15 min) that each tick re-arms as they come near.
//  2. Leases: transitional sessions whose lease ran out (lifecycle.IndexLease)
//     are put into the state their provider reports (Service.Reconcile);
//     running sessions of the same index, whose app has been starting longer
//     than lifecycle.ReadinessRequeueAfter, get their readiness job queued
//     again (Service.RequeueReadiness), so a job lost between a commit and
//     its send, or given up by the queue, is repaired; so do resuming
//     sessions whose resume an open handed to a job that has not finished it
//     within lifecycle.ResumeRequeueAfter (until their lease expires).
//     The same phase takes the scheduled checkpoint of a running session
//     whose next one is due (lifecycle.Session.NextCheckpointAt keeps it in
//     the lease index; Service.CheckpointIfDue), and then (2b) resolves the
//     saving checkpoints whose lease ran out, found in the checkpoint lease
//     index (Service.ReconcileCheckpoint: a snapshot found by its name is
//     recorded ready, else the checkpoint fails and any snapshot of its
//     name is deleted; docs/CHECKPOINTS.md "Crashes").
//  3. Provider list: up to Config.ReconcileSample sandboxes of the provider's
//     list are compared with the table (Store.FindBySandbox). A session that
//     is running in the table but paused at the provider, or the reverse (a
//     missed webhook), is reconciled. Only this deployment's sandboxes are
//     listed (lifecycle.MetadataDeployment), and each run continues where
//     the last run of a warm container stopped. A sandbox no live session
//     holds (a create whose answer was lost, a session killed while a
//     resume raced it) is killed once it is older than a lease
//     (lifecycle.Service.ReapOrphan); one whose create may still be under
//     way, or whose session expired because the provider called it gone, is
//     left alone and logged.
//  4. Dormancy (only when Config.DormancyAge > 0): paused sessions paused
//     longer than DormancyAge (lifecycle.IndexPaused) become expired, reason
//     dormant (a conditional write, so a resume that landed meanwhile wins),
//     then their sandbox is killed; a kill that fails is retried by phase 3.
//     4b. Retention tiers: sessions of the tier index (lifecycle.IndexTier)
//     due by now are archived, deleted, or have the provider work of an
//     earlier demotion finished (lifecycle.Service.ApplyTier; docs/CHECKPOINTS.md
//     "Retention tiers"), one provider-call token each.
//  5. Pools (only with warm pools configured, docs/POOLS.md): every pool is
//     brought to its size (lifecycle.Service.FillPools): spares older than
//     their max age are replaced, spares a dead fill left are dropped, and
//     missing ones are made, within the run's deadline. Phase 3 knows a
//     pool's sandboxes (lifecycle.MetadataPool): a spare is never reaped, a
//     pool sandbox with no spare item is. Between runs, a claim's pool is
//     refilled at once by the same function from the pool refill queue
//     (Handler.Invoke, internal/sweep/sqsrefill).
//
// # Limits
//
// Sessions are worked on by at most Config.Concurrency goroutines
// (errgroup.SetLimit), and every provider call waits on a token bucket
// (golang.org/x/time/rate) of Config.Rate calls per second. The bucket is per
// Sweeper, that is per Lambda container: overlapping invocations in separate
// containers each have their own, which the schedule (one run per 5 min)
// makes rare.
//
// A run stops taking new work once the context's deadline (the Lambda
// deadline) is nearer than Config.DeadlineMargin, or the context ends; work
// already started finishes. It then reports Summary.Incomplete. Nothing is
// lost: the sessions it did not reach are still in their index and the next
// run finds them. A later phase does not start once the run is out of time,
// so a large idle backlog is worked off before reconciles.
//
// # Overlapping runs
//
// The sweep holds no lock, in memory or in the table. Two runs that find the
// same session both try the same conditional write on (state, version); one
// wins, the other gets a conflict before any provider call and counts the
// session as skipped. So each idle session is paused by exactly one provider
// call however many runs overlap.
//
// # Outcomes of a pause
//
// paused: the provider paused it and the table says so. expired: the
// provider says the sandbox is gone; the service marked the session expired.
// failed: a transient provider failure (or the provider refusing for now);
// the service rolled the session back to running, it stays in the idle index
// and the next run tries again. skipped: not paused by this run because the
// conditional write lost (a heartbeat moved the deadline, another run or a
// webhook moved the session) or the index entry was stale.
//
// # Not done: provider-timeout repair
//
// While a session runs, the provider's own timeout is kept past the pause
// deadline plus Policy.ProviderGrace (set at create and resume with a headroom
// of Policy.GuardHeadroom, and pushed out by heartbeats when the deadline
// catches up with it; see lifecycle.Policy.NeedsProviderRefresh). A lag can
// only come from a failed refresh (logged by the heartbeat, asked again by
// the next written one). The sweep does
// not look for running sessions whose provider timeout fell behind: the idle
// index is keyed by the pause deadline alone, so finding them needs a table
// scan or a further index. The consequence is bounded: the sandbox pauses
// itself before its idle deadline (pause-on-timeout), the provider's webhook
// or phase 3 brings the table in line, and the next resume brings it back. An
// index keyed by sandbox_expires_at over running sessions would make them
// findable.
package sweep
