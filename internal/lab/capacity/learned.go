package capacity

import (
	"context"
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// measureLearned measures what the learned idle policy adds: a learned
// create reads its three histograms, a learned return (a heartbeat 2
// min after the last activity, or a resume) reads them and writes its
// user key's, one in lifecycle.FallbackEvery the fallbacks too, and a
// learned pause for idleness reads and writes its user key's (its end;
// a pre-resume nobody came back to is a miss on the same item: windows
// come from the user key's histogram only, so no outcome is written to a
// shared item). A pre-resume itself reads and writes none. Only the
// histogram families are kept from these calls: their session writes are
// the rows above (a learned create, heartbeat or pause writes its session
// as any other does). base is the service the rows above ran, turned learned
// with sessions keyed by the metadata field "user"; every session is one
// user, every one of the one template "base" (the worst case for the
// template's item).
func measureLearned(ctx context.Context, env *bench.Env, base lifecycle.Config, hists lifecycle.IdleHistogramStore,
	clock *lifecycle.ManualClock, capLog *Log, n int, t Target) ([]Op, error) {
	base.IdlePolicy, base.IdleUserField, base.IdleHistograms = lifecycle.IdlePolicyLearned, "user", hists
	svc := lifecycle.NewService(base)
	per5 := func(k int) float64 { return float64(k) * t.Scale * t.LearnedShare / 300 }
	ids := make([]string, n)
	var ops []Op
	histograms := func(f Family) bool { return f == FamIdleUser || f == FamIdleAccount || f == FamIdleTemplate }
	measure := func(name string, rate float64, each func(i int) error) error {
		env.Printf("capacity: %d × %s", n, name)
		op, err := measureOp(capLog, n, name, rate, each, histograms)
		ops = append(ops, op)
		return err
	}
	if err := measure("create (learned idle policy)", per5(t.CreatesPer5Min), func(i int) error {
		s, _, err := svc.Create(ctx, largestAccount, lifecycle.CreateInput{Template: "base",
			Metadata: map[string]string{"user": fmt.Sprintf("user-%d", i)}})
		if err == nil {
			ids[i] = s.ID
		}
		return err
	}); err != nil {
		return nil, err
	}
	clock.Advance(2 * time.Minute)
	if err := measure("return (learned idle policy)", per5(t.ReturnsPer5Min), func(i int) error {
		_, err := svc.Heartbeat(ctx, largestAccount, ids[i])
		return err
	}); err != nil {
		return nil, err
	}
	clock.Advance(time.Hour) // past every plan's deadline, the cap included
	if err := measure("pause by timer (idle), learned idle policy", per5(t.PausesPer5Min), func(i int) error {
		out, err := svc.FireTimer(ctx, ids[i])
		if err == nil && out != lifecycle.TimerPaused {
			err = fmt.Errorf("timer outcome %s, want paused", out)
		}
		return err
	}); err != nil {
		return nil, err
	}
	return ops, nil
}
