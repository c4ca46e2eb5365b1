// Package sqsjobs is the AWS lifecycle.ReadinessJobs (docs/READINESS.md
// "Where it runs"): a readiness job is an SQS message carrying the session
// id, sent by the commit that makes a session with an app running (create,
// resume), and the readiness function (Handler, functions/readiness)
// consumes it by calling lifecycle.Service.BringUp. An open of a paused
// session's stable link (or a return) sends a resume job: its job finishes
// the resume the open handed off (docs/WAKE.md "The resume runs in the
// background"). The stack sends those to a queue of their own (NewResumes,
// Message.Kind "resume", lifecycle.Service.FinishResume), consumed by the
// same function under its own maximum concurrency, so that a user coming
// back never waits behind slow app bring-ups. The event source mappings'
// maximum concurrency bounds how many jobs run at once.
//
// Delivery is at least once and crash-safe: a function that dies mid-way
// never deletes the message, which comes back after the queue's visibility
// timeout; BringUp looks for the app command before starting it, so the
// redelivered job never starts a second server, and it counts its deadline
// from the committed running transition, so it continues the same wait.
// A job that keeps failing lands in the dead-letter queue (with an alarm).
package sqsjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// Message is a readiness job's body (JSON).
type Message struct {
	SessionID string `json:"session_id"`
	// Kind is KindResume for a job that only finishes a handed-off resume
	// (lifecycle.Service.FinishResume); absent for a readiness job
	// (lifecycle.Service.BringUp, which finishes such a resume too).
	Kind string `json:"kind,omitempty"`
}

// KindResume is Message.Kind of a resume job.
const KindResume = "resume"

// Jobs sends job messages to one queue. Build it with New or NewResumes.
type Jobs struct {
	queue sqskit.Queue
	kind  string
}

var _ lifecycle.ReadinessJobs = (*Jobs)(nil)

// New returns Jobs sending readiness jobs to queueURL through client.
func New(client sqskit.API, queueURL string) *Jobs {
	return &Jobs{queue: sqskit.Queue{API: client, URL: queueURL}}
}

// NewResumes returns Jobs sending resume jobs (KindResume) to queueURL
// through client: lifecycle.Config.ResumeJobs.
func NewResumes(client sqskit.API, queueURL string) *Jobs {
	return &Jobs{queue: sqskit.Queue{API: client, URL: queueURL}, kind: KindResume}
}

// Enqueue sends one job message for sessionID, without delay. Errors:
// unavailable when SQS refused or did not answer.
func (j *Jobs) Enqueue(ctx context.Context, sessionID string) error {
	return j.queue.Send(ctx, sqskit.Message{Body: Message{SessionID: sessionID, Kind: j.kind}},
		"send readiness job for "+sessionID, "the readiness queue did not take the job")
}

// BringUpper is what a job runs: lifecycle.Service's BringUp for a
// readiness job, FinishResume for a resume job.
type BringUpper interface {
	BringUp(ctx context.Context, sessionID string) (lifecycle.BringUpOutcome, error)
	FinishResume(ctx context.Context, sessionID string) (lifecycle.BringUpOutcome, error)
}

// Handler is the readiness function's SQS handler. Build it with
// NewHandler.
type Handler struct {
	svc     BringUpper
	requeue lifecycle.ReadinessJobs
	log     *slog.Logger
}

// DeadlineMargin is how long before the invocation's deadline a job still
// under way is handed to a new message (Handler): a job may wait longer
// than one invocation may run (ready_timeout_seconds up to 30 min), and a
// fresh message runs at once, where a timed-out one would wait out the
// queue's visibility timeout.
const DeadlineMargin = 10 * time.Second

// NewHandler returns a Handler running jobs through svc, continuing a job
// still under way near the invocation's deadline through requeue (nil: it
// is reported failed and SQS delivers it again after the visibility
// timeout); log may be nil.
func NewHandler(svc BringUpper, requeue lifecycle.ReadinessJobs, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{svc: svc, requeue: requeue, log: log}
}

// Handle runs every job of a batch and reports the ones that failed as
// batch item failures (ReportBatchItemFailures), so only those come back
// and, after the queue's maxReceiveCount, land in the dead-letter queue. A
// body that is not a Message is logged and dropped.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqskit.Batch(ctx, ev, 1, func(ctx context.Context, rec events.SQSMessage) error {
		var m Message
		if err := json.Unmarshal([]byte(rec.Body), &m); err != nil || m.SessionID == "" {
			h.log.ErrorContext(ctx, "drop malformed readiness job", "message_id", rec.MessageId, "err", err)
			return nil
		}
		run := h.bringUp
		if m.Kind == KindResume {
			run = h.svc.FinishResume // one provider resume: no deadline to continue past
		}
		out, err := run(ctx, m.SessionID)
		if err != nil {
			h.log.WarnContext(ctx, "readiness job failed; SQS delivers it again", "session_id", m.SessionID, "err", err)
			return err
		}
		h.log.InfoContext(ctx, "readiness job done", "session_id", m.SessionID, "outcome", out)
		return nil
	}), nil
}

// bringUp runs one job until DeadlineMargin before ctx's deadline; a job
// cut there is continued by a new message (h.requeue).
func (h *Handler) bringUp(ctx context.Context, id string) (lifecycle.BringUpOutcome, error) {
	jctx := ctx
	if h.requeue != nil {
		var cancel context.CancelFunc
		jctx, cancel = sqskit.BeforeDeadline(ctx, DeadlineMargin)
		defer cancel()
	}
	out, err := h.svc.BringUp(jctx, id)
	if err != nil && jctx.Err() != nil && ctx.Err() == nil && h.requeue != nil {
		if qerr := h.requeue.Enqueue(ctx, id); qerr != nil {
			return "", fmt.Errorf("continue readiness job: %w (after %w)", qerr, err)
		}
		h.log.InfoContext(ctx, "readiness job continues in a new message", "session_id", id)
		return "continued", nil
	}
	return out, err
}
