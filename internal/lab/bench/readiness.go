package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// The bench binary is also the readiness figure's local sandbox child
// (EnvSandboxChild) and its app command, HTTP on $PORT (EnvServeApp).
const (
	EnvServeApp     = "SANDMAN_BENCH_SERVE_APP"
	EnvSandboxChild = "SANDMAN_BENCH_SANDBOX_CHILD"
	// EnvServeBootMS: the app sleeps this many milliseconds before it
	// listens (the pools figure's install and dev-server start).
	EnvServeBootMS = "SANDMAN_BENCH_SERVE_BOOT_MS"
)

// ChildIfAsked runs the bench binary as a local sandbox child, as the
// app (serving "ok" on 127.0.0.1:$PORT) when asked by the variables above,
// or as one process of the fleet figure (EnvFleetChild),
// never returning then; it returns otherwise. The bench's main calls it
// first.
func ChildIfAsked() {
	switch {
	case os.Getenv(EnvFleetChild) != "":
		runFleetChild() // exits
	case os.Getenv(EnvServeApp) == "1":
		// first: an app command inherits the sandbox child's variables
	case os.Getenv(EnvSandboxChild) == "1":
		if err := local.RunSandbox(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		return
	}
	if ms, err := strconv.Atoi(os.Getenv(EnvServeBootMS)); err == nil && ms > 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// ReadinessProfile is one provider model of the readiness figure.
type ReadinessProfile struct {
	Name string `json:"name"`
	// Resume is the provider's resume latency (a real sleep in the fake);
	// Boot how long the app takes to listen after its start; Keeps whether
	// processes survive a pause (then the app answers at once).
	ResumeMS float64 `json:"resume_ms"`
	BootMS   float64 `json:"boot_ms"`
	Keeps    bool    `json:"keeps_processes"`
	Source   string  `json:"source"`
	// FloorMS is provider resume + (boot unless kept): the least any
	// control plane could take.
	FloorMS float64 `json:"floor_ms"`
	Ready   Latency `json:"resume_to_ready"`
	P95MS   float64 `json:"resume_to_ready_p95_ms"`
	// OverP50MS and OverP95MS are Ready's p50 and p95 less the floor
	// (for the local provider, less the measured floor's).
	OverP50MS float64 `json:"over_floor_p50_ms"`
	OverP95MS float64 `json:"over_floor_p95_ms"`
	Failed    int     `json:"failed"`
	// Floor is the local provider's measured floor (resume, start, first
	// answer, polled every millisecond); zero for the fakes.
	Floor *Latency `json:"floor,omitempty"`
}

// ReadinessResult is the readiness figure.
type ReadinessResult struct {
	Rounds   int                `json:"rounds"`
	Profiles []ReadinessProfile `json:"profiles"`
}

// ReadinessConfig sizes RunReadiness.
type ReadinessConfig struct {
	// Rounds is how many snapshot+resume cycles each profile runs (default 20).
	Rounds int
}

// The provider models: E2B's resume from its sheet (about 1 s; a full
// pause keeps processes); Vercel Sandbox and Daytona publish no resume
// figure, so 1 s is assumed, with a 2 s dev-server boot after a cold
// resume (they lose processes).
var readinessProfiles = []ReadinessProfile{
	{Name: "fake e2b (keeps processes)", ResumeMS: 1000, BootMS: 2000, Keeps: true, Source: "docs/providers/e2b.md: resume about 1 s"},
	{Name: "fake vercel (cold resume)", ResumeMS: 1000, BootMS: 2000, Source: "assumed: no published resume figure; 2 s dev-server boot"},
	{Name: "fake daytona stop/start (cold)", ResumeMS: 1000, BootMS: 2000, Source: "assumed: no published start figure; 2 s dev-server boot"},
}

// RunReadiness measures resume request → readiness ready for each provider
// model on the in-memory fake (real sleeps), and for the local provider
// running a real server with SANDMAN_LOCAL_KEEP_PROCESSES=false: the
// service on memstore, the in-process readiness worker, ReadyAt minus the
// resume request's start.
func RunReadiness(ctx context.Context, env *Env, cfg ReadinessConfig) (ReadinessResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 20
	}
	res := ReadinessResult{Rounds: cfg.Rounds}
	for _, prof := range readinessProfiles {
		p, err := readinessOnFake(ctx, prof, cfg.Rounds)
		if err != nil {
			return res, fmt.Errorf("%s: %w", prof.Name, err)
		}
		res.Profiles = append(res.Profiles, p)
		env.Printf("readiness %s: p50 %.0f ms p95 %.0f ms (floor %.0f ms)", p.Name, p.Ready.P50MS, p.P95MS, p.FloorMS)
	}
	p, err := readinessOnLocal(ctx, cfg.Rounds)
	if err != nil {
		return res, fmt.Errorf("local: %w", err)
	}
	res.Profiles = append(res.Profiles, p)
	env.Printf("readiness %s: p50 %.0f ms p95 %.0f ms", p.Name, p.Ready.P50MS, p.P95MS)
	return res, nil
}

func readinessService(p lifecycle.Provider, client *http.Client) (*lifecycle.Service, *readiness.Worker) {
	log := slog.New(slog.DiscardHandler)
	w := readiness.New(readiness.Config{Log: log})
	cfg := lifecycle.Config{Store: memstore.New(), Provider: p, Log: log, ReadinessJobs: w, ReadyPollInterval: 5 * time.Millisecond}
	if client != nil {
		cfg.ReadyHTTP = client
	}
	return lifecycle.NewService(cfg), w
}

// resumeToReady runs rounds of snapshot, resume, wait for ready, and
// returns each round's ReadyAt minus the resume's start, and the failures.
func resumeToReady(ctx context.Context, svc *lifecycle.Service, app *lifecycle.AppInput, rounds int) ([]time.Duration, int, error) {
	sess, _, err := svc.Create(ctx, "acct_bench", lifecycle.CreateInput{Template: "base", App: app})
	if err != nil {
		return nil, 0, err
	}
	if s, err := svc.WaitReady(ctx, "acct_bench", sess.ID, lifecycle.MaxWaitReady); err != nil || s.Readiness != lifecycle.ReadinessReady {
		return nil, 0, fmt.Errorf("not ready after create: %v %v", s, err)
	}
	var ds []time.Duration
	failed := 0
	for range rounds {
		if _, err := svc.PauseNow(ctx, "acct_bench", sess.ID); err != nil {
			return ds, failed, err
		}
		start := time.Now()
		if _, err := svc.Resume(ctx, "acct_bench", sess.ID); err != nil {
			return ds, failed, err
		}
		s, err := svc.WaitReady(ctx, "acct_bench", sess.ID, lifecycle.MaxWaitReady)
		if err != nil {
			return ds, failed, err
		}
		if s.Readiness != lifecycle.ReadinessReady {
			failed++
			continue
		}
		ds = append(ds, s.ReadyAt.Sub(start))
	}
	return ds, failed, nil
}

func readinessOnFake(ctx context.Context, prof ReadinessProfile, rounds int) (ReadinessProfile, error) {
	boot := time.Duration(prof.BootMS * float64(time.Millisecond))
	p := fake.New(fake.Config{DropProcesses: !prof.Keeps, BootDelay: boot})
	p.SetFault(fake.OpResume, fake.Fault{Delay: time.Duration(prof.ResumeMS * float64(time.Millisecond))})
	svc, w := readinessService(p, &http.Client{Transport: p.Preview()})
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); w.Close() }()
	w.Start(wctx, svc.BringUp)
	port, line := 3000, "npm run dev"
	ds, failed, err := resumeToReady(ctx, svc, &lifecycle.AppInput{Port: &port, StartCommand: &line}, rounds)
	if err != nil {
		return prof, err
	}
	prof.FloorMS = prof.ResumeMS
	if !prof.Keeps {
		prof.FloorMS += prof.BootMS
	}
	prof.Ready, prof.Failed = Summarize(ds), failed
	prof.P95MS = ms(percentileOf(ds, 95))
	prof.OverP50MS, prof.OverP95MS = prof.Ready.P50MS-prof.FloorMS, prof.P95MS-prof.FloorMS
	return prof, nil
}

func readinessOnLocal(ctx context.Context, rounds int) (ReadinessProfile, error) {
	prof := ReadinessProfile{Name: "local, real server, SANDMAN_LOCAL_KEEP_PROCESSES=false",
		Source: "measured: resume (SIGCONT) + start + first answer, polled every 1 ms"}
	lp, exe, closeLocal, err := newBenchLocal(ctx, "sandman-bench-readiness-")
	if err != nil {
		return prof, err
	}
	defer closeLocal()
	svc, w := readinessService(lp, nil)
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); w.Close() }()
	w.Start(wctx, svc.BringUp)
	port, line := 3000, "exec '"+exe+"'"
	app := &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: map[string]string{EnvServeApp: "1"}}
	ds, failed, err := resumeToReady(ctx, svc, app, rounds)
	if err != nil {
		return prof, err
	}
	floor, err := localFloor(ctx, lp, exe, rounds)
	if err != nil {
		return prof, err
	}
	fl := Summarize(floor)
	prof.Floor, prof.FloorMS = &fl, fl.P50MS
	prof.Ready, prof.Failed = Summarize(ds), failed
	prof.P95MS = ms(percentileOf(ds, 95))
	prof.OverP50MS, prof.OverP95MS = prof.Ready.P50MS-fl.P50MS, prof.P95MS-ms(percentileOf(floor, 95))
	return prof, nil
}

// localFloor measures, without Sandman, what a cold resume of the local
// provider takes until the app answers: pause, then resume, start the
// command, and GET its port every millisecond until it answers.
func localFloor(ctx context.Context, lp *local.Provider, exe string, rounds int) ([]time.Duration, error) {
	sb, err := lp.Create(ctx, lifecycle.CreateRequest{Template: local.TemplateBase, Timeout: time.Hour})
	if err != nil {
		return nil, err
	}
	url, err := lp.PortURL(ctx, sb.ID, 3000)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: time.Second}
	cmd := lifecycle.Command{Name: lifecycle.AppCommandName, Line: "exec '" + exe + "'", Port: 3000,
		Env: map[string]string{EnvServeApp: "1"}}
	var ds []time.Duration
	for range rounds + 1 {
		if err := lp.Pause(ctx, sb.ID); err != nil {
			return nil, err
		}
		start := time.Now()
		if _, err := lp.Resume(ctx, sb.ID, time.Hour); err != nil {
			return nil, err
		}
		if _, err := lp.StartCommand(ctx, sb.ID, cmd); err != nil {
			return nil, err
		}
		for {
			if resp, err := client.Get(url); err == nil {
				resp.Body.Close()
				break
			}
			if time.Since(start) > 20*time.Second {
				return nil, fmt.Errorf("the app did not answer within 20 s")
			}
			time.Sleep(time.Millisecond)
		}
		ds = append(ds, time.Since(start))
	}
	return ds[1:], nil // the first run warms the page cache
}

func percentileOf(ds []time.Duration, p float64) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	return Percentile(sorted, p)
}

func (r *Report) readinessSection(b *strings.Builder, res *ReadinessResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 9. Resume to ready (docs/READINESS.md)\n\n")
	p("Each row creates one session with an app, then %d times: snapshot, resume (`Service.Resume`), and waits until ", res.Rounds)
	p("its readiness is `ready`. The figure is the commit's `ready_at` minus the resume request's start. The service runs on ")
	p("memstore with the in-process readiness worker (`internal/readiness`), probing with the default backoff. The fakes ")
	p("sleep the resume latency for real and answer 502 \"port is not open\" until the app listens (the boot delay); the ")
	p("floor is resume + boot (resume only where processes survive). The local row runs a real HTTP server as the start ")
	p("command in a local sandbox whose pause kills it; its floor is measured without Sandman (resume, start, first answer ")
	p("polled every 1 ms). Target: Sandman adds at most 300 ms p95 over the floor.\n\n")
	p("| provider model | source | floor ms | p50 ms | p95 ms | max ms | over floor p50 ms | over floor p95 ms | failed |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range res.Profiles {
		p("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d |\n", x.Name, x.Source, x.FloorMS, x.Ready.P50MS,
			x.P95MS, x.Ready.MaxMS, x.OverP50MS, x.OverP95MS, x.Failed)
	}
	p("\n")
}
