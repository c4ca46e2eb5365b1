package lifecycle

import "context"

// RunCheckpointJob runs one checkpoint job (CheckpointJobs). Errors:
// transient ones ask the queue to deliver the job again.
//
// Placeholder of the interface commit: the checkpoint service replaces it.
func (s *Service) RunCheckpointJob(ctx context.Context, job CheckpointJob) error {
	return Errorf(CodeUnavailable, "checkpoint jobs are not built yet (op %s)", job.Op)
}
