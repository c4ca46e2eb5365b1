package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/governor/dynamostore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// EnvFleetChild holds a fleet child's configuration (fleetChildConfig as
// JSON): the bench binary, or the lab's test binary, started with it runs
// one process of the fleet figure and exits (ChildIfAsked).
const EnvFleetChild = "SANDMAN_BENCH_FLEET_CHILD"

// The fleet figure's call mix: shares of the offered load, the account
// each kind is made for, and its budget (how long a call may wait for its
// token before it is refused).
var fleetMix = []fleetKind{
	{name: "create", class: lifecycle.PriorityUser, account: "flood", share: 0.35, budget: 5 * time.Second},
	{name: "resume", class: lifecycle.PriorityUser, account: "calm", share: 0.05, budget: 5 * time.Second},
	{name: "pause", class: lifecycle.PriorityBackground, share: 0.40, budget: 10 * time.Second},
	{name: "refresh", class: lifecycle.PriorityRefresh, share: 0.20, budget: 10 * time.Second},
}

// fleetBackgroundAccounts is how many accounts the pauses and refreshes
// are spread over.
const fleetBackgroundAccounts = 20

type fleetKind struct {
	name    string
	class   lifecycle.CallPriority
	account string // "" : one of fleetBackgroundAccounts
	share   float64
	budget  time.Duration
}

// FleetPhase is one stretch of a fleet run: the offered load (× the
// provider's limit) for Seconds.
type FleetPhase struct {
	Name    string  `json:"name"`
	Load    float64 `json:"load"`
	Seconds float64 `json:"seconds"`
}

// fleetChildConfig is what the parent tells a child.
type fleetChildConfig struct {
	Index     int          `json:"index"`
	Processes int          `json:"processes"`
	Endpoint  string       `json:"endpoint"`
	Table     string       `json:"table"`
	Key       string       `json:"key"`
	Provider  string       `json:"provider"`
	Rate      float64      `json:"rate"`
	Burst     int          `json:"burst"`
	Fallback  float64      `json:"fallback"`
	Start     time.Time    `json:"start"`
	Phases    []FleetPhase `json:"phases"`
	Seed      uint64       `json:"seed"`
	// TableTimeout is the governor's (0: its default); Shards its bucket
	// items.
	TableTimeout time.Duration `json:"table_timeout"`
	Shards       int           `json:"shards"`
}

// fleetCallResult is one call as the child saw it.
type fleetCallResult struct {
	Phase  int    `json:"p"`
	Kind   string `json:"k"`
	Served bool   `json:"s"`
	// WaitUS is the time from the call to its request reaching the
	// provider (the governor's part), µs; for a refused call, to its
	// refusal.
	WaitUS int64 `json:"w"`
	// LagUS is how late the call started after its arrival time (the
	// process's scheduling: the arrival loop's timer and the call's
	// goroutine waiting for a core), µs; not in WaitUS.
	LagUS int64 `json:"l,omitempty"`
	// OverUS is how far past its budget the governor kept the call (its
	// wait), µs (0: within).
	OverUS int64 `json:"o,omitempty"`
	// Throttled: the provider answered 429 to it (before a retry).
	Throttled bool `json:"t,omitempty"`
	// Fallback: the call went through the per-process limiter.
	Fallback bool `json:"f,omitempty"`
}

// fleetChildResult is what a child prints on its last line.
type fleetChildResult struct {
	Calls     []fleetCallResult `json:"calls"`
	Leases    int               `json:"leases"`
	Leased    int               `json:"leased"`
	Fallbacks int               `json:"fallbacks"`
	// LeaseUS are the table's answer times of the leases, µs.
	LeaseUS []int64 `json:"lease_us"`
	// GrantUS are, per phase, the governor's own waits of the user calls
	// it let through from a lease (Metrics.CallGranted: from the call
	// taking the governor's lock to its token), µs.
	GrantUS [][]int64 `json:"grant_us"`
	Error   string    `json:"error,omitempty"`
}

// runFleetChild runs one fleet process from its configuration in
// EnvFleetChild and prints its result as JSON on stdout.
func runFleetChild() {
	var cfg fleetChildConfig
	res := fleetChildResult{}
	if err := json.Unmarshal([]byte(os.Getenv(EnvFleetChild)), &cfg); err != nil {
		res.Error = fmt.Sprintf("read the child's configuration: %v", err)
	} else {
		res = fleetChild(context.Background(), cfg)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// fleetMetrics counts the governor's leases and fallbacks, and keeps its
// waits of the user calls by phase (bounds: the phases' ends).
type fleetMetrics struct {
	mu        sync.Mutex
	leases    int
	leased    int
	fallbacks int
	inFall    bool
	took      []int64
	bounds    []time.Time
	grants    [][]int64
}

func (m *fleetMetrics) CallGranted(_ string, c lifecycle.CallPriority, wait time.Duration) {
	if c != lifecycle.PriorityUser {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, end := range m.bounds {
		if now.Before(end) {
			m.grants[i] = append(m.grants[i], wait.Microseconds())
			return
		}
	}
}

func (m *fleetMetrics) CallRefused(string, lifecycle.CallPriority) {}
func (m *fleetMetrics) Throttled(string, lifecycle.CallPriority)   {}
func (m *fleetMetrics) Leased(_ string, n int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.leases++
	m.leased += n
	m.took = append(m.took, took.Microseconds())
}
func (m *fleetMetrics) Fallback(_ string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.fallbacks++
	}
	m.inFall = on
}

func (m *fleetMetrics) falling() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inFall
}

func fleetChild(ctx context.Context, cfg fleetChildConfig) fleetChildResult {
	client, err := dynamo.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return fleetChildResult{Error: err.Error()}
	}
	m := &fleetMetrics{grants: make([][]int64, len(cfg.Phases))}
	for at, i := cfg.Start, 0; i < len(cfg.Phases); i++ {
		at = at.Add(time.Duration(cfg.Phases[i].Seconds * float64(time.Second)))
		m.bounds = append(m.bounds, at)
	}
	hp := &fleetProvider{url: cfg.Provider, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	p := governor.Wrap(hp, governor.Config{Limit: calllimit.Limit{PerSecond: cfg.Rate, Burst: cfg.Burst},
		Table: dynamostore.New(client, cfg.Table), Key: cfg.Key, Fallback: cfg.Fallback, Metrics: m, TableTimeout: cfg.TableTimeout,
		Shards: cfg.Shards,
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Index)))
	// Open the connection to the table before the start, and write it
	// once, as a warm function has.
	_, _ = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(cfg.Table), Item: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "WARM#" + strconv.Itoa(cfg.Index)}, "sk": &types.AttributeValueMemberS{Value: "WARM"}}})
	time.Sleep(time.Until(cfg.Start))

	var mu sync.Mutex
	var calls []fleetCallResult
	var wg sync.WaitGroup
	// The calls still waiting when the last phase ends are cut short (and
	// count as not served): the run ends with its phases.
	end := cfg.Start
	for _, ph := range cfg.Phases {
		end = end.Add(time.Duration(ph.Seconds * float64(time.Second)))
	}
	runCtx, cancel := context.WithDeadline(ctx, end.Add(200*time.Millisecond))
	defer cancel()
	at := cfg.Start
	for phase, ph := range cfg.Phases {
		end := at.Add(time.Duration(ph.Seconds * float64(time.Second)))
		perSecond := ph.Load * cfg.Rate / float64(cfg.Processes)
		for next := at; next.Before(end); next = next.Add(time.Duration(rng.ExpFloat64() / perSecond * float64(time.Second))) {
			time.Sleep(time.Until(next))
			kind := pickKind(rng.Float64())
			account := kind.account
			if account == "" {
				account = "bg-" + strconv.Itoa(rng.IntN(fleetBackgroundAccounts))
			}
			wg.Go(func() {
				r := fleetCall(runCtx, p, m, kind, account, next)
				r.Phase = phase
				mu.Lock()
				calls = append(calls, r)
				mu.Unlock()
			})
		}
		at = end
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return fleetChildResult{Calls: calls, Leases: m.leases, Leased: m.leased, Fallbacks: m.fallbacks, LeaseUS: m.took, GrantUS: m.grants}
}

// pickKind returns the mix's kind at u in [0, 1).
func pickKind(u float64) fleetKind {
	for _, k := range fleetMix {
		if u < k.share {
			return k
		}
		u -= k.share
	}
	return fleetMix[len(fleetMix)-1]
}

// fleetSent is where a call's provider request records when it was sent.
type fleetSent struct {
	mu        sync.Mutex
	at        time.Time
	throttled bool
}

type fleetSentKey struct{}

// fleetCall makes one call of kind for account, due at arrival, through p
// and reports it.
func fleetCall(runCtx context.Context, p lifecycle.Provider, m *fleetMetrics, kind fleetKind, account string, arrival time.Time) fleetCallResult {
	start := time.Now()
	sent := &fleetSent{}
	ctx, cancel := context.WithTimeout(runCtx, kind.budget)
	defer cancel()
	ctx = context.WithValue(lifecycle.WithCallAccount(lifecycle.WithCallPriority(ctx, kind.class), account), fleetSentKey{}, sent)
	fallback := m.falling()
	var err error
	switch kind.name {
	case "create":
		_, err = p.Create(ctx, lifecycle.CreateRequest{})
	case "resume":
		_, err = p.Resume(ctx, "sb", time.Minute)
	case "pause":
		err = p.Pause(ctx, "sb")
	default:
		err = p.SetTimeout(ctx, "sb", time.Minute)
	}
	end := time.Now()
	r := fleetCallResult{Kind: kind.name, Served: err == nil, Fallback: fallback || m.falling(), LagUS: max(0, start.Sub(arrival).Microseconds())}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	r.Throttled = sent.throttled
	if sent.at.IsZero() {
		r.WaitUS = end.Sub(start).Microseconds()
	} else {
		r.WaitUS = sent.at.Sub(start).Microseconds()
	}
	if over := time.Duration(r.WaitUS)*time.Microsecond - kind.budget; over > 0 {
		r.OverUS = over.Microseconds()
	}
	return r
}

// fleetProvider is a lifecycle.Provider whose every call is one POST to
// the fake provider (RunFleet's), naming the call's class and account, as
// an adapter's request would be: it asks the call's gate before the
// attempt and tells it the answer; a 429 is a transient, Refused error
// with the answer's Retry-After.
type fleetProvider struct {
	url    string
	client *http.Client
}

func (f *fleetProvider) do(ctx context.Context, op string) error {
	gate := lifecycle.CallGateOf(ctx)
	if gate != nil {
		if err := gate.Attempt(ctx); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/"+op, nil)
	if err != nil {
		return err
	}
	class, _ := lifecycle.CallPriorityOf(ctx)
	req.Header.Set("X-Class", class.String())
	req.Header.Set("X-Account", lifecycle.CallAccountOf(ctx))
	sent, _ := ctx.Value(fleetSentKey{}).(*fleetSent)
	if sent != nil {
		sent.mu.Lock()
		if sent.at.IsZero() {
			sent.at = time.Now()
		}
		sent.mu.Unlock()
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, "sb", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		after := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			after = time.Duration(s) * time.Second
		}
		if sent != nil {
			sent.mu.Lock()
			sent.throttled = true
			sent.mu.Unlock()
		}
		if gate != nil {
			gate.Answered(resp.StatusCode, after)
		}
		return &lifecycle.ProviderError{Kind: lifecycle.ErrProviderTransient, Op: op, SandboxID: "sb", RetryAfter: after, Refused: true,
			Err: fmt.Errorf("429 from the fake provider")}
	}
	if resp.StatusCode != http.StatusOK {
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, "sb", fmt.Errorf("status %d", resp.StatusCode))
	}
	return nil
}

func (f *fleetProvider) Name() string { return "fleet" }
func (f *fleetProvider) Create(ctx context.Context, _ lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{ID: "sb"}, f.do(ctx, "create")
}
func (f *fleetProvider) Get(ctx context.Context, _ string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, f.do(ctx, "get")
}
func (f *fleetProvider) List(ctx context.Context, _ lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, f.do(ctx, "list")
}
func (f *fleetProvider) Pause(ctx context.Context, _ string) error { return f.do(ctx, "pause") }
func (f *fleetProvider) Resume(ctx context.Context, _ string, _ time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, f.do(ctx, "resume")
}
func (f *fleetProvider) SetTimeout(ctx context.Context, _ string, _ time.Duration) error {
	return f.do(ctx, "set_timeout")
}
func (f *fleetProvider) Probe(ctx context.Context, _ string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, f.do(ctx, "probe")
}
func (f *fleetProvider) Kill(ctx context.Context, _ string) error { return f.do(ctx, "kill") }
