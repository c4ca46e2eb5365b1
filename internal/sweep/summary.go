package sweep

import "log/slog"

// Summary is what one run did. It is logged once per run (as a group of
// attributes named "summary") and is the sweep Lambda's result, so it
// marshals to JSON with snake_case names. Counts are sessions unless said
// otherwise; durations are whole milliseconds.
type Summary struct {
	// Candidates is how many running sessions the idle index yielded this
	// run: past their pause deadline or, with timers, due within the timer
	// window (lifecycle.Config.TimerHorizon).
	Candidates int `json:"candidates"`
	// Armed: candidates not yet due whose pause timer this run armed.
	Armed int `json:"armed"`
	// ArmFailed: candidates whose timer could not be armed; the next run
	// tries again, and pauses them if they are due by then.
	ArmFailed int `json:"arm_failed"`
	// Paused: candidates this run paused.
	Paused int `json:"paused"`
	// Expired: candidates whose sandbox the provider said was gone; they are
	// now expired.
	Expired int `json:"expired"`
	// Failed: candidates whose pause failed for a transient reason; they were
	// rolled back to running and the next run retries them.
	Failed int `json:"failed"`
	// Skipped: candidates not paused because their conditional write lost (a
	// heartbeat landed mid-sweep, another run or a webhook moved them) or
	// their index entry was stale.
	Skipped int `json:"skipped"`
	// Leases: sessions the lease index yielded: transitional sessions with
	// an expired lease, running sessions whose app has been starting
	// longer than lifecycle.ReadinessRequeueAfter, and resuming ones whose
	// resume a job should have finished within lifecycle.ResumeRequeueAfter.
	Leases int `json:"leases"`
	// Requeued: running sessions whose app was still starting, and
	// resuming ones whose handed-off resume had not finished, whose
	// readiness job this run queued again (a lost job is repaired; a job
	// at work finds its command running, or its resume committed).
	Requeued int `json:"requeued"`
	// RequeueFailed: readiness jobs that could not be queued; the next run
	// tries again.
	RequeueFailed int `json:"requeue_failed"`
	// Listed: provider sandboxes compared with the table.
	Listed int `json:"listed"`
	// Unknown: listed sandboxes that no session holds.
	Unknown int `json:"unknown"`
	// OrphansKilled: listed sandboxes killed because no live session holds
	// them (lifecycle.Service.ReapOrphan): leaked by a create whose answer
	// was lost, or alive after their session was killed or expired.
	OrphansKilled int `json:"orphans_killed"`
	// Reconciled: sessions moved to the state their provider reports, from an
	// expired lease or a provider-list disagreement.
	Reconciled int `json:"reconciled"`
	// ReconcileFailed: reconciles and dormancy retirements that failed this
	// run (provider or store trouble); the next run retries them.
	ReconcileFailed int `json:"reconcile_failed"`
	// Dormant: paused sessions found older than Config.DormancyAge.
	Dormant int `json:"dormant"`
	// DormantKilled: dormant sessions whose sandbox was killed and that are
	// now expired.
	DormantKilled int `json:"dormant_killed"`
	// TierDue: sessions the tier index found due (lifecycle.IndexTier).
	// Archived and Deleted: those demoted this run; TierHeld: paused ones
	// whose archive waits for its checkpoint or could take none
	// (Session.TierError); TierFailed: demotions whose provider or store
	// step failed (retried after lifecycle.TierRetryInterval).
	TierDue    int `json:"tier_due"`
	Archived   int `json:"archived"`
	Deleted    int `json:"deleted"`
	TierHeld   int `json:"tier_held"`
	TierFailed int `json:"tier_failed"`
	// StaleConns: client-channel connections dropped because they had been
	// silent longer than the bound (Config.Conns); their sessions'
	// presence was recomputed.
	StaleConns int `json:"stale_conns"`
	// SparesMade, SparesFailed and SparesRetired: warm pool spares this run
	// made ready, that failed to become ready, and that it dropped (older
	// than their pool's max age, beyond its size, or left making by a fill
	// that died); PoolsStopped: pools skipped while they back off after
	// failures in a row (docs/POOLS.md).
	SparesMade    int `json:"spares_made"`
	SparesFailed  int `json:"spares_failed"`
	SparesRetired int `json:"spares_retired"`
	PoolsStopped  int `json:"pools_stopped"`
	// CheckpointsScheduled: running sessions of the lease index whose
	// scheduled checkpoint (lifecycle.Session.CheckpointEvery) this run
	// took. CheckpointsDue: saving checkpoints whose lease ran out;
	// CheckpointsResolved: those this run settled (ready or failed) or
	// renewed (the provider still saving); CheckpointsFailed: those it
	// could not resolve (provider trouble: the next run tries again).
	CheckpointsScheduled int `json:"checkpoints_scheduled"`
	CheckpointsDue       int `json:"checkpoints_due"`
	CheckpointsResolved  int `json:"checkpoints_resolved"`
	CheckpointsFailed    int `json:"checkpoints_failed"`
	// LagMaxMS and LagP50MS are the largest and the median delay, in
	// milliseconds, between a paused session's pause deadline and the time
	// this run paused it (service clock); 0 when none was paused.
	LagMaxMS int64 `json:"lag_max_ms"`
	LagP50MS int64 `json:"lag_p50_ms"`
	// DurationMS is how long the run took, in milliseconds (wall clock).
	DurationMS int64 `json:"duration_ms"`
	// Incomplete reports that the run stopped before finishing (out of time
	// or a page it could not read); the next run picks up the rest.
	Incomplete bool `json:"incomplete"`
}

// LogValue logs the summary as a group with the JSON names, so text and JSON
// handlers show the same keys.
func (s Summary) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("candidates", s.Candidates),
		slog.Int("armed", s.Armed),
		slog.Int("arm_failed", s.ArmFailed),
		slog.Int("paused", s.Paused),
		slog.Int("expired", s.Expired),
		slog.Int("failed", s.Failed),
		slog.Int("skipped", s.Skipped),
		slog.Int("leases", s.Leases),
		slog.Int("requeued", s.Requeued),
		slog.Int("requeue_failed", s.RequeueFailed),
		slog.Int("listed", s.Listed),
		slog.Int("unknown", s.Unknown),
		slog.Int("orphans_killed", s.OrphansKilled),
		slog.Int("reconciled", s.Reconciled),
		slog.Int("reconcile_failed", s.ReconcileFailed),
		slog.Int("stale_conns", s.StaleConns),
		slog.Int("dormant", s.Dormant),
		slog.Int("dormant_killed", s.DormantKilled),
		slog.Int("tier_due", s.TierDue),
		slog.Int("archived", s.Archived),
		slog.Int("deleted", s.Deleted),
		slog.Int("tier_held", s.TierHeld),
		slog.Int("tier_failed", s.TierFailed),
		slog.Int("spares_made", s.SparesMade),
		slog.Int("spares_failed", s.SparesFailed),
		slog.Int("spares_retired", s.SparesRetired),
		slog.Int("pools_stopped", s.PoolsStopped),
		slog.Int("checkpoints_scheduled", s.CheckpointsScheduled),
		slog.Int("checkpoints_due", s.CheckpointsDue),
		slog.Int("checkpoints_resolved", s.CheckpointsResolved),
		slog.Int("checkpoints_failed", s.CheckpointsFailed),
		slog.Int64("lag_max_ms", s.LagMaxMS),
		slog.Int64("lag_p50_ms", s.LagP50MS),
		slog.Int64("duration_ms", s.DurationMS),
		slog.Bool("incomplete", s.Incomplete),
	)
}

var _ slog.LogValuer = Summary{}
