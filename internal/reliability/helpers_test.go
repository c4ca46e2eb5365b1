package reliability_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/providerhook"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// t0 is when every test's clock starts.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const (
	account       = "acct_reliability"
	webhookSecret = "whsec_reliability_test"
)

var longFlag = flag.Bool("reliability.long", false, "run the long reliability mode (also SANDMAN_RELIABILITY_LONG=1)")

// longMode reports whether the long mode was asked for.
func longMode() bool {
	return *longFlag || os.Getenv("SANDMAN_RELIABILITY_LONG") == "1"
}

// seedOverride returns the seed SANDMAN_RELIABILITY_SEED names, if any.
func seedOverride(tb testing.TB) (uint64, bool) {
	tb.Helper()
	v := os.Getenv("SANDMAN_RELIABILITY_SEED")
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		tb.Fatalf("SANDMAN_RELIABILITY_SEED=%q: want a whole number", v)
	}
	return n, true
}

// quiet is a logger that drops everything: the service logs every
// transition and every injected fault.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// world is one test's Sandman: a fresh DynamoDB Local table behind a
// RecordingStore, the fake provider (behind a call counter), the outbox
// (the table's stream publishing into an EventLog),
// a manual clock, and the sweep and webhook handler over one service.
type world struct {
	clock    *lifecycle.ManualClock
	fake     *fake.Provider
	calls    *countingProvider
	store    *reliability.RecordingStore
	events   *reliability.EventLog // what the outbox published, after MustDrain
	outbox   *outbox.Poller        // the table's stream → events
	svc      *lifecycle.Service
	sweeper  *sweep.Sweeper
	hooks    *providerhook.Handler
	observer *reliability.Observer
}

// MustWorld builds a world whose fake provider draws faults from seed.
func MustWorld(tb testing.TB, seed uint64) *world {
	tb.Helper()
	clock := lifecycle.NewManualClock(t0)
	fake := fake.New(fake.Config{Clock: clock, Seed: seed})
	calls := &countingProvider{Provider: fake, results: map[string]map[string]int{}}
	table := dynamotest.MustTable(tb)
	store := reliability.NewRecordingStore(dynamo.New(dynamo.Config{Client: dynamotest.MustClient(tb), Table: table, Log: quiet()}))
	events := &reliability.EventLog{}
	streams, arn := dynamotest.MustStream(tb, table)
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: calls, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: quiet(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}) // resume backoff: no waiting
	w := &world{
		clock: clock, fake: fake, calls: calls, store: store, events: events, svc: svc,
		outbox:   outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: events, Log: quiet()}),
		observer: reliability.NewObserver(fake, clock),
	}
	w.wire(tb)
	return w
}

// wire builds the sweep and the webhook handler over w.svc.
func (w *world) wire(tb testing.TB) {
	tb.Helper()
	format, err := providerhook.NewE2B(w.fake.Name(), webhookSecret)
	if err != nil {
		tb.Fatalf("webhook format: %v", err)
	}
	hooks, err := providerhook.New(providerhook.Config{Applier: w.svc, Formats: []providerhook.Format{format}, Log: quiet()})
	if err != nil {
		tb.Fatalf("webhook handler: %v", err)
	}
	w.sweeper, w.hooks = MustSweeper(tb, w.svc), hooks
}

// rewire rebuilds w's service from its configuration as edit changes it,
// and the sweep and webhook handler over the new service.
func (w *world) rewire(tb testing.TB, edit func(*lifecycle.Config)) {
	tb.Helper()
	cfg := w.svc.Config()
	edit(&cfg)
	w.svc = lifecycle.NewService(cfg)
	w.wire(tb)
}

// MustSweeper returns a sweeper on svc without a rate limit and with
// provider-list reconciling over every sandbox.
func MustSweeper(tb testing.TB, svc *lifecycle.Service) *sweep.Sweeper {
	tb.Helper()
	return sweep.New(svc, sweep.Config{Rate: rate.Inf, Concurrency: 4, ReconcileSample: 10_000}, quiet())
}

// MustSweep runs one sweep and fails the test if it could not start.
func (w *world) MustSweep(tb testing.TB) sweep.Summary {
	tb.Helper()
	sum, err := w.sweeper.Run(tb.Context())
	if err != nil {
		tb.Fatalf("sweep: %v", err)
	}
	return sum
}

// MustSession reads a session from the table.
func (w *world) MustSession(tb testing.TB, id string) *lifecycle.Session {
	tb.Helper()
	sess, err := w.store.GetSession(tb.Context(), id)
	if err != nil {
		tb.Fatalf("get session %s: %v", id, err)
	}
	return sess
}

// MustCreate creates a running session through the healthy service.
func (w *world) MustCreate(tb testing.TB, idleSeconds int64) *lifecycle.Session {
	tb.Helper()
	sess, _, err := w.svc.Create(tb.Context(), account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: idleSeconds})
	if err != nil {
		tb.Fatalf("create session: %v", err)
	}
	return sess
}

// deliver sends one webhook through the real handler and returns the
// status and the outcome it answered.
func (w *world) deliver(ctx context.Context, d reliability.Delivery, requestID string) (int, string, error) {
	req, err := reliability.SignedRequest(webhookSecret, d, requestID)
	if err != nil {
		return 0, "", err
	}
	resp, err := w.hooks.Handle(ctx, req)
	if err != nil {
		return 0, "", fmt.Errorf("webhook handler failed: %w", err)
	}
	var body struct {
		Outcome   string `json:"outcome"`
		ErrorType string `json:"error_type"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		return resp.StatusCode, "", fmt.Errorf("webhook answer %q is not JSON: %w", resp.Body, err)
	}
	if body.Outcome == "" {
		body.Outcome = "error:" + body.ErrorType
	}
	return resp.StatusCode, body.Outcome, nil
}

// MustHistory fails the test unless a session's recorded writes form an
// unbroken version chain and its events match its transitions one to one.
func (w *world) MustHistory(tb testing.TB, id string) []reliability.Write {
	tb.Helper()
	writes := w.store.Writes(id)
	for _, p := range reliability.CheckSession(writes, w.EventsFor(tb, id)) {
		tb.Errorf("session %s %s", id, p)
	}
	return writes
}

// MustDrain publishes everything committed so far: it polls the table's
// stream until a poll finds nothing new. DynamoDB Local makes a record
// readable when its write returns, so the second poll finds nothing; the
// bound only keeps a broken stream from hanging the test.
func (w *world) MustDrain(tb testing.TB) {
	tb.Helper()
	for range 100 {
		n, err := w.outbox.Poll(tb.Context())
		if err != nil {
			tb.Fatalf("outbox poll: %v", err)
		}
		if n == 0 {
			return
		}
	}
	tb.Fatal("the outbox kept finding events after 100 polls")
}

// EventsFor drains the outbox and returns one session's events in
// publication order.
func (w *world) EventsFor(tb testing.TB, id string) []lifecycle.Event {
	tb.Helper()
	w.MustDrain(tb)
	return w.events.For(id)
}

// countingProvider counts the outcome of every provider call by operation:
// ok, transient, gone, conflict or other.
type countingProvider struct {
	lifecycle.Provider

	mu      sync.Mutex
	results map[string]map[string]int
}

var _ lifecycle.Provider = (*countingProvider)(nil)

func (p *countingProvider) count(op string, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, lifecycle.ErrProviderTransient):
		outcome = "transient"
	case errors.Is(err, lifecycle.ErrSandboxGone):
		outcome = "gone"
	case errors.Is(err, lifecycle.ErrSandboxConflict):
		outcome = "conflict"
	default:
		outcome = "other"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.results[op] == nil {
		p.results[op] = map[string]int{}
	}
	p.results[op][outcome]++
}

// total returns how many calls ended with outcome, over every operation.
func (p *countingProvider) total(outcome string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, byOutcome := range p.results {
		n += byOutcome[outcome]
	}
	return n
}

// snapshot returns a copy of the counts.
func (p *countingProvider) snapshot() map[string]map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]map[string]int{}
	for op, m := range p.results {
		out[op] = map[string]int{}
		for k, v := range m {
			out[op][k] = v
		}
	}
	return out
}

func (p *countingProvider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	sb, err := p.Provider.Create(ctx, req)
	p.count("create", err)
	return sb, err
}

func (p *countingProvider) Get(ctx context.Context, id string) (lifecycle.Sandbox, error) {
	sb, err := p.Provider.Get(ctx, id)
	p.count("get", err)
	return sb, err
}

func (p *countingProvider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	page, err := p.Provider.List(ctx, req)
	p.count("list", err)
	return page, err
}

func (p *countingProvider) Pause(ctx context.Context, id string) error {
	err := p.Provider.Pause(ctx, id)
	p.count("pause", err)
	return err
}

func (p *countingProvider) Resume(ctx context.Context, id string, timeout time.Duration) (lifecycle.Sandbox, error) {
	sb, err := p.Provider.Resume(ctx, id, timeout)
	p.count("resume", err)
	return sb, err
}

func (p *countingProvider) SetTimeout(ctx context.Context, id string, timeout time.Duration) error {
	err := p.Provider.SetTimeout(ctx, id, timeout)
	p.count("set_timeout", err)
	return err
}

func (p *countingProvider) Probe(ctx context.Context, id string) (lifecycle.Probe, error) {
	pr, err := p.Provider.Probe(ctx, id)
	p.count("probe", err)
	return pr, err
}

func (p *countingProvider) Kill(ctx context.Context, id string) error {
	err := p.Provider.Kill(ctx, id)
	p.count("kill", err)
	return err
}

// MustSnapshot pauses a session through the API and fails the test if that
// fails.
func (w *world) MustSnapshot(tb testing.TB, id string) {
	tb.Helper()
	if _, err := w.svc.PauseNow(tb.Context(), account, id); err != nil {
		tb.Fatalf("snapshot %s: %v", id, err)
	}
}

// sandboxState returns the provider's state of a sandbox, or "gone".
func (w *world) sandboxState(id string) lifecycle.SandboxState {
	sb, ok := w.fake.Sandbox(id)
	if !ok {
		return "gone"
	}
	return sb.State
}
