package capacity

import (
	"context"
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// measurePauseCheckpoints measures an automatic pause that records a
// checkpoint (checkpoint_on_pause, docs/CHECKPOINTS.md "Automatic
// checkpoints"): the timer's pause, the checkpoint written saving (in the
// checkpoint_lease index), its save job (the snapshot's ref, then ready,
// out of the index) and the prune of the automatic checkpoint beyond
// checkpoints_keep (a Query of the session's partition and a delete).
// base is the service the rows above ran, given checkpoint_on_pause, a
// provider with snapshots of paused sandboxes (Daytona's: the snapshot is
// taken once the sandbox is paused) and a job queue drained in each call. Every session first pauses and resumes checkpoints_keep
// times, so the measured pause is the steady state: one checkpoint in,
// one out.
func measurePauseCheckpoints(ctx context.Context, env *bench.Env, base lifecycle.Config, clock *lifecycle.ManualClock,
	capLog *Log, n int, rate float64) (Op, error) {
	jobs := &reliability.Jobs{}
	snaps := reliability.NewSnapshotProvider(fake.New(fake.Config{Clock: clock}), clock)
	snaps.Caps = lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem, SnapshotsPaused: true}
	base.Provider = snaps
	base.CheckpointJobs, base.CheckpointOnPause = jobs, true
	svc := lifecycle.NewService(base)
	keep := svc.Config().CheckpointsKeep
	ids := make([]string, n)
	for i := range ids {
		s, _, err := svc.Create(ctx, largestAccount, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			return Op{}, err
		}
		ids[i] = s.ID
	}
	pause := func(i int) error {
		out, err := svc.FireTimer(ctx, ids[i])
		if err == nil && out != lifecycle.TimerPaused {
			err = fmt.Errorf("timer outcome %s, want paused", out)
		}
		if err != nil {
			return err
		}
		if errs := jobs.Drain(ctx, svc.RunCheckpointJob, 3); len(errs) > 0 {
			return fmt.Errorf("checkpoint jobs: %v", errs)
		}
		return nil
	}
	env.Printf("capacity: %d sessions × %d automatic checkpoints first (checkpoints_keep)", n, keep)
	for range keep {
		clock.Advance(time.Hour)
		for i := range ids {
			if err := pause(i); err != nil {
				return Op{}, err
			}
		}
		clock.Advance(time.Minute)
		for _, id := range ids {
			if _, err := svc.Resume(ctx, largestAccount, id); err != nil {
				return Op{}, err
			}
		}
	}
	clock.Advance(time.Hour)
	env.Printf("capacity: %d × pause by timer with a checkpoint", n)
	return measureOp(capLog, n, "pause by timer (idle) with its checkpoint (checkpoint_on_pause: save, ready, prune)", rate, pause, nil)
}
