package sqscheckpoint_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sandmanhq/sandman/internal/checkpoint/sqscheckpoint"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit/sqskittest"
)

var quiet = slog.New(slog.DiscardHandler)

// ran records the jobs it is given and fails those fail names.
type ran struct {
	mu   sync.Mutex
	jobs []lifecycle.CheckpointJob
	fail map[string]error // by session id
	// deadline is the last job's context deadline.
	deadline time.Time
}

func (r *ran) RunCheckpointJob(ctx context.Context, job lifecycle.CheckpointJob) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, job)
	r.deadline, _ = ctx.Deadline()
	return r.fail[job.SessionID]
}

func TestEnqueueCheckpointSendsTheJob(t *testing.T) {
	q := &sqskittest.Queue{}
	job := lifecycle.CheckpointJob{Op: lifecycle.CheckpointOpFork, SessionID: "ses_a", CheckpointID: "chk_1", TargetSessionID: "ses_b"}
	if err := sqscheckpoint.New(q, "https://sqs.example/checkpoint").EnqueueCheckpoint(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if len(q.Sent()) != 1 {
		t.Fatalf("sent %d messages, want 1", len(q.Sent()))
	}
	in := q.Sent()[0]
	want := `{"op":"fork","session_id":"ses_a","checkpoint_id":"chk_1","target_session_id":"ses_b"}`
	if got := aws.ToString(in.MessageBody); got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if got := aws.ToString(in.QueueUrl); got != "https://sqs.example/checkpoint" {
		t.Errorf("queue %s, want the checkpoint queue", got)
	}
	if in.DelaySeconds != 0 || in.MessageGroupId != nil || in.MessageDeduplicationId != nil {
		t.Errorf("delay %d, group %v, dedup %v: want a plain message on a standard queue", in.DelaySeconds, in.MessageGroupId, in.MessageDeduplicationId)
	}
}

func TestEnqueueCheckpointRefusesAMalformedJob(t *testing.T) {
	q := &sqskittest.Queue{}
	jobs := sqscheckpoint.New(q, "https://sqs.example/checkpoint")
	for _, job := range []lifecycle.CheckpointJob{
		{Op: "snapshot", SessionID: "ses_a"},
		{Op: lifecycle.CheckpointOpSave},
	} {
		if err := jobs.EnqueueCheckpoint(t.Context(), job); err == nil || lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
			t.Errorf("EnqueueCheckpoint(%+v) = %v, want a plain error", job, err)
		}
	}
	if len(q.Sent()) != 0 {
		t.Errorf("sent %d messages, want none", len(q.Sent()))
	}
}

func TestEnqueueCheckpointUnavailableWhenSQSRefuses(t *testing.T) {
	q := &sqskittest.Queue{Fail: errors.New("throttled")}
	err := sqscheckpoint.New(q, "https://sqs.example/checkpoint").EnqueueCheckpoint(t.Context(),
		lifecycle.CheckpointJob{Op: lifecycle.CheckpointOpSave, SessionID: "ses_a", CheckpointID: "chk_1"})
	if !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("err = %v, want unavailable", err)
	}
}

// TestHandleRunsWhatWasSent: the handler runs exactly the jobs the sender
// queued, in order, each op once.
func TestHandleRunsWhatWasSent(t *testing.T) {
	q := &sqskittest.Queue{}
	jobs := sqscheckpoint.New(q, "https://sqs.example/checkpoint")
	want := []lifecycle.CheckpointJob{
		{Op: lifecycle.CheckpointOpSave, SessionID: "ses_a", CheckpointID: "chk_1"},
		{Op: lifecycle.CheckpointOpRestore, SessionID: "ses_a", CheckpointID: "chk_1"},
		{Op: lifecycle.CheckpointOpFork, SessionID: "ses_a", CheckpointID: "chk_1", TargetSessionID: "ses_b"},
		{Op: lifecycle.CheckpointOpDelete, SessionID: "ses_a", CheckpointID: "chk_1"},
	}
	for _, job := range want {
		if err := jobs.EnqueueCheckpoint(t.Context(), job); err != nil {
			t.Fatal(err)
		}
	}
	r := &ran{}
	resp, err := sqscheckpoint.NewHandler(r, quiet).Handle(t.Context(), q.Records())
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want every job acknowledged", resp, err)
	}
	if !slices.Equal(r.jobs, want) {
		t.Errorf("ran %+v, want %+v", r.jobs, want)
	}
}

// TestHandleReportsRetryableFailuresOnly: a job that failed for now comes
// back; one that can never succeed and a malformed body are dropped.
func TestHandleReportsRetryableFailuresOnly(t *testing.T) {
	r := &ran{fail: map[string]error{
		"ses_down": lifecycle.Transientf("snapshot", "sbx_1", 0, "provider down"),
		"ses_busy": lifecycle.Errorf(lifecycle.CodeConflict, "session is pausing"),
		"ses_gone": lifecycle.Errorf(lifecycle.CodeNotFound, "no such session"),
		"ses_bad":  lifecycle.Errorf(lifecycle.CodeInvalid, "checkpoint is expired"),
	}}
	body := func(id string) string { return `{"op":"save","session_id":"` + id + `","checkpoint_id":"chk_1"}` }
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: body("ses_ok")},
		{MessageId: "m2", Body: body("ses_down")},
		{MessageId: "m3", Body: body("ses_gone")},
		{MessageId: "m4", Body: `not a job`},
		{MessageId: "m5", Body: `{"op":"snapshot","session_id":"ses_x"}`},
		{MessageId: "m6", Body: body("ses_busy")},
		{MessageId: "m7", Body: body("ses_bad")},
	}}
	resp, err := sqscheckpoint.NewHandler(r, quiet).Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if want := []string{"m2", "m6"}; !slices.Equal(failed, want) {
		t.Errorf("failures %v, want %v (the transient and the conflict)", failed, want)
	}
	if got := len(r.jobs); got != 5 {
		t.Errorf("ran %d jobs, want 5 (the two malformed bodies dropped unrun)", got)
	}
}

// TestHandleLeavesAMarginBeforeTheDeadline: a job's context ends
// DeadlineMargin before the invocation's, so it can record what it did
// before Lambda stops the process.
func TestHandleLeavesAMarginBeforeTheDeadline(t *testing.T) {
	deadline := time.Now().Add(10 * time.Minute)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	r := &ran{}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: `{"op":"delete","session_id":"ses_a","checkpoint_id":"chk_1"}`}}}
	if _, err := sqscheckpoint.NewHandler(r, quiet).Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if want := deadline.Add(-sqscheckpoint.DeadlineMargin); !r.deadline.Equal(want) {
		t.Errorf("job deadline %v, want %v (the invocation's less the margin)", r.deadline, want)
	}
}
