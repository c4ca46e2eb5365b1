package sweep_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// TestSweepRequeuesALostResumeJob: an open of a paused session's link
// commits paused → resuming and hands the resume to a job, which is lost.
// Left to its lease, the session would sit resuming for the whole lease
// and then be reconciled back to paused: a wake that never happens, with
// the waking page open all along. The sweep queues the job again once the
// resume has waited lifecycle.ResumeRequeueAfter, and the job finishes
// the resume: running, one resume at the provider.
func TestSweepRequeuesALostResumeJob(t *testing.T) {
	clock := lifecycle.NewManualClock(t0)
	prov := fake.New(fake.Config{Clock: clock})
	store := memstore.New()
	jobs := &lossyJobs{}
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(),
		Log: quiet(), ReadinessJobs: jobs,
		Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }})
	sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PauseNow(t.Context(), account, sess.ID); err != nil {
		t.Fatal(err)
	}
	resumes := prov.Calls(fake.OpResume)
	jobs.setLose(true)
	opened, err := svc.Open(t.Context(), account, sess.ID)
	if err != nil || opened.State != lifecycle.StateResuming {
		t.Fatalf("open = %v, %v; want the session resuming, its resume handed to a job", opened, err)
	}
	jobs.setLose(false)
	sw := sweep.New(svc, sweep.Config{}, quiet())
	mustRequeueAfter(t, sw, clock, lifecycle.ResumeRequeueAfter, jobs, sess.ID)
	if got := MustStateOf(t, store, sess.ID); got.State != lifecycle.StateResuming {
		t.Fatalf("the sweep moved the session to %s; want it left resuming for its job", got.State)
	}
	out, err := svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpResumed {
		t.Fatalf("the re-queued job: %q, %v; want resumed", out, err)
	}
	if got := MustStateOf(t, store, sess.ID); got.State != lifecycle.StateRunning {
		t.Fatalf("after the job the session is %s, want running", got.State)
	}
	if n := prov.Calls(fake.OpResume) - resumes; n != 1 {
		t.Errorf("provider resumes = %d, want 1", n)
	}
	clock.Advance(lifecycle.ResumeRequeueAfter)
	if sum := MustRun(t, t.Context(), sw); sum.Requeued != 0 || len(jobs.queued()) != 1 {
		t.Errorf("a running session was queued again: %+v, jobs %v", sum, jobs.queued())
	}
}
