package lifecycle

import "context"

// CheckpointJob is one piece of checkpoint work run off the request path
// (docs/CHECKPOINTS.md "Jobs"): in AWS a message on the checkpoint queue,
// locally an in-process worker. A job is safe to run twice: every step it
// takes is a conditional write or is found again by name.
type CheckpointJob struct {
	// Op is what to do: CheckpointOpSave, CheckpointOpRestore,
	// CheckpointOpFork, CheckpointOpDelete, CheckpointOpDeleteArchive or
	// CheckpointOpCount.
	Op           string `json:"op"`
	SessionID    string `json:"session_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	// TargetSessionID is the new session of a fork.
	TargetSessionID string `json:"target_session_id,omitempty"`
	// ArchiveKey is the archive object a delete_archive job deletes (the
	// checkpoint's ArchiveKey).
	ArchiveKey string `json:"archive_key,omitempty"`
}

// The checkpoint job operations.
const (
	CheckpointOpSave    = "save"
	CheckpointOpRestore = "restore"
	CheckpointOpFork    = "fork"
	CheckpointOpDelete  = "delete"
	// CheckpointOpDeleteArchive deletes the archive object of a checkpoint
	// that is deleted or failed, for a function that keeps no archives
	// itself (in AWS only the checkpoint function may touch the archive
	// bucket: the sessions function's deletes and the sweep's reconcile
	// hand theirs on).
	CheckpointOpDeleteArchive = "delete_archive"
	// CheckpointOpCount counts a session's stored checkpoint bytes again
	// (storedbytes.go) once the operation that was in flight when a
	// checkpoint became ready or was deleted has settled.
	CheckpointOpCount = "count"
)

// CheckpointJobs queues checkpoint work for Service.RunCheckpointJob.
type CheckpointJobs interface {
	// EnqueueCheckpoint asks for RunCheckpointJob(job) soon. Errors:
	// unavailable when the job could not be queued; the sweep then finds
	// the checkpoint by its lease.
	EnqueueCheckpoint(ctx context.Context, job CheckpointJob) error
}
