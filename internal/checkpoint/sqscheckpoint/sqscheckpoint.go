// Package sqscheckpoint is the AWS lifecycle.CheckpointJobs
// (docs/CHECKPOINTS.md "Jobs"): a checkpoint job (a save, restore, fork or
// delete) is an SQS message whose body is the lifecycle.CheckpointJob as
// JSON, sent by the function whose commit asked for it (a checkpoint route,
// an automatic pause, the sweep), and the checkpoint function (Handler,
// functions/checkpoint) consumes it by calling
// lifecycle.Service.RunCheckpointJob. The event source mapping's maximum
// concurrency bounds how many jobs run at once.
//
// Delivery is at least once, as the readiness queue's: a job whose
// function dies mid-way is never deleted and comes back after the queue's
// visibility timeout, and a send the SDK retried may arrive twice. Neither
// needs deduplicating here: a job is safe to run twice (every step it takes
// is a conditional write or is found again by name, the provider's
// snapshot by the checkpoint's id, the archive by its key). A job that
// keeps failing lands in the dead-letter queue (with an alarm), and an
// archive upload cut by a dead function is aborted by the bucket's rule on
// incomplete multipart uploads.
package sqscheckpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// Jobs sends checkpoint jobs to one queue. Build it with New.
type Jobs struct{ queue sqskit.Queue }

var _ lifecycle.CheckpointJobs = (*Jobs)(nil)

// New returns Jobs sending to the standard SQS queue queueURL through
// client: lifecycle.Config.CheckpointJobs.
func New(client sqskit.API, queueURL string) *Jobs {
	return &Jobs{queue: sqskit.Queue{API: client, URL: queueURL}}
}

// EnqueueCheckpoint sends job as one message, without delay. Errors: a job
// check refuses (a plain error: a bug of the caller, nothing is sent);
// unavailable when SQS refused or did not answer.
func (j *Jobs) EnqueueCheckpoint(ctx context.Context, job lifecycle.CheckpointJob) error {
	if err := check(job); err != nil {
		return err
	}
	return j.queue.Send(ctx, sqskit.Message{Body: job},
		fmt.Sprintf("send checkpoint %s job for %s", job.Op, job.SessionID), "the checkpoint queue did not take the job")
}

// errBadJob is the error check wraps.
var errBadJob = errors.New("malformed checkpoint job")

// check reports whether job can be run at all: a known Op and a session
// id. What the job's other fields must hold is RunCheckpointJob's to say.
func check(job lifecycle.CheckpointJob) error {
	switch job.Op {
	case lifecycle.CheckpointOpSave, lifecycle.CheckpointOpRestore, lifecycle.CheckpointOpFork, lifecycle.CheckpointOpDelete,
		lifecycle.CheckpointOpDeleteArchive:
	default:
		return fmt.Errorf("%w: op %q", errBadJob, job.Op)
	}
	if job.SessionID == "" {
		return fmt.Errorf("%w: %s without a session id", errBadJob, job.Op)
	}
	return nil
}

// Runner is what a job runs: lifecycle.Service's RunCheckpointJob.
type Runner interface {
	RunCheckpointJob(ctx context.Context, job lifecycle.CheckpointJob) error
}

// DeadlineMargin is how long before the invocation's deadline a job still
// under way is cut (its context ends), so that it can record what it did
// and abort its archive upload before Lambda stops the process; the job
// is then reported failed and delivered again.
const DeadlineMargin = 30 * time.Second

// Handler is the checkpoint function's SQS handler. Build it with
// NewHandler.
type Handler struct {
	svc Runner
	log *slog.Logger
}

// NewHandler returns a Handler running jobs through svc; log may be nil.
func NewHandler(svc Runner, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{svc: svc, log: log}
}

// Handle runs the batch's jobs one after another, each until
// DeadlineMargin before ctx's deadline, and reports the ones that failed
// as batch item failures (ReportBatchItemFailures), so only those come
// back and, after the queue's maxReceiveCount, land in the dead-letter
// queue. A job that failed for good (its error's code is invalid,
// not_found, forbidden or gone: running it again cannot help) and a body
// check refuses are logged and dropped.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx, cancel := sqskit.BeforeDeadline(ctx, DeadlineMargin)
	defer cancel()
	return sqskit.Batch(ctx, ev, 1, func(ctx context.Context, rec events.SQSMessage) error {
		var job lifecycle.CheckpointJob
		err := json.Unmarshal([]byte(rec.Body), &job)
		if err == nil {
			err = check(job)
		}
		if err != nil {
			h.log.ErrorContext(ctx, "drop malformed checkpoint job", "message_id", rec.MessageId, "err", err)
			return nil
		}
		attrs := []any{"op", job.Op, "session_id", job.SessionID, "checkpoint_id", job.CheckpointID}
		if job.TargetSessionID != "" {
			attrs = append(attrs, "target_session_id", job.TargetSessionID)
		}
		if err := h.svc.RunCheckpointJob(ctx, job); err != nil {
			if definitive(err) {
				h.log.WarnContext(ctx, "drop checkpoint job that cannot succeed", append(attrs, "err", err)...)
				return nil
			}
			h.log.WarnContext(ctx, "checkpoint job failed; SQS delivers it again", append(attrs, "err", err)...)
			return err
		}
		h.log.InfoContext(ctx, "checkpoint job done", attrs...)
		return nil
	}), nil
}

// definitive reports whether err says the job can never succeed, so
// delivering it again would only end in the dead-letter queue.
func definitive(err error) bool {
	switch lifecycle.ErrorCode(err) {
	case lifecycle.CodeInvalid, lifecycle.CodeNotFound, lifecycle.CodeForbidden, lifecycle.CodeGone:
		return true
	}
	return false
}
