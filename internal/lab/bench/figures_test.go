package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// These run each figure at a small scale on DynamoDB Local and check what
// the full-scale run reports is what happened.

func TestRunStatus(t *testing.T) {
	env := MustEnv(t)
	// A manual clock: the warm function's key cache cannot expire mid-run.
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC))
	const n = 20
	res, err := RunStatus(t.Context(), env, StatusConfig{Requests: n, Warmup: 2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		row      StatusRow
		getItems int64
	}{
		// The key comes from the cache: only the session is read.
		{"KeyCached", res.Cached, 1 * n},
		// SANDMAN_API_KEY_CACHE_TTL=0: the key, then the session.
		{"KeyUncached", res.Uncached, 2 * n},
		{"GetItem", res.GetItem, 1 * n},
		{"GetItemDirect", res.GetItemDirect, 1 * n},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, want := c.row.Latency.N, n; got != want {
				t.Errorf("samples = %d, want %d", got, want)
			}
			if got, want := c.row.Ops[OpGetItem], c.getItems; got != want {
				t.Errorf("GetItem requests = %d, want %d", got, want)
			}
			if got, want := len(c.row.Ops), 1; got != want {
				t.Errorf("operations %v, want GetItem only", c.row.Ops)
			}
			if c.row.RatioP50 <= 0 || c.row.RatioP99 <= 0 {
				t.Errorf("ratios = %v at p50, %v at p99, want positive", c.row.RatioP50, c.row.RatioP99)
			}
		})
	}
	if !res.Check.OK {
		t.Errorf("check failed: %v", res.Check.Problems)
	}
	if got, want := res.GetItem.RatioP50, 1.0; got != want {
		t.Errorf("GetItem ÷ itself at p50 = %v, want %v", got, want)
	}
	if got, want := res.KeyCacheTTLSeconds, apigw.DefaultKeyCacheTTL.Seconds(); got != want {
		t.Errorf("key cache TTL = %v s, want %v (app's default)", got, want)
	}
}

// TestCheckStatus makes sure the check fails on the counts a status
// function without the key cache, or one that sends more, would produce.
func TestCheckStatus(t *testing.T) {
	get := func(n int64) map[string]int64 { return map[string]int64{OpGetItem: n} }
	good := StatusResult{Requests: 10, Cached: StatusRow{Ops: get(10)}, Uncached: StatusRow{Ops: get(20)},
		GetItem: StatusRow{Ops: get(10)}, GetItemDirect: StatusRow{Ops: get(10)}}
	for _, c := range []struct {
		name       string
		change     func(r *StatusResult)
		keyLookups int64
		want       string // "" for OK
	}{
		{"OK", func(*StatusResult) {}, 1, ""},
		{"OneKeyLookupAllowed", func(r *StatusResult) { r.Cached.Ops = get(11) }, 1, ""},
		{"CacheNotWired", func(r *StatusResult) { r.Cached.Ops = get(20) }, 1, "status with the key cached: GetItem 20, want 10 to 11"},
		{"UncachedReadsOnce", func(r *StatusResult) { r.Uncached.Ops = get(10) }, 1, "status with the key looked up: GetItem 10, want 20"},
		{"OtherOperation", func(r *StatusResult) { r.GetItem.Ops = map[string]int64{OpGetItem: 10, OpQuery: 1} }, 1, "raw GetItem: Query 1, want 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := good
			c.change(&res)
			got := checkStatus(res, c.keyLookups)
			if c.want == "" {
				if !got.OK {
					t.Errorf("check failed: %v", got.Problems)
				}
				return
			}
			if got.OK {
				t.Fatalf("check passed, want problem %q", c.want)
			}
			if joined := strings.Join(got.Problems, "; "); joined != c.want {
				t.Errorf("problems %q, want %q", joined, c.want)
			}
		})
	}
}

func TestMaxKeyLookups(t *testing.T) {
	for _, c := range []struct {
		name      string
		wall, ttl time.Duration
		want      int64
	}{
		{"ShorterThanTTL", 20 * time.Second, time.Minute, 1},
		{"TwoAndABitTTLs", 150 * time.Second, time.Minute, 3},
		{"NoCache", time.Minute, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := maxKeyLookups(c.wall, c.ttl); got != c.want {
				t.Errorf("maxKeyLookups(%v, %v) = %d, want %d", c.wall, c.ttl, got, c.want)
			}
		})
	}
}

// TestCountingProxy makes sure requests through the proxy reach DynamoDB
// Local and are counted by operation in the proxy's counter only.
func TestCountingProxy(t *testing.T) {
	env := MustEnv(t)
	p, err := NewCountingProxy(env.Endpoint, NewOpCounter(), env.Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.WithoutCancel(t.Context())); err != nil {
			t.Error(err)
		}
	})
	c, err := dynamo.NewClient(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	before := env.Ops.Snapshot()
	for range 3 {
		if _, err := c.ListTables(t.Context(), &dynamodb.ListTablesInput{}); err != nil {
			t.Fatalf("list tables through the proxy: %v", err)
		}
	}
	if got, want := p.Ops.Count("ListTables"), int64(3); got != want {
		t.Errorf("proxy counted ListTables %d times, want %d", got, want)
	}
	if got := Since(before, env.Ops.Snapshot()); len(got) != 0 {
		t.Errorf("env counter moved by %v, want nothing (the proxy has its own)", got)
	}
	if _, err := NewCountingProxy("127.0.0.1:8000", NewOpCounter(), env.Log); err == nil {
		t.Error("proxy to an endpoint without a scheme: no error")
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
	// running → pausing, pausing → paused: one conditional PutItem each, as
	// deployed without a quota (no running-slot counter, no transaction).
	if got, want := res.Ops[OpPutItem], int64(2*30); got != want {
		t.Errorf("PutItem requests = %d, want %d (two conditional writes per pause)", got, want)
	}
	if got := res.Ops[OpTransactWriteItems]; got != 0 {
		t.Errorf("TransactWriteItems requests = %d, want 0 (no quota: no running-slot counter)", got)
	}
	if res.Ops[OpQuery] == 0 {
		t.Error("no Query: the sweep found its candidates some other way")
	}
	if got, want := res.Seed.Ops[OpPutItem], int64(300); got != want {
		t.Errorf("seeding PutItem requests = %d, want %d", got, want)
	}
	if got := res.Seed.Ops[OpTransactWriteItems]; got != 0 {
		t.Errorf("seeding TransactWriteItems requests = %d, want 0", got)
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
	if got := c.Ops[OpTransactWriteItems]; got != 0 {
		t.Errorf("control TransactWriteItems requests = %d, want 0", got)
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
			// the dedupe claim and the transition: one PutItem each
			if got := c.run.Ops[OpPutItem]; got != int64(2*c.want) {
				t.Errorf("PutItem requests = %d, want %d (transition and dedupe claim)", got, 2*c.want)
			}
			if got := c.run.Ops[OpTransactWriteItems]; got != 0 {
				t.Errorf("TransactWriteItems requests = %d, want 0 (no quota: no running-slot counter)", got)
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
		Args:      "internal/lab/cmd/bench -out bench-results/",
		Machine:   Machine{CPUs: 2, MemoryBytes: 24 << 30, GoVersion: "go1.26.0", OSArch: "linux/amd64", LoadStart: "1.00 1.00 1.00", LoadEnd: "2.00 2.00 2.00"},
		DynamoDB:  "DynamoDB Local",
		Status: &StatusResult{Requests: 2000, Warmup: 100, Route: "GET /v1/sessions/{id}/status", KeyCacheTTLSeconds: 60, Seconds: 12.5,
			Cached:        StatusRow{Latency: Latency{N: 2000, P50MS: 1.2, P99MS: 3}, RatioP50: 1.2, RatioP99: 1.5, Ops: map[string]int64{OpGetItem: 2001}},
			Uncached:      StatusRow{Latency: Latency{N: 2000, P50MS: 2.2, P99MS: 5}, RatioP50: 2.2, RatioP99: 2.5, Ops: map[string]int64{OpGetItem: 4000}},
			GetItem:       StatusRow{Latency: Latency{N: 2000, P50MS: 1, P99MS: 2}, RatioP50: 1, RatioP99: 1, Ops: map[string]int64{OpGetItem: 2000}},
			GetItemDirect: StatusRow{Latency: Latency{N: 2000, P50MS: 0.9, P99MS: 2}, RatioP50: 0.9, RatioP99: 1, Ops: map[string]int64{OpGetItem: 2000}},
			ProxyP50MS:    0.1, Check: StatusCheck{OK: true}},
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
		"**status with the key cached ÷ GetItem: ×1.20 at p50, ×1.50 at p99. With the key looked up every time: ×2.20 at p50, ×2.50 at p99.**",
		"| status, key cached (as deployed) | GetItem 1.0005 (2,001) | 2,000 | **1.200** |",
		"| GetItem 2 (4,000) |",
		"saves 1.000 ms per request at p50 (45% of the uncached time) and 2.000 ms at p99",
		"what the hop costs: +0.100 ms at p50",
		"TTL 60 s",
		"took 12.5 s",
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
	if got, want := back.Status.Cached.Ops[OpGetItem], int64(2001); got != want {
		t.Errorf("bench.json status GetItem = %d, want %d", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportMarkdown)); err != nil {
		t.Errorf("BENCH.md: %v", err)
	}
}

// BenchmarkStatus measures one status request through the status
// function as deployed (key cached: one GetItem and the handler) on
// DynamoDB Local behind the counting proxy.
func BenchmarkStatus(b *testing.B) { benchStatusRow(b, (*StatusBench).Status) }

// BenchmarkStatusUncached measures one status request through the status
// function loaded with SANDMAN_API_KEY_CACHE_TTL=0 (two GetItems).
func BenchmarkStatusUncached(b *testing.B) { benchStatusRow(b, (*StatusBench).StatusUncached) }

// BenchmarkStatusGetItem measures the raw GetItem of the item a status
// request reads, through the same proxy, for comparison.
func BenchmarkStatusGetItem(b *testing.B) { benchStatusRow(b, (*StatusBench).GetItem) }

func benchStatusRow(b *testing.B, do func(*StatusBench, context.Context) (time.Duration, error)) {
	sb := MustStatusBench(b)
	var lat []time.Duration
	for b.Loop() {
		d, err := do(sb, b.Context())
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, d)
	}
	reportLatency(b, lat)
}

// MustStatusBench builds a StatusBench on the system clock and drops its
// table when tb ends.
func MustStatusBench(tb testing.TB) *StatusBench {
	tb.Helper()
	sb, drop, err := NewStatusBench(tb.Context(), MustEnv(tb), nil)
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

func TestRunChannel(t *testing.T) {
	env := MustEnv(t)
	res, err := RunChannel(t.Context(), env, ChannelConfig{Rounds: 3, Sessions: 4, ClientsPerSession: 3, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name             string
		run              ChannelRun
		sessions, client int
	}{
		{"Single", res.Single, 3, 3},
		{"FanOut", res.FanOut, 4, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, want := c.run.Sessions, c.sessions; got != want {
				t.Errorf("sessions = %d, want %d", got, want)
			}
			if got, want := c.run.Delivered, c.client; got != want {
				t.Errorf("clients that saw paused = %d, want %d", got, want)
			}
			if got, want := c.run.Latency.N, c.client; got != want {
				t.Errorf("latency samples = %d, want %d", got, want)
			}
			// Each client hears at least the paused push after its greeting.
			if c.run.Pushes < c.client {
				t.Errorf("pushes = %d, want at least %d", c.run.Pushes, c.client)
			}
		})
	}
	// Creates (provisioning, running) and pauses (pausing, paused): 4 per session.
	if got, want := res.Transitions, 4*(3+4); got != want {
		t.Errorf("transitions = %d, want %d", got, want)
	}
	if got, want := res.Notified, res.Transitions; got != want {
		t.Errorf("notified = %d, want %d", got, want)
	}
}
