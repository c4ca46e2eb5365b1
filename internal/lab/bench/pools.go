package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// PoolsConfig sizes RunPools.
type PoolsConfig struct {
	// Rounds is how many creates each row measures, from the pool and cold
	// (default 10).
	Rounds int
}

// PoolsRow is one provider model and tier of the warm pool figure.
type PoolsRow struct {
	Provider string `json:"provider"`
	Tier     string `json:"tier"`
	Source   string `json:"source"`
	// FromPool and Cold are create request → readiness ready (the
	// commit's ready_at minus the request's start) for creates that took a
	// spare and creates of the same app with no pool.
	FromPool Latency `json:"from_pool"`
	Cold     Latency `json:"cold"`
	// Hits counts the measured creates that answered from_pool (all of
	// them unless a spare was missing).
	Hits   int `json:"hits"`
	Failed int `json:"failed"`
}

// PoolsResult is the warm pool figure.
type PoolsResult struct {
	Rounds int        `json:"rounds"`
	Rows   []PoolsRow `json:"rows"`
}

// poolModel is a provider model: the fake with real sleeps (create,
// resume, app boot), or the local provider with a real server.
type poolModel struct {
	name, source       string
	createMS, resumeMS float64
	bootMS             float64
	keeps              bool
	local              bool
	localBootMS        int
}

var poolModels = []poolModel{
	{name: "fake e2b (keeps processes)", createMS: 1000, resumeMS: 1000, bootMS: 2000, keeps: true,
		source: "docs/providers/e2b.md: resume about 1 s; create 1 s and a 2 s dev-server boot assumed"},
	{name: "fake vercel (loses processes)", createMS: 1000, resumeMS: 1000, bootMS: 2000,
		source: "assumed: no published figures; 1 s create and resume, 2 s dev-server boot"},
	{name: "fake daytona (loses processes)", createMS: 1000, resumeMS: 1000, bootMS: 2000,
		source: "assumed: no published figures; 1 s create and start, 2 s dev-server boot (a stop loses processes)"},
	{name: "local, real server", local: true, localBootMS: 1000,
		source: "measured: a local sandbox (process) whose app sleeps 1 s (its install) then serves"},
}

// RunPools measures create request → ready from a warm pool's spare and
// cold, per provider model and tier: the service on memstore with the
// in-process readiness worker; before each round the pool is filled
// (FillPools), then one create of the pool's app (from the pool) and one of
// the same app with another env value (cold) are each waited to ready.
func RunPools(ctx context.Context, env *Env, cfg PoolsConfig) (PoolsResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 10
	}
	res := PoolsResult{Rounds: cfg.Rounds}
	for _, m := range poolModels {
		for _, tier := range []lifecycle.PoolTier{lifecycle.TierPaused, lifecycle.TierRunning} {
			row, err := poolsRow(ctx, m, tier, cfg.Rounds)
			if err != nil {
				return res, fmt.Errorf("%s %s: %w", m.name, tier, err)
			}
			res.Rows = append(res.Rows, row)
			env.Printf("pools %s, tier %s: create → ready p50 %.0f ms from the pool, %.0f ms cold", m.name, tier,
				row.FromPool.P50MS, row.Cold.P50MS)
		}
	}
	return res, nil
}

func poolsRow(ctx context.Context, m poolModel, tier lifecycle.PoolTier, rounds int) (PoolsRow, error) {
	row := PoolsRow{Provider: m.name, Tier: string(tier), Source: m.source}
	log := slog.New(slog.DiscardHandler)
	var (
		prov       lifecycle.Provider
		client     *http.Client
		line       string
		env, other map[string]string
		cleanup    = func() {}
	)
	if m.local {
		exe, err := os.Executable()
		if err != nil {
			return row, err
		}
		dir, err := os.MkdirTemp("", "sandman-bench-pools-")
		if err != nil {
			return row, err
		}
		lp, err := local.New(local.Config{Dir: dir, Logger: log, Command: []string{exe, "sandbox"}, Env: []string{EnvSandboxChild + "=1"}})
		if err != nil {
			return row, err
		}
		cleanup = func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if page, err := lp.List(cctx, lifecycle.ListRequest{}); err == nil {
				for _, sb := range page.Sandboxes {
					_ = lp.Kill(cctx, sb.ID)
				}
			}
			_ = lp.Close(cctx)
			_ = os.RemoveAll(dir)
		}
		prov, line = lp, "exec '"+exe+"'"
		env = map[string]string{EnvServeApp: "1", EnvServeBootMS: fmt.Sprint(m.localBootMS)}
	} else {
		fp := fake.New(fake.Config{DropProcesses: !m.keeps, BootDelay: time.Duration(m.bootMS * float64(time.Millisecond))})
		fp.SetFault(fake.OpResume, fake.Fault{Delay: time.Duration(m.resumeMS * float64(time.Millisecond))})
		fp.SetFault(fake.OpCreate, fake.Fault{Delay: time.Duration(m.createMS * float64(time.Millisecond))})
		prov, client, line = fp, &http.Client{Transport: fp.Preview()}, "npm run dev"
		env = map[string]string{"NODE_ENV": "development"}
	}
	defer cleanup()
	other = map[string]string{}
	for k, v := range env {
		other[k] = v
	}
	other["BENCH_COLD"] = "1" // the same app, matching no pool
	port := 3000
	pooled := &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: env}
	cold := &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: other}
	spec, err := lifecycle.ResolveApp(nil, pooled)
	if err != nil {
		return row, err
	}
	pool := lifecycle.Pool{ID: lifecycle.PoolID(prov.Name(), "base", spec), Provider: prov.Name(), Template: "base", App: spec,
		Size: 1, Tier: tier, MaxAge: time.Hour}
	w := readiness.New(readiness.Config{Log: log})
	cfg := lifecycle.Config{Store: memstore.New(), Provider: prov, Log: log, ReadinessJobs: w,
		ReadyPollInterval: 5 * time.Millisecond, Pools: []lifecycle.Pool{pool}}
	if client != nil {
		cfg.ReadyHTTP = client
	}
	svc := lifecycle.NewService(cfg)
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); w.Close() }()
	w.Start(wctx, svc.BringUp)

	toReady := func(app *lifecycle.AppInput) (time.Duration, bool, error) {
		start := time.Now()
		sess, _, err := svc.Create(ctx, "acct_bench", lifecycle.CreateInput{Template: "base", App: app})
		if err != nil {
			return 0, false, err
		}
		defer func() { _, _ = svc.Delete(context.WithoutCancel(ctx), "acct_bench", sess.ID) }()
		s, err := svc.WaitReady(ctx, "acct_bench", sess.ID, lifecycle.MaxWaitReady)
		if err != nil {
			return 0, false, err
		}
		if s.Readiness != lifecycle.ReadinessReady {
			return 0, sess.FromPool, errNotReady
		}
		return s.ReadyAt.Sub(start), sess.FromPool, nil
	}
	var hot, coldDs []time.Duration
	for range rounds {
		if sum := svc.FillPools(ctx); sum.Failed > 0 {
			return row, fmt.Errorf("a spare failed to become ready")
		}
		d, hit, err := toReady(pooled)
		switch {
		case err == errNotReady:
			row.Failed++
		case err != nil:
			return row, err
		case hit:
			row.Hits++
			hot = append(hot, d)
		}
		d, _, err = toReady(cold)
		switch {
		case err == errNotReady:
			row.Failed++
		case err != nil:
			return row, err
		default:
			coldDs = append(coldDs, d)
		}
	}
	row.FromPool, row.Cold = Summarize(hot), Summarize(coldDs)
	return row, nil
}

var errNotReady = fmt.Errorf("not ready")

func (r *Report) poolsSection(b *strings.Builder, res *PoolsResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 11. Warm pools: create → ready from a spare and cold (docs/POOLS.md)\n\n")
	p("Each row runs %d rounds on memstore with the in-process readiness worker: fill a pool of size 1 (`FillPools`), ", res.Rounds)
	p("then create a session of the pool's app and wait until it is ready (from the pool: the claim, the resume, the ")
	p("readiness probe), then create one of the same app with one more env value, which matches no pool (cold: the ")
	p("provider's create, the app's start and boot, the probe). The figure is the commit's `ready_at` minus the create ")
	p("request's start. The fakes sleep their create, resume and boot latencies for real; the local rows run a real ")
	p("server whose start sleeps 1 s first, as an install would. A `running` spare is resumed too (the provider call that ")
	p("extends its timeout), so on the fakes it pays the modelled resume latency.\n\n")
	p("| provider model | tier | source | from pool p50 ms | from pool p90 ms | cold p50 ms | cold p90 ms | hits | failed |\n")
	p("|---|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range res.Rows {
		p("| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %d | %d |\n", x.Provider, x.Tier, x.Source,
			x.FromPool.P50MS, x.FromPool.P90MS, x.Cold.P50MS, x.Cold.P90MS, x.Hits, x.Failed)
	}
	p("\n")
}
