package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// DeliveriesConfig sizes the outbound webhook figure.
type DeliveriesConfig struct {
	// Events is how many sessions are snapshotted, one session.paused
	// delivery each (default 100).
	Events int
}

// DeliveriesResult is the outbound webhook figure: snapshot committed →
// the receiver holds a delivery that verifies (Standard Webhooks), through
// the local path: the table's stream, the outbox poller, the delivery
// engine and its in-process dispatcher, a loopback receiver.
type DeliveriesResult struct {
	Events int `json:"events"`
	// Verified is how many session.paused deliveries arrived and verified,
	// with webhook-id equal to the event's event_id.
	Verified       int     `json:"verified"`
	Lag            Latency `json:"lag"`
	PollIntervalMS float64 `json:"poll_interval_ms"`
}

// RunDeliveries measures the outbound webhook figure on a fresh table with
// its stream.
func RunDeliveries(ctx context.Context, env *Env, cfg DeliveriesConfig) (DeliveriesResult, error) {
	if cfg.Events <= 0 {
		cfg.Events = 100
	}
	res := DeliveriesResult{Events: cfg.Events, PollIntervalMS: ms(outbox.DefaultPollInterval)}
	table, drop, arn, streams, err := env.NewStreamTable(ctx, "bench-deliveries")
	if err != nil {
		return res, err
	}
	defer drop()

	store := dynamostore.New(env.Client, table)
	svcHooks := delivery.NewService(store, delivery.Guard{AllowPrivate: true}, nil, nil)
	var mu sync.Mutex
	verifiedAt := map[string]time.Time{}
	var wh *standardwebhooks.Webhook
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil || !strings.Contains(string(body), `"type":"session.paused"`) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		if _, seen := verifiedAt[r.Header.Get("webhook-id")]; !seen {
			verifiedAt[r.Header.Get("webhook-id")] = time.Now()
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	url := rcv.URL
	types := []string{"session.paused"}
	ep, err := svcHooks.Create(ctx, "bench", delivery.EndpointInput{URL: &url, EventTypes: &types})
	if err != nil {
		return res, err
	}
	if wh, err = standardwebhooks.NewWebhook(ep.Secret); err != nil {
		return res, err
	}

	local := delivery.NewLocal(delivery.LocalConfig{Log: env.Log})
	engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: local, Guard: delivery.Guard{AllowPrivate: true}, Log: env.Log})
	if err != nil {
		return res, err
	}
	commits := &commitClock{Store: env.Store(table), at: map[string]time.Time{}}
	svc := lifecycle.NewService(lifecycle.Config{Store: commits, Provider: fake.New(fake.Config{}), Clock: lifecycle.SystemClock{},
		Policy: lifecycle.DefaultPolicy(), Log: env.Log, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: engine, Log: env.Log})
	pctx, stop := context.WithCancel(ctx)
	local.Start(pctx, engine)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = poller.Run(pctx, outbox.DefaultPollInterval) }()
	defer func() { stop(); wg.Wait(); local.Wait() }()

	env.Printf("deliveries: %d sessions snapshotted, one signed session.paused delivery each", cfg.Events)
	var paused []string
	for i := 0; i < cfg.Events; i++ {
		sess, _, err := svc.Create(ctx, "bench", lifecycle.CreateInput{Template: "base"})
		if err != nil {
			return res, fmt.Errorf("create: %w", err)
		}
		if _, err := svc.PauseNow(ctx, "bench", sess.ID); err != nil {
			return res, fmt.Errorf("snapshot: %w", err)
		}
		got, err := svc.Get(ctx, "bench", sess.ID)
		if err != nil {
			return res, err
		}
		paused = append(paused, lifecycle.EventID(got.ID, got.Version))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(verifiedAt)
		mu.Unlock()
		if n >= len(paused) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lags []time.Duration
	commits.mu.Lock()
	mu.Lock()
	for _, id := range paused {
		if a, ok := verifiedAt[id]; ok {
			lags = append(lags, max(a.Sub(commits.at[id]), 0))
		}
	}
	res.Verified = len(lags)
	mu.Unlock()
	commits.mu.Unlock()
	res.Lag = Summarize(lags)
	env.Printf("deliveries: snapshot → verified receipt p50 %.1f ms p99 %.1f ms max %.1f ms (%d of %d)",
		res.Lag.P50MS, res.Lag.P99MS, res.Lag.MaxMS, res.Verified, res.Events)
	if res.Verified != res.Events {
		return res, fmt.Errorf("%d of %d session.paused deliveries arrived verified", res.Verified, res.Events)
	}
	return res, nil
}

// deliveriesSection renders the outbound webhook figure.
func (r *Report) deliveriesSection(b *strings.Builder, d *DeliveriesResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Outbound webhooks: snapshot → verified receipt\n\n")
	p("%d sessions snapshotted through `lifecycle.Service` on DynamoDB Local; each `session.paused` event goes ", d.Events)
	p("through the table's stream (polled every %.0f ms), the delivery engine (`internal/delivery`) and its in-process ", d.PollIntervalMS)
	p("dispatcher to a loopback receiver that verifies it with the Standard Webhooks Go library. %d of %d verified.\n\n", d.Verified, d.Events)
	p("| n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|\n")
	p("| %d | %.1f | %.1f | %.1f | %.1f |\n\n", d.Lag.N, d.Lag.P50MS, d.Lag.P90MS, d.Lag.P99MS, d.Lag.MaxMS)
}
