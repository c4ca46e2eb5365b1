package lifecycle

import "context"

// CheckpointJob is one piece of checkpoint work run off the request path
// (docs/CHECKPOINTS.md "Jobs"): in AWS a message on the checkpoint queue,
// locally an in-process worker. A job is safe to run twice: every step it
// takes is a conditional write or is found again by name.
type CheckpointJob struct {
	// Op is what to do: CheckpointOpSave, CheckpointOpRestore,
	// CheckpointOpFork or CheckpointOpDelete.
	Op           string `json:"op"`
	SessionID    string `json:"session_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// TargetSessionID is the new session of a fork.
	TargetSessionID string `json:"target_session_id,omitempty"`
}

// The checkpoint job operations.
const (
	CheckpointOpSave    = "save"
	CheckpointOpRestore = "restore"
	CheckpointOpFork    = "fork"
	CheckpointOpDelete  = "delete"
)

// CheckpointJobs queues checkpoint work for Service.RunCheckpointJob.
type CheckpointJobs interface {
	// EnqueueCheckpoint asks for RunCheckpointJob(job) soon. Errors:
	// unavailable when the job could not be queued; the sweep then finds
	// the checkpoint by its lease.
	EnqueueCheckpoint(ctx context.Context, job CheckpointJob) error
}
