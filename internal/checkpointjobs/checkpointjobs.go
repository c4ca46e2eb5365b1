// Package checkpointjobs runs checkpoint jobs (lifecycle.Service.RunCheckpointJob:
// saves, restores, forks and purges, docs/CHECKPOINTS.md "Jobs") in the
// local stack: Worker is an in-process lifecycle.CheckpointJobs on a
// readiness.Worker (bounded concurrency, a failing job run again after a
// backoff, as a queue would redeliver it; an identical job queued while
// one runs is folded into one more run). In AWS the jobs go to an SQS
// queue consumed by the checkpoint function instead. Every job is safe to
// run twice, and what a job that gave up left is resolved by the sweep (a
// checkpoint past its lease, a session restoring or provisioning past its
// lease).
package checkpointjobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// Worker is the local stack's lifecycle.CheckpointJobs. Build it with New,
// give it to lifecycle.Config.CheckpointJobs, then Start it with the
// service's RunCheckpointJob. Jobs queued before Start run once it is
// started. It is safe for concurrent use.
type Worker struct {
	w *readiness.Worker
}

var _ lifecycle.CheckpointJobs = (*Worker)(nil)

// New returns a Worker; cfg is readiness.Config's (Concurrency, Attempts,
// Backoff, Log), its Kind set to "checkpoint".
func New(cfg readiness.Config) *Worker {
	cfg.Kind = "checkpoint"
	return &Worker{w: readiness.New(cfg)}
}

// Start lets jobs run: each calls run with ctx (end it to stop; Close then
// waits for the jobs under way).
func (w *Worker) Start(ctx context.Context, run func(context.Context, lifecycle.CheckpointJob) error) {
	w.w.Start(ctx, func(ctx context.Context, key string) (lifecycle.BringUpOutcome, error) {
		var job lifecycle.CheckpointJob
		if err := json.Unmarshal([]byte(key), &job); err != nil {
			return "", fmt.Errorf("checkpoint job %q: %w", key, err)
		}
		return "", run(ctx, job)
	})
}

// EnqueueCheckpoint runs job in the background. It never fails, except
// after Close (unavailable).
func (w *Worker) EnqueueCheckpoint(ctx context.Context, job lifecycle.CheckpointJob) error {
	key, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode checkpoint job: %w", err)
	}
	return w.w.Enqueue(ctx, string(key))
}

// Close refuses new jobs and waits for the jobs under way (end the context
// given to Start first to cut them short).
func (w *Worker) Close() { w.w.Close() }
