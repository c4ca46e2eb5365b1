package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// Report file names inside the output directory.
const (
	ReportMarkdown = "BENCH.md"
	ReportJSON     = "bench.json"
)

// Report is one benchmark run: where and how it ran, and each figure. A
// figure that was not run is nil; one that failed is named in Errors.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	// Seconds is the bench tool's own run time (builds included, DynamoDB
	// Local's start and `go run`'s compile not).
	Seconds float64 `json:"seconds"`
	// Command is how the run was started (e.g. "make bench"), Args the
	// bench tool's exact command line.
	Command string  `json:"command"`
	Args    string  `json:"args"`
	Machine Machine `json:"machine"`
	// DynamoDB says which DynamoDB the figures ran on.
	DynamoDB string `json:"dynamodb"`

	Status    *StatusResult    `json:"status,omitempty"`
	Sweep     *SweepResult     `json:"sweep,omitempty"`
	Webhook   *WebhookResult   `json:"webhook,omitempty"`
	ColdStart *ColdStartResult `json:"cold_start,omitempty"`
	Cost      *CostSection     `json:"cost,omitempty"`
	Outbox    *OutboxResult    `json:"outbox,omitempty"`
	Channel   *ChannelResult   `json:"channel,omitempty"`
	Timers    *TimersResult    `json:"timers,omitempty"`
	Readiness *ReadinessResult `json:"readiness,omitempty"`
	// Open is the stable link's open → first byte figure (open.go).
	Open *OpenResult `json:"open,omitempty"`
	// Pools is the warm pool figure (pools.go).
	Pools *PoolsResult `json:"pools,omitempty"`
	// Deliveries is the outbound webhook figure (deliveries.go).
	Deliveries *DeliveriesResult `json:"deliveries,omitempty"`
	// Fleet is the fleet's provider governor figure (fleet.go).
	Fleet *FleetResult `json:"fleet,omitempty"`
	// Checkpoints is the checkpoint and restore figure with the archive
	// path's (checkpoints.go, archive.go).
	Checkpoints *CheckpointsResult `json:"checkpoints,omitempty"`
	// Recovery is the recovery run (recovery.go).
	Recovery *RecoveryResult `json:"recovery,omitempty"`

	Errors []string `json:"errors,omitempty"`
}

// CostSection is the cost report's part of the run: its own markdown and
// raw figures, or a note saying why there is none.
type CostSection struct {
	Markdown string `json:"-"`
	Raw      any    `json:"raw,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Write writes the report as ReportMarkdown and ReportJSON into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ReportJSON), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportMarkdown), []byte(r.Markdown()), 0o644)
}

// Markdown renders the report for people: one section per figure, tables
// of measured values, and what each figure does and does not show.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Sandman benchmarks\n\n")
	p("Written by `make bench` (`scripts/bench.sh`). Every figure below was measured in the run described here; ")
	p("none is copied from an earlier run. The raw figures are in `bench-results/%s`.\n\n", ReportJSON)

	m := r.Machine
	p("| run | |\n|---|---|\n")
	p("| date | %s |\n", r.StartedAt.UTC().Format("2006-01-02 15:04 MST"))
	p("| command | `%s` |\n", r.Command)
	p("| bench tool | `%s` |\n", r.Args)
	p("| CPUs (nproc) | %d |\n", m.CPUs)
	if m.CPUModel != "" {
		p("| CPU | %s |\n", m.CPUModel)
	}
	p("| memory | %.1f GiB |\n", float64(m.MemoryBytes)/(1<<30))
	p("| Go | %s %s |\n", m.GoVersion, m.OSArch)
	if m.Kernel != "" {
		p("| kernel | Linux %s |\n", m.Kernel)
	}
	p("| DynamoDB | %s |\n", r.DynamoDB)
	p("| load average (1, 5, 15 min) | at start %s; at end %s |\n", m.LoadStart, m.LoadEnd)
	p("| bench tool run time | %s |\n\n", formatSeconds(r.Seconds))
	p("DynamoDB here is DynamoDB Local (Java, in memory) on the same %d CPUs as everything else, ", m.CPUs)
	p("reached over loopback, so absolute latencies are this machine's, not AWS's; the comparisons within a figure ")
	p("(status against a raw GetItem, sweep wall time against its bound) are the point. The machine may be shared: ")
	p("the load averages above say how busy it was.\n\n")

	if s := r.Status; s != nil {
		r.statusSection(&b, s)
	}
	if s := r.Sweep; s != nil {
		r.sweepSection(&b, s)
	}
	if w := r.Webhook; w != nil {
		r.webhookSection(&b, w)
	}
	if c := r.ColdStart; c != nil {
		r.coldStartSection(&b, c)
	}
	p("## 5. Cost report\n\n")
	switch {
	case r.Cost == nil:
		p("Not run.\n\n")
	case r.Cost.Markdown != "":
		p("%s\n", strings.TrimSpace(r.Cost.Markdown))
		if r.Cost.Note != "" {
			p("\n%s\n", r.Cost.Note)
		}
		p("\n")
	default:
		p("%s\n\n", r.Cost.Note)
	}
	if o := r.Outbox; o != nil {
		r.outboxSection(&b, o)
	}
	if c := r.Channel; c != nil {
		r.channelSection(&b, c)
	}
	if t := r.Timers; t != nil {
		r.timersSection(&b, t)
	}
	if x := r.Readiness; x != nil {
		r.readinessSection(&b, x)
	}
	if x := r.Open; x != nil {
		r.openSection(&b, x)
	}
	if x := r.Pools; x != nil {
		r.poolsSection(&b, x)
	}
	if x := r.Checkpoints; x != nil {
		r.checkpointsSection(&b, x)
	}
	if d := r.Deliveries; d != nil {
		r.deliveriesSection(&b, d)
	}
	if f := r.Fleet; f != nil {
		fleetSection(&b, f)
	}
	if x := r.Recovery; x != nil {
		recoverySection(&b, x)
	}
	if len(r.Errors) > 0 {
		p("## Failures\n\n")
		for _, e := range r.Errors {
			p("- %s\n", e)
		}
		p("\n")
	}
	return b.String()
}

func (r *Report) statusSection(b *strings.Builder, s *StatusResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 1. Status latency against a raw GetItem\n\n")
	p("`%s` served by the status function's handler built the way production builds it: `app.ConfigFromEnv`, ", s.Route)
	p("`app.New(…, app.Needs{}, …)` and `App.HTTPHandler(routes.Status)`, as `functions/status/main.go` does ")
	p("(`SANDMAN_PROVIDER=fake`; status never calls a provider). Requests are API Gateway v2 events built from ")
	p("`events/api/status.json`. Two such functions are loaded. The first has the environment a deployed one has, so it ")
	p("takes the API key from the warm container's key cache (`apigw.KeyCache`, TTL %s s) and reads DynamoDB once per ", trimFloat(s.KeyCacheTTLSeconds))
	p("request, for the session. The second has `SANDMAN_API_KEY_CACHE_TTL=0`, so it reads the key and then the ")
	p("session: two `GetItem`s. Both are compared with a raw, strongly consistent `GetItem` of the same session item. ")
	p("There were %s rounds, each with one request of every row, interleaved (the first of each round rotating), ", numfmt.Thousands(s.Requests))
	p("after %d unmeasured rounds. The measured rounds took %.1f s.\n\n", s.Warmup, s.Seconds)
	p("The functions build their own DynamoDB client (`dynamo.NewClient` on `DYNAMODB_ENDPOINT`). To count their requests ")
	p("on the wire, that endpoint is a counting reverse proxy on 127.0.0.1 in front of DynamoDB Local (`bench.CountingProxy`). ")
	p("The raw `GetItem` row goes through the same proxy, so every DynamoDB request of the first three rows pays for the hop ")
	p("in the same way. The last row sends the same `GetItem` straight to DynamoDB Local, which shows what the hop costs: ")
	p("%+.3f ms at p50.\n\n", s.ProxyP50MS)
	p("| request | DynamoDB requests each (total) | n | p50 ms | p90 ms | p99 ms | mean ms | max ms | ÷ GetItem p50 | ÷ GetItem p99 |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range []struct {
		name string
		r    StatusRow
	}{
		{"status, key cached (as deployed)", s.Cached},
		{"status, key looked up every time (`SANDMAN_API_KEY_CACHE_TTL=0`)", s.Uncached},
		{"raw GetItem (through the proxy)", s.GetItem},
		{"raw GetItem, direct (no proxy; reference)", s.GetItemDirect},
	} {
		l := row.r.Latency
		p("| %s | %s | %s | **%.3f** | %.3f | **%.3f** | %.3f | %.3f | ×%.2f | ×%.2f |\n", row.name, opsEach(row.r.Ops, s.Requests),
			numfmt.Thousands(l.N), l.P50MS, l.P90MS, l.P99MS, l.MeanMS, l.MaxMS, row.r.RatioP50, row.r.RatioP99)
	}
	c, u := s.Cached.Latency, s.Uncached.Latency
	p("\n**status with the key cached ÷ GetItem: ×%.2f at p50, ×%.2f at p99. ", s.Cached.RatioP50, s.Cached.RatioP99)
	p("With the key looked up every time: ×%.2f at p50, ×%.2f at p99.**\n\n", s.Uncached.RatioP50, s.Uncached.RatioP99)
	p("The key cache saves %.3f ms per request at p50 (%.0f%% of the uncached time) and %.3f ms at p99. ",
		u.P50MS-c.P50MS, percent(u.P50MS-c.P50MS, u.P50MS), u.P99MS-c.P99MS)
	p("A ratio near 1 for the cached row, or near 2 for the uncached row, means the handler itself costs little ")
	p("beyond its DynamoDB round trips.\n\n")
	verdict := "**all as expected**"
	if !s.Check.OK {
		verdict = "**NOT as expected**: " + strings.Join(s.Check.Problems, "; ")
	}
	p("Check of the DynamoDB requests counted for each row: %s. The expected counts are one `GetItem` per cached status ", verdict)
	p("request, plus at most one key lookup per cache TTL; two per uncached request; one per raw read; and no other operation.\n\n")
}

func (r *Report) sweepSection(b *strings.Builder, s *SweepResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 2. Idle sweep at scale\n\n")
	p("One `sweep.Sweeper.Run` over a table of %s running sessions, %s of them past their pause deadline. ",
		numfmt.Thousands(s.Sessions), numfmt.Thousands(s.Idle))
	p("Every provider pause takes %s ms (a real sleep in the fake provider, `fakeprovider.Fault.Delay`). ", trimFloat(s.PauseLatencyMS))
	p("Concurrency %d, provider rate limit %s, page size %d; phase 3 (provider-list reconcile) %s and dormancy off, ",
		s.Concurrency, s.Rate, s.PageSize, s.ReconcileSample)
	p("so the run is about pausing. Each pause is two conditional writes (running → pausing, pausing → paused) around the provider call.\n\n")
	p("| | |\n|---|--:|\n")
	p("| wall time of the run | **%.2f s** |\n", s.WallSeconds)
	p("| bound: idle × latency ÷ concurrency = %s × %s s ÷ %d | %.2f s |\n",
		numfmt.Thousands(s.Idle), trimFloat(s.PauseLatencyMS/1000), s.Concurrency, s.BoundSeconds)
	p("| wall ÷ bound | ×%.2f |\n", s.WallOverBound)
	if c := s.Control; c != nil {
		p("| control: the same sweep of %s other sessions with no provider latency | %.2f s (%.0f PutItem/s) |\n",
			numfmt.Thousands(c.Idle), c.WallSeconds, c.WritesPerSecond)
	}
	p("| pauses per second | %.0f |\n", s.PausesPerSecond)
	p("| sweep summary | candidates %s, paused %s, failed %d, skipped %d, expired %d, incomplete %v |\n\n",
		numfmt.Thousands(s.Summary.Candidates), numfmt.Thousands(s.Summary.Paused), s.Summary.Failed, s.Summary.Skipped, s.Summary.Expired, s.Summary.Incomplete)
	if c := s.Control; c != nil {
		p("The bound counts only the provider's latency. The control run, made right after on the same table, pauses ")
		p("%s further sessions (seeded due 2 minutes after the first run's clock, untouched by it) with the provider ", numfmt.Thousands(c.Idle))
		p("answering at once: its %.2f s is what the two conditional writes per pause and the sweep's own work cost on this ", c.WallSeconds)
		p("machine, with DynamoDB Local sharing its %d CPUs. A sweep takes at least about the larger of the two: ", r.Machine.CPUs)
		p("when the control time is near or above the bound, the table (here DynamoDB Local on a shared machine), not the provider ")
		p("latency or the concurrency, sets the pace. ")
		p("Control run: summary paused %s, provider pause calls %s, Scan %d", numfmt.Thousands(c.Summary.Paused), numfmt.Thousands(c.ProviderPauseCalls), c.Scans)
		if c.OK {
			p(", as expected.\n\n")
		} else {
			p("; **NOT as expected**: %s.\n\n", strings.Join(c.Problems, "; "))
		}
	}
	p("DynamoDB requests issued during the run, counted on the wire by the `X-Amz-Target` header of every HTTP ")
	p("request the SDK sent (SDK retries included):\n\n")
	p("| operation | requests |\n|---|--:|\n")
	p("| **Scan** | **%d** |\n", s.Scans)
	for _, op := range sortedOps(s.Ops) {
		if op != OpScan {
			p("| %s | %s |\n", op, numfmt.Thousands(s.Ops[op]))
		}
	}
	p("\n")
	c := s.Check
	verdict := "**all as expected**"
	if !c.OK {
		verdict = "**NOT as expected**: " + strings.Join(c.Problems, "; ")
	}
	p("Check of the outcome (after the run, not timed): %s.\n\n", verdict)
	p("| what | count | expected |\n|---|--:|--:|\n")
	active := s.Sessions - s.Idle
	p("| provider pause calls | %s | %s |\n", numfmt.Thousands(c.ProviderPauseCalls), numfmt.Thousands(s.Idle))
	p("| other provider calls | %d | 0 |\n", c.ProviderOtherCalls)
	p("| provider sandboxes paused / running | %s / %s | %s / %s |\n", numfmt.Thousands(c.ProviderPaused), numfmt.Thousands(c.ProviderRunning), numfmt.Thousands(s.Idle), numfmt.Thousands(active))
	p("| sessions in the paused index, paused for idle | %s | %s |\n", numfmt.Thousands(c.TablePaused), numfmt.Thousands(s.Idle))
	p("| sessions in the idle index (running) | %s | %s |\n", numfmt.Thousands(c.TableIdleIndex), numfmt.Thousands(active))
	p("| of those, still at version 1 (never written) | %s | %s |\n", numfmt.Thousands(c.TableUntouched), numfmt.Thousands(active))
	p("| lifecycle events published | %s | %s |\n\n", numfmt.Thousands(c.Events), numfmt.Thousands(2*s.Idle))
	p("Seeding (not part of the figure): %s sessions written with %s, %d at a time, in %.1f s (%.0f items/s); ",
		numfmt.Thousands(s.Seed.Items), s.Seed.Method, s.Seed.Workers, s.Seed.Seconds, s.Seed.ItemsPerSecond)
	p("DynamoDB requests: %s.\n\n", opsList(s.Seed.Ops))
}

func (r *Report) webhookSection(b *strings.Builder, w *WebhookResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 3. Webhook ingest\n\n")
	p("Signed E2B deliveries (`%s`) through the real `providerhook.Handler`: signature check over the raw body, parse, ", w.Route)
	p("session lookup by sandbox id (a `Query` of the by_sandbox index), the conditional transition write ")
	p("(publishing its lifecycle event) and the dedupe claim (a conditional `PutItem`). Sessions were created with ")
	p("`lifecycle.Service.Create` on the fake provider; deliveries alternate paused and resumed with increasing ")
	p("timestamps, so every one applies (each answered 200 `applied`, checked). Requests are built and signed before ")
	p("the clock starts. With several senders each sends to its own session, one delivery after another.\n\n")
	p("| senders | deliveries | wall s | events/s | p50 ms | p90 ms | p99 ms | max ms | events published |\n")
	p("|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, run := range []WebhookRun{w.Sequential, w.Concurrent} {
		p("| %d | %s | %.2f | **%.0f** | %.3f | %.3f | %.3f | %.3f | %s |\n", run.Senders, numfmt.Thousands(run.Deliveries),
			run.WallSeconds, run.EventsPerSecond, run.Latency.P50MS, run.Latency.P90MS, run.Latency.P99MS,
			run.Latency.MaxMS, numfmt.Thousands(run.Published))
	}
	p("\nDynamoDB requests per delivery (sequential run): %s.\n\n", perDelivery(w.Sequential.Ops, w.Sequential.Deliveries))
}

func (r *Report) coldStartSection(b *strings.Builder, c *ColdStartResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 4. Lambda cold start\n\n")
	p("Each function built as `make build` builds it (`%s`): for linux/arm64, as deployed, to measure the ", c.BuildFlags)
	p("deployment size (the `bootstrap` zipped with deflate, as the CDK asset is), and for linux/amd64 to run here ")
	p("(build time for both: %.1f s). Each amd64 `bootstrap` was started %d times as a fresh process with a ", c.BuildSecs, c.Runs)
	p("deployed function's environment (table, DynamoDB Local endpoint, `SANDMAN_PROVIDER=e2b` aimed at a loopback fake E2B API (e2btest), the webhook secret, ")
	p("region, dummy credentials, `AWS_LAMBDA_*`) against a minimal Lambda Runtime API that the bench tool serves on ")
	p("127.0.0.1 (`GET …/invocation/next` with the request id, deadline, function ARN and trace id headers; ")
	p("`POST …/response`, `…/error`, `…/init/error`): AWS's Runtime Interface Emulator is not available here.\n\n")
	p("*init* is from process start to its first `GET …/invocation/next`: loading the binary, the Go runtime, reading ")
	p("the configuration and building the SDK clients and the handler; here no network call is made before the first request. ")
	p("(In AWS every function but status and publisher also reads a Secrets Manager secret during init, the provider key or the webhook ")
	p("signing key: one more round trip that is not in these numbers, as the secrets are given in plain environment variables here.) ")
	p("*first invoke* is from handing out the first event to its response: the first request of a fresh process, which also opens ")
	p("the first connection to DynamoDB. *warm invoke* is the second event to the same process. Medians of %d runs.\n\n", c.Runs)
	p("| function | arm64 bootstrap MB | zipped MB | amd64 MB | init ms (min–max) | first invoke ms | warm invoke ms | answers (last run) |\n")
	p("|---|--:|--:|--:|--:|--:|--:|---|\n")
	for _, f := range c.Functions {
		outcome := f.Outcome
		if f.Errors > 0 || f.Failed > 0 {
			outcome += fmt.Sprintf(" (%d error answers, %d failed runs)", f.Errors, f.Failed)
		}
		p("| %s | %.2f | **%.2f** | %.2f | **%.1f** (%.1f–%.1f) | %.1f | %.1f | %s |\n", f.Function,
			mb(f.ARM64Bytes), mb(f.ZipBytes), mb(f.AMD64Bytes), f.InitMedianMS, f.InitMinMS, f.InitMaxMS,
			f.FirstInvokeMedianMS, f.SecondInvokeMedianMS, outcome)
	}
	p("\nEvents: ")
	for i, f := range c.Functions {
		if i > 0 {
			p("; ")
		}
		p("%s: %s", f.Function, f.Event)
	}
	p(". The publisher's events went to a loopback fake EventBridge (`AWS_ENDPOINT_URL_EVENTBRIDGE`), which received %d PutEvents requests", c.PutEventsCalls)
	p(".\n\nThis is a process on this machine, not a Lambda sandbox: Lambda's own overhead (placing the sandbox, ")
	p("fetching and unpacking the zip, starting the runtime) and Graviton's speed are not in these numbers; the share ")
	p("that is the binary's own start-up is.\n\n")
}

// opsList renders op counts as "GetItem 6,000, Query 12" (by name).
func opsList(ops map[string]int64) string {
	if len(ops) == 0 {
		return "none"
	}
	var parts []string
	for _, op := range sortedOps(ops) {
		parts = append(parts, fmt.Sprintf("%s %s", op, numfmt.Thousands(ops[op])))
	}
	return strings.Join(parts, ", ")
}

// perDelivery renders op counts divided by n, e.g. "Query 1, PutItem 2".
func perDelivery(ops map[string]int64, n int) string {
	if n == 0 || len(ops) == 0 {
		return "none"
	}
	var parts []string
	for _, op := range sortedOps(ops) {
		parts = append(parts, fmt.Sprintf("%s %s", op, trimFloat(float64(ops[op])/float64(n))))
	}
	return strings.Join(parts, ", ")
}

// opsEach renders op counts per request and in total for n requests, e.g.
// "GetItem 1 (2,000)" or "GetItem 1.0005 (2,001)".
func opsEach(ops map[string]int64, n int) string {
	if n == 0 || len(ops) == 0 {
		return "none"
	}
	var parts []string
	for _, op := range sortedOps(ops) {
		each := fmt.Sprint(ops[op] / int64(n))
		if ops[op]%int64(n) != 0 {
			each = fmt.Sprintf("%.4f", float64(ops[op])/float64(n))
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", op, each, numfmt.Thousands(ops[op])))
	}
	return strings.Join(parts, ", ")
}

// percent returns part ÷ whole × 100, or 0 when whole is 0.
func percent(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return part / whole * 100
}

func sortedOps(ops map[string]int64) []string { return slices.Sorted(maps.Keys(ops)) }

func mb(n int64) float64 { return float64(n) / 1e6 }

// trimFloat renders f with up to three decimals, trailing zeros dropped.
func trimFloat(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// formatSeconds renders a run time: "9 min 12 s" or "48.2 s".
func formatSeconds(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%d min %02d s", int(s)/60, int(s)%60)
}
