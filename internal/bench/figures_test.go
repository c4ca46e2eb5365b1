package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/sweep"
)

// These run each figure at a small scale on DynamoDB Local and check what
// the full-scale run reports is what happened.

func TestRunStatus(t *testing.T) {
	env := MustEnv(t)
	res, err := RunStatus(t.Context(), env, StatusConfig{Requests: 20, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Status.N, 20; got != want {
		t.Errorf("status samples = %d, want %d", got, want)
	}
	if got, want := res.GetItem.N, 20; got != want {
		t.Errorf("GetItem samples = %d, want %d", got, want)
	}
	// Each round: the key and the session for status, the item raw.
	if got, want := res.Ops[OpGetItem], int64(3*20); got != want {
		t.Errorf("GetItem requests = %d, want %d (two per status request, one raw)", got, want)
	}
	if got, want := len(res.Ops), 1; got != want {
		t.Errorf("operations %v, want GetItem only", res.Ops)
	}
	if res.RatioP50 <= 0 {
		t.Errorf("ratio at p50 = %v, want positive", res.RatioP50)
	}
}

func TestRunSweep(t *testing.T) {
	env := MustEnv(t)
	res, err := RunSweep(t.Context(), env, SweepConfig{
		Sessions: 300, Idle: 30, PauseLatency: time.Millisecond, Concurrency: 8, Rate: rate.Inf, SeedWorkers: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Check.OK {
		t.Errorf("check failed: %v", res.Check.Problems)
	}
	if got, want := res.Scans, int64(0); got != want {
		t.Errorf("Scan requests = %d, want %d", got, want)
	}
	if got, want := res.Summary.Paused, 30; got != want {
		t.Errorf("paused = %d, want %d", got, want)
	}
	if got, want := res.Ops[OpPutItem], int64(2*30); got != want {
		t.Errorf("PutItem requests = %d, want %d (two conditional writes per pause)", got, want)
	}
	if res.Ops[OpQuery] == 0 {
		t.Error("no Query: the sweep found its candidates some other way")
	}
	if got, want := res.Seed.Ops[OpPutItem], int64(300); got != want {
		t.Errorf("seeding PutItem requests = %d, want %d", got, want)
	}
	if got, want := res.BoundSeconds, 0.004; got != want { // 30 × 1 ms ÷ 8, to the ms
		t.Errorf("bound = %v s, want %v", got, want)
	}
	c := res.Control
	if c == nil {
		t.Fatal("no control run")
	}
	if !c.OK {
		t.Errorf("control check failed: %v", c.Problems)
	}
	if got, want := c.Summary.Paused, 30; got != want {
		t.Errorf("control paused = %d, want %d (ControlIdle defaults to Idle)", got, want)
	}
	if got, want := c.Ops[OpPutItem], int64(2*30); got != want {
		t.Errorf("control PutItem requests = %d, want %d", got, want)
	}
}

// TestSweepCheckCatches makes sure the check fails when the sweep did not
// do what the seeding implies: one idle session's sandbox is lost by the
// provider, so its pause expires the session instead of pausing it.
func TestSweepCheckCatches(t *testing.T) {
	env := MustEnv(t)
	sb, drop, err := newSweepBench(t.Context(), env, SweepConfig{
		Sessions: 40, Idle: 4, PauseLatency: time.Millisecond, Concurrency: 4, SeedWorkers: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	if _, err := sb.seed(t.Context()); err != nil {
		t.Fatal(err)
	}
	lost := -1
	for i := range sb.sessions {
		if isIdle(i, 40, 4) {
			lost = i
			break
		}
	}
	if !sb.provider.Forget(sb.sessions[lost].SandboxID) {
		t.Fatalf("sandbox %s of idle session %d not in the provider", sb.sessions[lost].SandboxID, lost)
	}
	res, err := sb.sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.OK {
		t.Fatal("check passed although one idle session expired instead of pausing")
	}
	if got, want := res.Summary.Expired, 1; got != want {
		t.Errorf("expired = %d, want %d", got, want)
	}
	joined := strings.Join(res.Check.Problems, "; ")
	for _, want := range []string{"sweep summary paused: 3, want 4", "sessions in the paused index, paused for idle: 3, want 4"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q lack %q", joined, want)
		}
	}
}

func TestRunWebhook(t *testing.T) {
	env := MustEnv(t)
	res, err := RunWebhook(t.Context(), env, WebhookConfig{Sequential: 10, Concurrent: 16, Senders: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  WebhookRun
		want int
	}{{"Sequential", res.Sequential, 10}, {"Concurrent", res.Concurrent, 16}} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.run.Applied; got != c.want {
				t.Errorf("applied = %d, want %d", got, c.want)
			}
			if got := c.run.Published; got != int64(c.want) {
				t.Errorf("published = %d, want %d (one event per applied delivery)", got, c.want)
			}
			if got := c.run.Ops[OpQuery]; got != int64(c.want) {
				t.Errorf("Query requests = %d, want %d (one sandbox lookup per delivery)", got, c.want)
			}
			if got := c.run.Ops[OpPutItem]; got != int64(2*c.want) {
				t.Errorf("PutItem requests = %d, want %d (transition and dedupe claim)", got, 2*c.want)
			}
			if c.run.EventsPerSecond <= 0 {
				t.Errorf("events/s = %v, want positive", c.run.EventsPerSecond)
			}
		})
	}
	if got, want := res.Concurrent.Senders, 4; got != want {
		t.Errorf("senders = %d, want %d", got, want)
	}
}

func TestReportMarkdown(t *testing.T) {
	rep := &Report{
		StartedAt: time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC),
		Seconds:   612,
		Command:   "make bench (bash scripts/bench.sh)",
		Args:      "go run ./internal/cmd/bench -out bench-results/",
		Machine:   Machine{CPUs: 2, MemoryBytes: 24 << 30, GoVersion: "go1.26.0", OSArch: "linux/amd64", LoadStart: "1.00 1.00 1.00", LoadEnd: "2.00 2.00 2.00"},
		DynamoDB:  "DynamoDB Local",
		Status: &StatusResult{Requests: 2000, Warmup: 100, Route: "GET /v1/sessions/{id}/status",
			Status: Latency{N: 2000, P50MS: 2}, GetItem: Latency{N: 2000, P50MS: 1}, RatioP50: 2, RatioP99: 2.5,
			Ops: map[string]int64{OpGetItem: 6000}},
		Sweep: &SweepResult{Sessions: 100_000, Idle: 10_000, PauseLatencyMS: 100, Concurrency: 64, Rate: "unlimited",
			PageSize: 100, ReconcileSample: "off", WallSeconds: 20.5, BoundSeconds: 15.625, WallOverBound: 1.31,
			Summary: sweep.Summary{Candidates: 10_000, Paused: 10_000}, Ops: map[string]int64{OpPutItem: 20_000, OpQuery: 108},
			Check: SweepCheck{OK: true}},
		Webhook:   &WebhookResult{Route: "POST /v1/webhooks/{provider}", Sequential: WebhookRun{Senders: 1, Deliveries: 2000, EventsPerSecond: 250}},
		ColdStart: &ColdStartResult{Runs: 5, Functions: []FunctionColdStart{{Function: "status", ZipBytes: 4_100_000, InitMedianMS: 7.5, Outcome: "200 running"}}},
		Cost:      &CostSection{Note: "cost not run here"},
		Errors:    []string{"coldstart webhook: 1 failed runs"},
	}
	md := rep.Markdown()
	for _, want := range []string{
		"| CPUs (nproc) | 2 |",
		"| command | `make bench (bash scripts/bench.sh)` |",
		"| date | 2026-01-15 10:00 UTC |",
		"| bench tool run time | 10 min 12 s |",
		"**status ÷ GetItem: ×2.00 at p50, ×2.50 at p99.**",
		"GetItem 6,000",
		"| **Scan** | **0** |",
		"| PutItem | 20,000 |",
		"| bound: idle × latency ÷ concurrency = 10,000 × 0.1 s ÷ 64 | 15.62 s |",
		"**all as expected**",
		"| 1 | 2,000 |",
		"| status | ",
		"**4.10**",
		"cost not run here",
		"## Failures",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}

	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("bench.json does not decode: %v", err)
	}
	if got, want := back.Sweep.Summary.Paused, 10_000; got != want {
		t.Errorf("bench.json sweep paused = %d, want %d", got, want)
	}
	if got, want := back.Status.Ops[OpGetItem], int64(6000); got != want {
		t.Errorf("bench.json status GetItem = %d, want %d", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportMarkdown)); err != nil {
		t.Errorf("BENCH.md: %v", err)
	}
}

// BenchmarkStatus measures one status request through the status
// function's handler on DynamoDB Local (two GetItems and the handler).
func BenchmarkStatus(b *testing.B) {
	sb := MustStatusBench(b)
	var lat []time.Duration
	for b.Loop() {
		d, err := sb.Status(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, d)
	}
	reportLatency(b, lat)
}

// BenchmarkStatusGetItem measures the raw GetItem of the item a status
// request reads, for comparison with BenchmarkStatus.
func BenchmarkStatusGetItem(b *testing.B) {
	sb := MustStatusBench(b)
	var lat []time.Duration
	for b.Loop() {
		d, err := sb.GetItem(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, d)
	}
	reportLatency(b, lat)
}

// MustStatusBench builds a StatusBench and drops its table when tb ends.
func MustStatusBench(tb testing.TB) *StatusBench {
	tb.Helper()
	sb, drop, err := NewStatusBench(tb.Context(), MustEnv(tb))
	if err != nil {
		tb.Fatalf("status bench: %v", err)
	}
	tb.Cleanup(drop)
	return sb
}

func reportLatency(b *testing.B, lat []time.Duration) {
	s := Summarize(lat)
	b.ReportMetric(s.P50MS, "p50-ms")
	b.ReportMetric(s.P99MS, "p99-ms")
}
