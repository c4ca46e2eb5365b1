// Command capacity is the capacity model (docs/CAPACITY.md): it drives a
// synthetic workload through lifecycle.Service and the DynamoDB store on
// DynamoDB Local behind a capacity-recording proxy, measures each
// operation's capacity units per key family, scales them to a target
// workload and prints each key family's busiest key against DynamoDB's
// per-partition limits (1,000 WCU/s, 3,000 RCU/s). `make capacity` runs it
// through scripts/capacity.sh, which starts DynamoDB Local:
//
//	go -C internal/lab run ./cmd/capacity              # the default target
//	go -C internal/lab run ./cmd/capacity -scale 10    # what breaks first at 10×
//
// It exits 1 when a key family is above -limit (80 %) of a limit, 2 on a
// usage or run error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/lab/capacity"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	over, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "capacity: %v\n", err)
		os.Exit(2)
	}
	if over {
		os.Exit(1)
	}
}

// run measures and prints the report to out; it reports whether a key
// family is over the limit.
func run(ctx context.Context, args []string, out, progress io.Writer) (bool, error) {
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(progress)
	endpoint := fs.String("endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB Local endpoint (default $DYNAMODB_ENDPOINT)")
	limit := fs.Float64("limit", 0.8, "fail when a key family uses more than this share of a DynamoDB limit")
	d := capacity.DefaultTarget
	var cfg capacity.Config
	t := &cfg.Target
	fs.IntVar(&t.Sessions, "sessions", d.Sessions, "running sessions")
	fs.DurationVar(&t.HeartbeatEvery, "heartbeat", d.HeartbeatEvery, "heartbeat interval of each running session")
	fs.Float64Var(&t.ChannelShare, "channel-share", d.ChannelShare, "share of heartbeats sent on the client channel, 0..1")
	fs.IntVar(&t.PausesPer5Min, "pauses", d.PausesPer5Min, "pauses per 5 minutes")
	fs.IntVar(&t.ResumesPer5Min, "resumes", d.ResumesPer5Min, "resumes per 5 minutes")
	fs.IntVar(&t.CreatesPer5Min, "creates", d.CreatesPer5Min, "creates per 5 minutes")
	fs.IntVar(&t.ConnectsPer5Min, "connects", d.ConnectsPer5Min, "client-channel connections opened (and closed) per 5 minutes")
	fs.IntVar(&t.LargestAccount, "largest-account", d.LargestAccount, "sessions on the largest account")
	fs.IntVar(&t.ReturnsPer5Min, "returns", d.ReturnsPer5Min, "users' returns per 5 minutes (the learned idle policy's histogram reads and writes)")
	fs.Float64Var(&t.LearnedShare, "learned-share", d.LearnedShare, "share of sessions under the learned idle policy, 0..1")
	fs.Float64Var(&t.Scale, "scale", 1, "multiply every count of the target by this")
	fs.Float64Var(&t.ProviderLimit, "provider-limit", 20000.0/30, "provider calls a second the fleet's governor lets through (E2B's 20,000 per 30 s)")
	fs.Float64Var(&t.GovernorWritesPerCall, "governor-writes-per-call", 1.5, "the governor's bucket updates per provider call")
	fs.IntVar(&t.GovernorShards, "governor-shards", capacity.DeployedGovernorShards, "items of each provider's governor bucket (the stack's SANDMAN_GOVERNOR_SHARDS)")
	fs.Float64Var(&t.PauseCheckpointShare, "pause-checkpoint-share", 1, "share of the pauses that record a checkpoint (checkpoint_on_pause), 0..1; negative: none")
	fs.IntVar(&cfg.Shards, "shards", 0, "due-index shards (0: tabledef.DeployedShards, the stack's default SANDMAN_SHARDS)")
	fs.IntVar(&cfg.Ops, "ops", 50, "calls of each operation in the synthetic run")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	env, err := bench.NewEnv(ctx, *endpoint, ".", io.Discard, progress)
	if err != nil {
		return false, err
	}
	res, err := capacity.Run(ctx, env, cfg)
	if err != nil {
		return false, err
	}
	fmt.Fprint(out, res.Markdown(*limit))
	over := res.Over(*limit)
	for _, row := range over {
		fmt.Fprintf(out, "\nOVER %.0f %%: %s (%s) at %.1f %% of its limit.", *limit*100, row.Family, row.Keyed, row.Use*100)
	}
	if len(over) > 0 {
		fmt.Fprintln(out)
	}
	fmt.Fprintf(progress, "capacity: measured in %.1f s\n", res.Seconds)
	return len(over) > 0, nil
}
