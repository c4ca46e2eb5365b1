package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// fixtureSessionID is the session id the events/api fixtures carry
// (events/api/README.md); requests are re-addressed to a real session.
const fixtureSessionID = "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"

// Session item key layout (internal/dynamo's package doc): pk
// "SESSION#<id>", sk "SESSION".
const (
	sessionKeyPrefix = "SESSION#"
	sessionSortKey   = "SESSION"
)

// closeTimeout bounds closing what a figure opened (apps, the proxy).
const closeTimeout = 10 * time.Second

// StatusConfig sizes RunStatus.
type StatusConfig struct {
	// Requests is how many measured rounds run; each round sends one
	// request of every row of StatusResult (default 2,000).
	Requests int
	// Warmup is how many rounds run first, unmeasured (default 100).
	Warmup int
	// Clock is the status functions' clock, which also dates the session
	// (default lifecycle.SystemClock, as deployed: the warm function's key
	// cache then expires as in production, once per TTL). Tests pass a
	// lifecycle.ManualClock so it cannot expire during a run.
	Clock lifecycle.Clock
}

func (c StatusConfig) withDefaults() StatusConfig {
	if c.Requests <= 0 {
		c.Requests = 2000
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	} else if c.Warmup == 0 {
		c.Warmup = 100
	}
	if c.Clock == nil {
		c.Clock = lifecycle.SystemClock{}
	}
	return c
}

// StatusRow is one kind of request of the status figure.
type StatusRow struct {
	Latency Latency `json:"latency"`
	// Ops is every DynamoDB request this row sent during the measured
	// rounds, by operation, counted on the wire (SDK retries included).
	Ops map[string]int64 `json:"dynamodb_ops"`
	// RatioP50 and RatioP99 are this row's latency ÷ the raw GetItem's
	// (StatusResult.GetItem) at p50 and p99.
	RatioP50 float64 `json:"ratio_p50"`
	RatioP99 float64 `json:"ratio_p99"`
}

// StatusCheck says whether every row sent the DynamoDB requests it should:
// the warm status function one GetItem per request (plus at most one key
// lookup per cache TTL), the uncached one two, each raw row one, and
// nothing else.
type StatusCheck struct {
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// StatusResult is the status latency figure.
type StatusResult struct {
	Requests int    `json:"requests"`
	Warmup   int    `json:"warmup"`
	Route    string `json:"route"`
	// Wiring says how the status handlers were built.
	Wiring string `json:"wiring"`
	// KeyCacheTTLSeconds is the warm function's API-key cache TTL, in
	// seconds (apigw.DefaultKeyCacheTTL: SANDMAN_API_KEY_CACHE_TTL unset).
	KeyCacheTTLSeconds float64 `json:"key_cache_ttl_seconds"`
	// Seconds is the wall time of the measured rounds, in seconds.
	Seconds float64 `json:"seconds"`

	// Cached is GET /v1/sessions/{id}/status through the status function's
	// handler as deployed (app.New, App.HTTPHandler): the API key comes
	// from the warm function's apigw.KeyCache, then one GetItem of the
	// session, the ownership check and the JSON answer.
	Cached StatusRow `json:"status_key_cached"`
	// Uncached is the same request to a status function loaded with
	// SANDMAN_API_KEY_CACHE_TTL=0: a GetItem of the key, then of the
	// session.
	Uncached StatusRow `json:"status_key_uncached"`
	// GetItem is a raw, strongly consistent GetItem of the same session
	// item on the same path as the status functions' requests (through
	// the counting proxy).
	GetItem StatusRow `json:"get_item"`
	// GetItemDirect is the same GetItem sent straight to DynamoDB Local,
	// not through the proxy: the reference that shows the proxy's cost.
	GetItemDirect StatusRow `json:"get_item_direct"`
	// ProxyP50MS is GetItem's p50 minus GetItemDirect's, in milliseconds:
	// what the counting proxy's hop adds to one DynamoDB request (noise can
	// make it negative).
	ProxyP50MS float64 `json:"proxy_p50_ms"`

	Check StatusCheck `json:"check"`
}

// statusWiring describes how NewStatusBench builds the status handlers.
const statusWiring = "app.ConfigFromEnv + app.New(app.Needs{}) + App.HTTPHandler(routes.Status), as functions/status/main.go; " +
	"SANDMAN_PROVIDER=fake, DYNAMODB_ENDPOINT = the counting proxy"

// StatusBench is two status functions loaded as functions/status/main.go
// loads one (app.New, App.HTTPHandler), one with the API-key cache as
// deployed and one with it turned off, on DynamoDB Local behind a
// CountingProxy, with one session and the fixtures' API key; and a raw
// GetItem of the session item through the proxy and straight to DynamoDB
// Local. Each method times one request. Build it with NewStatusBench.
type StatusBench struct {
	cached, uncached *apigw.Handler
	proxied          *dynamodb.Client // dynamo.NewClient on the proxy, as app builds its own
	direct           *dynamodb.Client // env.Client
	proxyOps         *OpCounter
	directOps        *OpCounter
	keyTTL           time.Duration
	sessionID        string
	req              events.APIGatewayV2HTTPRequest
	getInput         *dynamodb.GetItemInput
}

// NewStatusBench creates a table with the dev API key of the fixtures
// (apigw.DevAPIKey, account apigw.DevAccountID) and one running session
// created through lifecycle.Service.Create on the fake provider, starts a
// CountingProxy to env.Endpoint, and loads two status functions through
// app.New pointed at the table and the proxy: one with the environment a
// deployed status function has (key cache on, default TTL) and one with
// SANDMAN_API_KEY_CACHE_TTL=0. clock is the functions' clock (nil:
// lifecycle.SystemClock). The returned function closes the functions and
// the proxy and drops the table.
func NewStatusBench(ctx context.Context, env *Env, clock lifecycle.Clock) (*StatusBench, func(), error) {
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	table, dropTable, err := env.NewTable(ctx, "bench-status")
	if err != nil {
		return nil, nil, err
	}
	var closers []func()
	drop := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		dropTable()
	}
	ok := false
	defer func() {
		if !ok {
			drop()
		}
	}()

	store := env.Store(table)
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
		AccountID: apigw.DevAccountID, CreatedAt: clock.Now()}); err != nil {
		return nil, nil, fmt.Errorf("store the dev api key: %w", err)
	}
	// Status never calls the provider (docs/DESIGN.md; its function has no
	// provider credentials); the fake only creates the session's sandbox.
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: fake.New(fake.Config{Clock: clock}), Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: env.Log})
	sess, _, err := svc.Create(ctx, apigw.DevAccountID, lifecycle.CreateInput{Template: "base"})
	if err != nil {
		return nil, nil, fmt.Errorf("create the session: %w", err)
	}

	proxy, err := NewCountingProxy(env.Endpoint, NewOpCounter(), env.Log)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if err := proxy.Close(cctx); err != nil {
			env.Printf("warning: %v", err)
		}
	})
	load := func(extra map[string]string) (*apigw.Handler, *app.App, error) {
		a, h, err := newStatusApp(ctx, env, proxy.URL, table, clock, extra)
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
			defer cancel()
			if err := a.Close(cctx); err != nil {
				env.Printf("warning: close status app: %v", err)
			}
		})
		return h, a, nil
	}
	cached, cachedApp, err := load(nil)
	if err != nil {
		return nil, nil, err
	}
	uncached, _, err := load(map[string]string{app.EnvAPIKeyCacheTTL: "0"})
	if err != nil {
		return nil, nil, err
	}
	keyTTL := cachedApp.Config.APIKeyCacheTTL
	if keyTTL == 0 {
		keyTTL = apigw.DefaultKeyCacheTTL // app.New's default for an unset variable
	}
	proxied, err := dynamo.NewClient(ctx, proxy.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamodb client for the proxy: %w", err)
	}

	raw, err := env.Fixture("api/status.json")
	if err != nil {
		return nil, nil, err
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, nil, fmt.Errorf("decode events/api/status.json: %w", err)
	}
	b := &StatusBench{
		cached:    cached,
		uncached:  uncached,
		proxied:   proxied,
		direct:    env.Client,
		proxyOps:  proxy.Ops,
		directOps: env.Ops,
		keyTTL:    keyTTL,
		sessionID: sess.ID,
		req:       withSessionID(req, fixtureSessionID, sess.ID),
		getInput: &dynamodb.GetItemInput{
			TableName: aws.String(table),
			Key: map[string]types.AttributeValue{
				tabledef.PartitionKey: &types.AttributeValueMemberS{Value: sessionKeyPrefix + sess.ID},
				tabledef.SortKey:      &types.AttributeValueMemberS{Value: sessionSortKey},
			},
			ConsistentRead: aws.Bool(true), // as dynamo.Store.GetSession reads
		},
	}
	for name, h := range map[string]*apigw.Handler{"key cached": cached, "key uncached": uncached} {
		if err := b.check(ctx, h); err != nil {
			return nil, nil, fmt.Errorf("status (%s): %w", name, err)
		}
	}
	ok = true
	return b, drop, nil
}

// newStatusApp loads a status function as functions/status/main.go does
// (app.Load(ctx, app.Needs{}), then App.HTTPHandler(routes.Status)), from
// the environment of a deployed one pointed at table on endpoint, with the
// fake provider's name (the function never calls a provider), plus extra
// variables. Its code-under-test logs go to env.Log.
func newStatusApp(ctx context.Context, env *Env, endpoint, table string, clock lifecycle.Clock, extra map[string]string) (*app.App, *apigw.Handler, error) {
	vars := map[string]string{
		app.EnvTable:          table,
		app.EnvDynamoEndpoint: endpoint,
		app.EnvProvider:       "fake", // the fake's name: the status function links no provider
	}
	maps.Copy(vars, extra)
	cfg, err := app.ConfigFromEnv(func(name string) string { return vars[name] })
	if err != nil {
		return nil, nil, fmt.Errorf("status function config: %w", err)
	}
	a, err := app.New(ctx, cfg, app.Needs{}, app.Deps{Log: env.Log, Clock: clock})
	if err != nil {
		return nil, nil, fmt.Errorf("load the status function: %w", err)
	}
	h, err := a.HTTPHandler(routes.Status)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		return nil, nil, errors.Join(fmt.Errorf("status handler: %w", err), a.Close(cctx))
	}
	return a, h, nil
}

// KeyCacheTTL returns the API-key cache TTL of the warm status function.
func (b *StatusBench) KeyCacheTTL() time.Duration { return b.keyTTL }

// Status serves one status request through the function whose API-key
// cache is on, and returns how long Handle took. Errors: any answer but 200.
func (b *StatusBench) Status(ctx context.Context) (time.Duration, error) {
	return b.status(ctx, b.cached)
}

// StatusUncached serves one status request through the function loaded
// with SANDMAN_API_KEY_CACHE_TTL=0, and returns how long Handle took.
// Errors: any answer but 200.
func (b *StatusBench) StatusUncached(ctx context.Context) (time.Duration, error) {
	return b.status(ctx, b.uncached)
}

func (b *StatusBench) status(ctx context.Context, h *apigw.Handler) (time.Duration, error) {
	start := time.Now()
	resp, err := h.Handle(ctx, b.req)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("status request: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status request: answered %d: %s", resp.StatusCode, resp.Body)
	}
	return took, nil
}

// GetItem reads the session item once, raw, through the counting proxy (the
// status functions' path), and returns how long it took. Errors: the SDK's,
// or no item.
func (b *StatusBench) GetItem(ctx context.Context) (time.Duration, error) {
	return b.getItem(ctx, b.proxied)
}

// GetItemDirect reads the session item once, raw, straight from DynamoDB
// Local, and returns how long it took. Errors: the SDK's, or no item.
func (b *StatusBench) GetItemDirect(ctx context.Context) (time.Duration, error) {
	return b.getItem(ctx, b.direct)
}

func (b *StatusBench) getItem(ctx context.Context, c *dynamodb.Client) (time.Duration, error) {
	start := time.Now()
	out, err := c.GetItem(ctx, b.getInput)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("get item: %w", err)
	}
	if len(out.Item) == 0 {
		return 0, fmt.Errorf("get item: session %s not found", b.sessionID)
	}
	return took, nil
}

// check makes sure h's status answer is about the session (not merely a 200).
func (b *StatusBench) check(ctx context.Context, h *apigw.Handler) error {
	resp, err := h.Handle(ctx, b.req)
	if err != nil {
		return err
	}
	var body struct {
		SessionID string `json:"session_id"`
		State     string `json:"state"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status answered %d %s (%v)", resp.StatusCode, resp.Body, err)
	}
	if body.SessionID != b.sessionID || body.State != string(lifecycle.StateRunning) {
		return fmt.Errorf("status answered session %q state %q, want %q running", body.SessionID, body.State, b.sessionID)
	}
	return nil
}

// statusRun is one row of RunStatus while it runs.
type statusRun struct {
	name    string
	do      func(context.Context) (time.Duration, error)
	counter *OpCounter // the counter its requests go through
	lat     []time.Duration
	ops     map[string]int64
}

// RunStatus measures cfg.Requests rounds of four requests: status with the
// key cached, status with the key looked up, a raw GetItem through the
// counting proxy and one straight to DynamoDB Local, interleaved (the first
// of each round rotating) so all see the same machine load, after
// cfg.Warmup unmeasured rounds. Each request's DynamoDB operations are
// counted on its own (requests run one at a time). Errors: setup, or any
// request that failed; a wrong count is reported in StatusResult.Check.
func RunStatus(ctx context.Context, env *Env, cfg StatusConfig) (StatusResult, error) {
	cfg = cfg.withDefaults()
	b, drop, err := NewStatusBench(ctx, env, cfg.Clock)
	if err != nil {
		return StatusResult{}, err
	}
	defer drop()
	env.Printf("status: %d warm-up + %d measured rounds (status key cached, status key uncached, GetItem via proxy, GetItem direct)",
		cfg.Warmup, cfg.Requests)

	rows := []*statusRun{
		{name: "status key cached", do: b.Status, counter: b.proxyOps},
		{name: "status key uncached", do: b.StatusUncached, counter: b.proxyOps},
		{name: "GetItem", do: b.GetItem, counter: b.proxyOps},
		{name: "GetItem direct", do: b.GetItemDirect, counter: b.directOps},
	}
	for _, r := range rows {
		r.lat, r.ops = make([]time.Duration, 0, cfg.Requests), map[string]int64{}
	}
	var start time.Time
	for i := range cfg.Warmup + cfg.Requests {
		measured := i >= cfg.Warmup
		if i == cfg.Warmup {
			start = time.Now()
		}
		for j := range rows {
			r := rows[(i+j)%len(rows)]
			before := r.counter.Snapshot()
			d, err := r.do(ctx)
			if err != nil {
				return StatusResult{}, fmt.Errorf("round %d, %s: %w", i, r.name, err)
			}
			if measured {
				r.lat = append(r.lat, d)
				for op, n := range Since(before, r.counter.Snapshot()) {
					r.ops[op] += n
				}
			}
		}
	}
	wall := time.Since(start)

	row := func(r *statusRun) StatusRow { return StatusRow{Latency: Summarize(r.lat), Ops: r.ops} }
	res := StatusResult{
		Requests:           cfg.Requests,
		Warmup:             cfg.Warmup,
		Route:              "GET /v1/sessions/{id}/status",
		Wiring:             statusWiring,
		KeyCacheTTLSeconds: b.KeyCacheTTL().Seconds(),
		Seconds:            seconds(wall),
		Cached:             row(rows[0]),
		Uncached:           row(rows[1]),
		GetItem:            row(rows[2]),
		GetItemDirect:      row(rows[3]),
	}
	for _, r := range []*StatusRow{&res.Cached, &res.Uncached, &res.GetItem, &res.GetItemDirect} {
		r.RatioP50 = ratio(r.Latency.P50MS, res.GetItem.Latency.P50MS)
		r.RatioP99 = ratio(r.Latency.P99MS, res.GetItem.Latency.P99MS)
	}
	res.ProxyP50MS = math.Round((res.GetItem.Latency.P50MS-res.GetItemDirect.Latency.P50MS)*1000) / 1000
	res.Check = checkStatus(res, maxKeyLookups(wall, b.KeyCacheTTL()))
	env.Printf("status: p50 key cached %.3f ms, key uncached %.3f ms, GetItem %.3f ms (direct %.3f ms); ×%.2f and ×%.2f",
		res.Cached.Latency.P50MS, res.Uncached.Latency.P50MS, res.GetItem.Latency.P50MS, res.GetItemDirect.Latency.P50MS,
		res.Cached.RatioP50, res.Uncached.RatioP50)
	return res, nil
}

// maxKeyLookups is how many times, at most, a warm function's key cache of
// ttl looks the key up again during wall: once per ttl, plus one for a TTL
// that ends during the run.
func maxKeyLookups(wall, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return int64(wall/ttl) + 1
}

// checkStatus compares each row's DynamoDB requests with what it should
// send for res.Requests requests: the cached status GetItem once each plus
// at most keyLookups key lookups, the uncached status twice each, each raw
// row once each, and no other operation.
func checkStatus(res StatusResult, keyLookups int64) StatusCheck {
	n := int64(res.Requests)
	var problems []string
	for _, c := range []struct {
		name     string
		ops      map[string]int64
		min, max int64
	}{
		{"status with the key cached", res.Cached.Ops, n, n + keyLookups},
		{"status with the key looked up", res.Uncached.Ops, 2 * n, 2 * n},
		{"raw GetItem", res.GetItem.Ops, n, n},
		{"raw GetItem direct", res.GetItemDirect.Ops, n, n},
	} {
		if got := c.ops[OpGetItem]; got < c.min || got > c.max {
			want := fmt.Sprint(c.min)
			if c.max > c.min {
				want = fmt.Sprintf("%d to %d", c.min, c.max)
			}
			problems = append(problems, fmt.Sprintf("%s: GetItem %d, want %s", c.name, got, want))
		}
		for _, op := range sortedOps(c.ops) {
			if op != OpGetItem {
				problems = append(problems, fmt.Sprintf("%s: %s %d, want 0", c.name, op, c.ops[op]))
			}
		}
	}
	return StatusCheck{OK: len(problems) == 0, Problems: problems}
}
