// Command bench measures Sandman and writes the report behind docs/BENCH.md
// (internal/lab/bench describes each figure). `make bench` runs it through
// scripts/bench.sh, which builds it (the lab is a module of its own) and
// starts an in-memory DynamoDB Local for it; by hand, from the repository
// root:
//
//	go -C internal/lab build -o ../../build/lab/bench ./cmd/bench
//	build/lab/bench -out bench-results/
//
// It needs DYNAMODB_ENDPOINT (or -endpoint), runs from the repository root
// (or -repo), and writes <out>/BENCH.md, <out>/bench.json, the built
// functions and the logs of the code under test into -out. Progress goes to
// stderr. It exits 1 when a figure failed or a check did not hold; the report
// is written either way.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lab/archivebench"
	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/routes"
)

// figures names what -only can select, in the order they run.
var figures = []string{"status", "webhook", "sweep", "coldstart", "cost", "outbox", "channel", "timers", "readiness", "open", "deliveries", "pools", "checkpoints", "fleet", "recovery"}

func main() {
	bench.ChildIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	out := fs.String("out", "bench-results", "directory for the report, the raw figures, builds and logs")
	endpoint := fs.String("endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB Local endpoint (default $DYNAMODB_ENDPOINT)")
	repo := fs.String("repo", ".", "repository root (events/ and functions/ are read from it)")
	command := fs.String("command", "internal/lab/cmd/bench", "how this run was started, for the report")
	ddbNote := fs.String("dynamodb", "DynamoDB Local (in memory)", "what DynamoDB is, for the report")
	only := fs.String("only", strings.Join(figures, ","), "comma-separated figures to run: "+strings.Join(figures, ", "))

	var status bench.StatusConfig
	fs.IntVar(&status.Requests, "status-requests", 2000, "status rounds measured (each: status key cached, status key uncached, raw GetItem via the proxy and direct)")
	var sw bench.SweepConfig
	fs.IntVar(&sw.Sessions, "sweep-sessions", 100_000, "running sessions in the sweep's table")
	fs.IntVar(&sw.Idle, "sweep-idle", 10_000, "of them, past their pause deadline")
	fs.DurationVar(&sw.PauseLatency, "sweep-latency", 100*time.Millisecond, "provider pause latency (a real sleep)")
	fs.IntVar(&sw.Concurrency, "sweep-concurrency", 64, "sweep concurrency")
	sweepRate := fs.String("sweep-rate", "inf", "sweep provider rate limit, calls per second, or inf")
	fs.IntVar(&sw.SeedWorkers, "sweep-seed-workers", 32, "concurrent CreateSession calls while seeding")
	fs.IntVar(&sw.ControlIdle, "sweep-control-idle", 0, "sessions of the control sweep (no provider latency); 0: as many as -sweep-idle, negative: none")
	var wh bench.WebhookConfig
	fs.IntVar(&wh.Sequential, "webhook-sequential", 2000, "deliveries from one sender")
	fs.IntVar(&wh.Concurrent, "webhook-concurrent", 4000, "deliveries from the concurrent senders together")
	fs.IntVar(&wh.Senders, "webhook-senders", 8, "concurrent senders")
	var ob bench.OutboxConfig
	fs.IntVar(&ob.Rounds, "outbox-rounds", 200, "sessions per mode (in path, stream), each snapshotted and resumed once")
	var dl bench.DeliveriesConfig
	fs.IntVar(&dl.Events, "deliveries-events", 100, "sessions snapshotted, one outbound webhook delivery each")
	var ch bench.ChannelConfig
	fs.IntVar(&ch.Rounds, "channel-rounds", 100, "sessions with one client each, paused one at a time")
	fs.IntVar(&ch.Sessions, "channel-sessions", 100, "sessions of the fan-out run, all paused at once")
	fs.IntVar(&ch.ClientsPerSession, "channel-clients", 10, "clients per session in the fan-out run")
	var tm bench.TimersConfig
	fs.IntVar(&tm.Population, "timers-population", 300, "divide the target load's counts (100,000 deadlines per 5 min, 20,000 calls per 30 s) by this")
	fs.IntVar(&tm.Compress, "timers-compress", 30, "divide the target load's durations (5 min sweep, 1 min margin, 30 s rate window) by this")
	fs.IntVar(&tm.Intervals, "timers-intervals", 2, "sweep intervals the deadlines are spread over")
	fs.DurationVar(&tm.PauseLatency, "timers-pause-latency", 0, "provider pause latency (a real sleep); 0: it answers at once")
	fs.BoolVar(&tm.SweepOnly, "timers-sweep-only", true, "also run the same load with the sweep alone (no timers)")
	fs.BoolVar(&tm.Bunched, "timers-bunched", true, "also run timers with one interval's deadlines at one instant")
	fs.BoolVar(&tm.DynamoDB, "timers-dynamodb", false, "run the timers figure on DynamoDB Local instead of the in-memory store")
	var rd bench.ReadinessConfig
	fs.IntVar(&rd.Rounds, "readiness-rounds", 20, "snapshot and resume cycles per provider model of the readiness figure")
	var op bench.OpenConfig
	fs.IntVar(&op.Rounds, "open-rounds", 20, "snapshot and open cycles per provider model of the open figure")
	var pl bench.PoolsConfig
	fs.IntVar(&pl.Rounds, "pools-rounds", 10, "creates from a pool and cold per provider model and tier of the pools figure")
	var ck bench.CheckpointsConfig
	fs.IntVar(&ck.Rounds, "checkpoints-rounds", 10, "checkpoint and restore cycles per provider model of the checkpoints figure")
	fs.Func("checkpoints-providers", "providers of the checkpoints figure's rows, comma-separated (e2b,vercel,daytona,local); default all", func(v string) error {
		ck.Providers = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&ck.ArchiveSizes, "archive-sizes", "10MB,100MB,1GB", "workspace sizes of the archive path (internal/lab/archivebench), comma-separated; empty: skip it")
	fs.StringVar(&ck.ArchiveWork, "archive-work", "", "folder the archive path's workspaces are generated in (default: archivebench's, under the temporary folder)")
	var fl bench.FleetConfig
	fs.IntVar(&fl.Processes, "fleet-processes", 8, "processes of the fleet figure, each with its own governor on one table")
	fs.Float64Var(&fl.Rate, "fleet-rate", 200, "the fleet figure's fake provider's limit, calls a second")
	fs.Float64Var(&fl.BurstSeconds, "fleet-burst", 2, "the fake provider's burst, in seconds of its rate")
	fs.DurationVar(&fl.TableTimeout, "fleet-table-timeout", time.Second, "the governors' table timeout (DynamoDB Local is slower than DynamoDB)")
	var rc bench.RecoveryConfig
	fs.IntVar(&rc.Resumes, "recovery-resumes", 1000, "resumes of the recovery run, spread over the E2B, Daytona and Vercel fakes")
	fs.IntVar(&rc.FaultEvery, "recovery-fault-every", 40, "one session in this many gets each of the recovery run's four faults (40: 10 %)")
	var cold bench.ColdStartConfig
	fs.IntVar(&cold.Runs, "coldstart-runs", 11, "fresh processes per function")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (the bench process, not the processes it starts) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *sweepRate == "inf" {
		sw.Rate = rate.Inf
	} else if r, err := strconv.ParseFloat(*sweepRate, 64); err == nil && r > 0 {
		sw.Rate = rate.Limit(r)
	} else {
		return fmt.Errorf("-sweep-rate %q: want calls per second or inf", *sweepRate)
	}
	selected := map[string]bool{}
	for _, f := range strings.Split(*only, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(figures, f) {
			return fmt.Errorf("-only: unknown figure %q (want %s)", f, strings.Join(figures, ", "))
		}
		selected[f] = true
	}

	repoDir, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(outDir, "bench.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()

	started := time.Now()
	rep := &bench.Report{
		StartedAt: started.UTC(),
		Command:   *command,
		Args:      "internal/lab/cmd/bench " + shellJoin(args),
		Machine:   bench.CurrentMachine(ctx),
		DynamoDB:  *ddbNote,
	}
	env, err := bench.NewEnv(ctx, *endpoint, repoDir, logFile, os.Stderr)
	if err != nil {
		return err
	}
	env.Printf("machine: %d CPUs, %s, load %s; code-under-test logs (warn and up) in %s",
		rep.Machine.CPUs, rep.Machine.GoVersion, rep.Machine.LoadStart, logPath)

	failed := func(figure string, err error) {
		msg := fmt.Sprintf("%s: %v", figure, err)
		env.Printf("FAILED %s", msg)
		rep.Errors = append(rep.Errors, msg)
	}
	if selected["status"] {
		if r, err := bench.RunStatus(ctx, env, status); err != nil {
			failed("status", err)
		} else {
			rep.Status = &r
			if !r.Check.OK {
				failed("status check", fmt.Errorf("%s", strings.Join(r.Check.Problems, "; ")))
			}
		}
	}
	if selected["webhook"] {
		if r, err := bench.RunWebhook(ctx, env, wh); err != nil {
			failed("webhook", err)
		} else {
			rep.Webhook = &r
		}
	}
	if selected["sweep"] {
		if r, err := bench.RunSweep(ctx, env, sw); err != nil {
			failed("sweep", err)
		} else {
			rep.Sweep = &r
			if !r.Check.OK {
				failed("sweep check", fmt.Errorf("%s", strings.Join(r.Check.Problems, "; ")))
			}
			if r.Control != nil && !r.Control.OK {
				failed("sweep control check", fmt.Errorf("%s", strings.Join(r.Control.Problems, "; ")))
			}
		}
	}
	if selected["coldstart"] {
		cold.OutDir = outDir
		if r, err := bench.RunColdStart(ctx, env, cold); err != nil {
			failed("coldstart", err)
		} else {
			rep.ColdStart = &r
			for _, f := range r.Functions {
				if f.Failed > 0 || f.Errors > 0 {
					failed("coldstart "+f.Function, fmt.Errorf("%d failed runs, %d error answers: %s", f.Failed, f.Errors, f.Outcome))
				}
				if f.Function == routes.Publisher && f.Failed < len(f.Runs) && r.PutEventsCalls == 0 {
					failed("coldstart publisher", fmt.Errorf("the fake EventBridge received no PutEvents"))
				}
			}
		}
	}
	if selected["cost"] {
		env.Printf("cost: replaying costsim.DefaultConfig()")
		if sec, err := costReport(); err != nil {
			failed("cost", err)
		} else {
			rep.Cost = sec
		}
	}

	if selected["outbox"] {
		if r, err := bench.RunOutbox(ctx, env, ob); err != nil {
			failed("outbox", err)
		} else {
			rep.Outbox = &r
		}
	}

	if selected["deliveries"] {
		if r, err := bench.RunDeliveries(ctx, env, dl); err != nil {
			failed("deliveries", err)
			if r.Verified > 0 {
				rep.Deliveries = &r
			}
		} else {
			rep.Deliveries = &r
		}
	}

	if selected["channel"] {
		if r, err := bench.RunChannel(ctx, env, ch); err != nil {
			failed("channel", err)
			if r.FanOut.Clients > 0 || r.Single.Clients > 0 {
				rep.Channel = &r
			}
		} else {
			rep.Channel = &r
		}
	}

	if selected["timers"] {
		if r, err := bench.RunTimers(ctx, env, tm); err != nil {
			failed("timers", err)
			if len(r.Runs) > 0 {
				rep.Timers = &r
			}
		} else {
			rep.Timers = &r
		}
	}

	if selected["readiness"] {
		if r, err := bench.RunReadiness(ctx, env, rd); err != nil {
			failed("readiness", err)
			if len(r.Profiles) > 0 {
				rep.Readiness = &r
			}
		} else {
			rep.Readiness = &r
		}
	}

	if selected["open"] {
		if r, err := bench.RunOpen(ctx, env, op); err != nil {
			failed("open", err)
			if len(r.Profiles) > 0 {
				rep.Open = &r
			}
		} else {
			rep.Open = &r
		}
	}
	if selected["pools"] {
		if r, err := bench.RunPools(ctx, env, pl); err != nil {
			failed("pools", err)
			if len(r.Rows) > 0 {
				rep.Pools = &r
			}
		} else {
			rep.Pools = &r
		}
	}

	if selected["checkpoints"] {
		r, err := bench.RunCheckpoints(ctx, env, ck)
		if err != nil {
			failed("checkpoints", err)
		}
		if len(r.Rows) > 0 {
			rep.Checkpoints = &r
		}
		for _, row := range r.Rows {
			if !row.Met {
				failed("checkpoints check", fmt.Errorf("%s: restore → ready p95 %.0f ms over the floor (target %d ms), %d failed",
					row.Name, row.OverP95MS, bench.CheckpointTargetMS, row.Failed))
			}
		}
		if r.Archive != nil {
			for _, s := range r.Archive.Sizes {
				if !s.Met() {
					failed("archive check", fmt.Errorf("%s: Pack %.2f×, sandbox path %.2f× the floor (target %.1f×)",
						s.Label, s.PackWall, s.SandboxWall, archivebench.Target))
				}
			}
		}
	}

	if selected["fleet"] {
		if r, err := bench.RunFleet(ctx, env, fl); err != nil {
			failed("fleet", err)
		} else {
			rep.Fleet = &r
			fl.Phases, fl.FrozenPhase = bench.DefaultFleetPhases, bench.DefaultFleetPhases[2].Name
			for _, p := range bench.FleetProblems(fl, r) {
				failed("fleet check", fmt.Errorf("%s", p))
			}
		}
	}

	if selected["recovery"] {
		if r, err := bench.RunRecovery(ctx, env, rc); err != nil {
			failed("recovery", err)
		} else {
			rep.Recovery = &r
			for _, p := range bench.RecoveryProblems(r) {
				failed("recovery check", fmt.Errorf("%s", p))
			}
		}
	}

	rep.Machine.LoadEnd = bench.LoadAverage()
	rep.Seconds = time.Since(started).Seconds()
	if err := rep.Write(outDir); err != nil {
		return err
	}
	env.Printf("wrote %s and %s in %.0f s", filepath.Join(outDir, bench.ReportMarkdown), filepath.Join(outDir, bench.ReportJSON), rep.Seconds)
	if len(rep.Errors) > 0 {
		return fmt.Errorf("%d figure(s) failed: %s", len(rep.Errors), strings.Join(rep.Errors, "; "))
	}
	return nil
}

// shellJoin joins args for a shell, single-quoting those that need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?()[]{}<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
