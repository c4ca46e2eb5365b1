package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// Webhook signing values of the benchmark (test values, never real ones).
const (
	benchWebhookSecret = "whsec_sandman_bench"
	benchWebhookID     = "wh_sandman_bench"
)

// WebhookConfig sizes RunWebhook. Zero fields take the defaults named.
type WebhookConfig struct {
	// Sequential is how many deliveries one sender makes, one after
	// another (default 2,000).
	Sequential int
	// Concurrent is how many deliveries Senders senders make between them,
	// each to its own session (default 4,000).
	Concurrent int
	// Senders is how many deliver at once in the concurrent run (default 8).
	Senders int
}

func (c WebhookConfig) withDefaults() WebhookConfig {
	if c.Sequential <= 0 {
		c.Sequential = 2000
	}
	if c.Senders <= 0 {
		c.Senders = 8
	}
	if c.Concurrent <= 0 {
		c.Concurrent = 4000
	}
	c.Concurrent = max(c.Concurrent/c.Senders, 1) * c.Senders
	return c
}

// WebhookRun is one webhook ingest measurement.
type WebhookRun struct {
	Senders    int `json:"senders"`
	Deliveries int `json:"deliveries"`
	// WallSeconds is from the first delivery's start to the last one's end.
	WallSeconds float64 `json:"wall_seconds"`
	// EventsPerSecond is Deliveries ÷ WallSeconds.
	EventsPerSecond float64 `json:"events_per_second"`
	// Latency is each delivery's Handler.Handle time.
	Latency Latency `json:"latency"`
	// Applied counts deliveries answered 200 with outcome "applied".
	Applied int `json:"applied"`
	// Published counts the lifecycle events the service published.
	Published int64 `json:"published"`
	// Ops is every DynamoDB request of the run, by operation.
	Ops map[string]int64 `json:"dynamodb_ops"`
}

// WebhookResult is the webhook ingest figure.
type WebhookResult struct {
	Route      string     `json:"route"`
	Sequential WebhookRun `json:"sequential"`
	Concurrent WebhookRun `json:"concurrent"`
}

// webhookBench is the webhook function wired to DynamoDB Local and the fake
// provider, with a publisher that counts.
type webhookBench struct {
	env       *Env
	svc       *lifecycle.Service
	provider  *fake.Provider
	handler   *providerhook.Handler
	template  events.APIGatewayV2HTTPRequest
	published atomic.Int64
	seq       atomic.Int64 // delivery numbering
}

func newWebhookBench(ctx context.Context, env *Env, table string) (*webhookBench, error) {
	b := &webhookBench{env: env, provider: fake.New(fake.Config{})}
	store := env.Store(table)
	pub := lifecycle.PublisherFunc(func(_ context.Context, evs ...lifecycle.Event) error {
		b.published.Add(int64(len(evs)))
		return nil
	})
	b.svc = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(store, pub), Provider: b.provider, Clock: lifecycle.SystemClock{}, Policy: lifecycle.DefaultPolicy(), Log: env.Log})
	format, err := providerhook.NewE2B(b.provider.Name(), benchWebhookSecret)
	if err != nil {
		return nil, err
	}
	if b.handler, err = providerhook.New(providerhook.Config{Applier: b.svc, Formats: []providerhook.Format{format}, Log: env.Log}); err != nil {
		return nil, err
	}
	raw, err := env.Fixture("webhooks/apigw-e2b-paused.json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &b.template); err != nil {
		return nil, fmt.Errorf("decode events/webhooks/apigw-e2b-paused.json: %w", err)
	}
	return b, nil
}

// deliveries creates a session through the service (its sandbox in the
// fake provider) and returns n signed deliveries for it, alternating paused
// and resumed, each 1 ms after the one before, so every one applies.
func (b *webhookBench) deliveries(ctx context.Context, n int) ([]events.APIGatewayV2HTTPRequest, error) {
	sess, _, err := b.svc.Create(ctx, "acct_bench", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	meta := map[string]string{lifecycle.MetadataSessionID: sess.ID}
	base := time.Now().UTC()
	out := make([]events.APIGatewayV2HTTPRequest, n)
	for i := range out {
		typ := lifecycle.ProviderEventPaused
		if i%2 == 1 {
			typ = lifecycle.ProviderEventResumed
		}
		k := b.seq.Add(1)
		body := e2bhook.NewBody(lifecycle.ProviderEvent{
			ID:        fmt.Sprintf("bench-%08d", k),
			Type:      typ,
			SandboxID: sess.SandboxID,
			Timestamp: base.Add(time.Duration(i+1) * time.Millisecond),
		}, meta)
		raw, err := e2bhook.Build(body)
		if err != nil {
			return nil, err
		}
		out[i] = b.request(raw, fmt.Sprintf("delivery-%08d", k))
	}
	return out, nil
}

// request returns the fixture request carrying raw, signed.
func (b *webhookBench) request(raw []byte, deliveryID string) events.APIGatewayV2HTTPRequest {
	return signedDelivery(b.template, raw, deliveryID)
}

// signedDelivery returns a copy of the webhook fixture request tmpl carrying
// the body raw, signed with the benchmark's secret as E2B signs, with its
// own delivery and request id.
func signedDelivery(tmpl events.APIGatewayV2HTTPRequest, raw []byte, deliveryID string) events.APIGatewayV2HTTPRequest {
	req := tmpl
	req.Headers = maps.Clone(tmpl.Headers)
	if req.Headers == nil {
		req.Headers = map[string]string{}
	}
	req.Headers["content-length"] = strconv.Itoa(len(raw))
	for k, vs := range e2bhook.Header(benchWebhookSecret, benchWebhookID, deliveryID, raw) {
		req.Headers[strings.ToLower(k)] = vs[0]
	}
	req.Body, req.IsBase64Encoded = string(raw), false
	req.RequestContext.RequestID = deliveryID
	return req
}

// deliver sends one request and returns its latency. Errors: any answer
// but 200 with outcome applied.
func (b *webhookBench) deliver(ctx context.Context, req events.APIGatewayV2HTTPRequest) (time.Duration, error) {
	start := time.Now()
	resp, err := b.handler.Handle(ctx, req)
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	var body struct {
		Outcome string `json:"outcome"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &body)
	if resp.StatusCode != http.StatusOK || body.Outcome != string(lifecycle.WebhookApplied) {
		return 0, fmt.Errorf("delivery %s: answered %d %s", req.RequestContext.RequestID, resp.StatusCode, resp.Body)
	}
	return took, nil
}

// run delivers perSender deliveries from each of senders senders at once,
// each sender to its own session, and measures it.
func (b *webhookBench) run(ctx context.Context, senders, perSender int) (WebhookRun, error) {
	reqs := make([][]events.APIGatewayV2HTTPRequest, senders)
	for s := range reqs {
		var err error
		if reqs[s], err = b.deliveries(ctx, perSender); err != nil {
			return WebhookRun{}, err
		}
	}
	lat := make([][]time.Duration, senders)
	published := b.published.Load()
	before := b.env.Ops.Snapshot()
	var ready sync.WaitGroup
	ready.Add(senders)
	startGun := make(chan struct{})
	g, gctx := errgroup.WithContext(ctx)
	for s := range senders {
		g.Go(func() error {
			ready.Done()
			<-startGun
			lat[s] = make([]time.Duration, 0, perSender)
			for _, req := range reqs[s] {
				d, err := b.deliver(gctx, req)
				if err != nil {
					return err
				}
				lat[s] = append(lat[s], d)
			}
			return nil
		})
	}
	ready.Wait()
	start := time.Now()
	close(startGun)
	err := g.Wait()
	wall := time.Since(start)
	if err != nil {
		return WebhookRun{}, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return WebhookRun{
		Senders:         senders,
		Deliveries:      len(all),
		WallSeconds:     seconds(wall),
		EventsPerSecond: math.Round(float64(len(all)) / wall.Seconds()),
		Latency:         Summarize(all),
		Applied:         len(all), // deliver fails on anything else
		Published:       b.published.Load() - published,
		Ops:             Since(before, b.env.Ops.Snapshot()),
	}, nil
}

// RunWebhook measures webhook ingest through the real providerhook.Handler:
// signature check, parse, session lookup by sandbox, the conditional
// transition (publishing its event) and the dedupe claim. Sessions are
// created with lifecycle.Service.Create on the fake provider; deliveries
// alternate paused and resumed with increasing timestamps, so each one
// applies. Requests are built and signed before the clock starts. First
// cfg.Sequential deliveries from one sender, then cfg.Concurrent from
// cfg.Senders senders at once, one session each (deliveries for one
// session are sequential, as a provider sends them).
func RunWebhook(ctx context.Context, env *Env, cfg WebhookConfig) (WebhookResult, error) {
	cfg = cfg.withDefaults()
	table, drop, err := env.NewTable(ctx, "bench-webhook")
	if err != nil {
		return WebhookResult{}, err
	}
	defer drop()
	b, err := newWebhookBench(ctx, env, table)
	if err != nil {
		return WebhookResult{}, err
	}
	res := WebhookResult{Route: "POST /v1/webhooks/{provider}"}
	env.Printf("webhook: %d sequential deliveries", cfg.Sequential)
	if res.Sequential, err = b.run(ctx, 1, cfg.Sequential); err != nil {
		return WebhookResult{}, fmt.Errorf("sequential webhooks: %w", err)
	}
	env.Printf("webhook: sequential %.0f events/s, p50 %.3f ms", res.Sequential.EventsPerSecond, res.Sequential.Latency.P50MS)
	env.Printf("webhook: %d deliveries from %d concurrent senders", cfg.Concurrent, cfg.Senders)
	if res.Concurrent, err = b.run(ctx, cfg.Senders, cfg.Concurrent/cfg.Senders); err != nil {
		return WebhookResult{}, fmt.Errorf("concurrent webhooks: %w", err)
	}
	env.Printf("webhook: %d senders %.0f events/s, p50 %.3f ms", cfg.Senders, res.Concurrent.EventsPerSecond, res.Concurrent.Latency.P50MS)
	return res, nil
}
