package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/fakeprovider"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/tabledef"
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

// StatusConfig sizes RunStatus.
type StatusConfig struct {
	// Requests is how many status requests, and as many raw GetItems, are
	// measured (default 2,000 each).
	Requests int
	// Warmup is how many of each run first, unmeasured (default 100).
	Warmup int
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
	return c
}

// StatusResult is the status latency figure.
type StatusResult struct {
	Requests int    `json:"requests"`
	Warmup   int    `json:"warmup"`
	Route    string `json:"route"`
	// Status is GET /v1/sessions/{id}/status through apigw.Handler.Handle:
	// x-api-key auth (GetItem of the key), GetItem of the session,
	// ownership check, JSON response.
	Status Latency `json:"status"`
	// GetItem is a raw, strongly consistent GetItem of the same session item.
	GetItem Latency `json:"get_item"`
	// RatioP50 and RatioP99 are status ÷ GetItem at p50 and p99.
	RatioP50 float64 `json:"ratio_p50"`
	RatioP99 float64 `json:"ratio_p99"`
	// Ops is every DynamoDB request of the measured loop, by operation.
	Ops map[string]int64 `json:"dynamodb_ops"`
}

// StatusBench is one status function wired to DynamoDB Local with one
// session and the fixtures' API key: Status and GetItem each time one
// request. Build it with NewStatusBench.
type StatusBench struct {
	handler   *apigw.Handler
	client    *dynamodb.Client
	table     string
	sessionID string
	req       events.APIGatewayV2HTTPRequest
	getInput  *dynamodb.GetItemInput
}

// NewStatusBench creates a table with the dev API key of the fixtures
// (apigw.DevAPIKey, account apigw.DevAccountID) and one running session
// created through lifecycle.Service.Create on the fake provider, and wires
// the status function's handler exactly as functions/status does (no
// provider call). The returned function drops the table.
func NewStatusBench(ctx context.Context, env *Env) (*StatusBench, func(), error) {
	table, drop, err := env.NewTable(ctx, "bench-status")
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			drop()
		}
	}()
	store := dynamo.New(env.Client, table, dynamo.WithLogger(env.Log))
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
		AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC()}); err != nil {
		return nil, nil, fmt.Errorf("store the dev api key: %w", err)
	}
	// Status never calls the provider (DESIGN.md); the fake only creates
	// the session's sandbox.
	svc := lifecycle.NewService(store, fakeprovider.New(), nil, lifecycle.SystemClock{}, lifecycle.DefaultPolicy(), env.Log)
	sess, _, err := svc.Create(ctx, apigw.DevAccountID, lifecycle.CreateInput{Template: "base"})
	if err != nil {
		return nil, nil, fmt.Errorf("create the session: %w", err)
	}
	h, err := apigw.New(routes.Status, svc, store, apigw.Options{Log: env.Log})
	if err != nil {
		return nil, nil, err
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
		handler:   h,
		client:    env.Client,
		table:     table,
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
	if err := b.check(ctx); err != nil {
		return nil, nil, err
	}
	ok = true
	return b, drop, nil
}

// SessionID returns the id of the session the requests read.
func (b *StatusBench) SessionID() string { return b.sessionID }

// Status serves one status request and returns how long Handle took.
// Errors: any answer but 200.
func (b *StatusBench) Status(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	resp, err := b.handler.Handle(ctx, b.req)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("status request: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status request: answered %d: %s", resp.StatusCode, resp.Body)
	}
	return took, nil
}

// GetItem reads the session item once, raw, and returns how long it took.
// Errors: the SDK's, or no item.
func (b *StatusBench) GetItem(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	out, err := b.client.GetItem(ctx, b.getInput)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("get item: %w", err)
	}
	if len(out.Item) == 0 {
		return 0, fmt.Errorf("get item: session %s not found", b.sessionID)
	}
	return took, nil
}

// check makes sure the status answer is about the session (not merely a 200).
func (b *StatusBench) check(ctx context.Context) error {
	resp, err := b.handler.Handle(ctx, b.req)
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

// RunStatus measures cfg.Requests status requests and as many raw GetItems
// of the same item, interleaved one for one (alternating which goes first)
// so both see the same machine load, after cfg.Warmup unmeasured rounds.
func RunStatus(ctx context.Context, env *Env, cfg StatusConfig) (StatusResult, error) {
	cfg = cfg.withDefaults()
	b, drop, err := NewStatusBench(ctx, env)
	if err != nil {
		return StatusResult{}, err
	}
	defer drop()
	env.Printf("status: %d warm-up + %d measured rounds (status request, raw GetItem)", cfg.Warmup, cfg.Requests)

	status := make([]time.Duration, 0, cfg.Requests)
	get := make([]time.Duration, 0, cfg.Requests)
	var before map[string]int64
	for i := range cfg.Warmup + cfg.Requests {
		if i == cfg.Warmup {
			before = env.Ops.Snapshot()
		}
		var ds, dg time.Duration
		if i%2 == 0 {
			if ds, err = b.Status(ctx); err == nil {
				dg, err = b.GetItem(ctx)
			}
		} else {
			if dg, err = b.GetItem(ctx); err == nil {
				ds, err = b.Status(ctx)
			}
		}
		if err != nil {
			return StatusResult{}, fmt.Errorf("round %d: %w", i, err)
		}
		if i >= cfg.Warmup {
			status, get = append(status, ds), append(get, dg)
		}
	}
	res := StatusResult{
		Requests: cfg.Requests,
		Warmup:   cfg.Warmup,
		Route:    "GET /v1/sessions/{id}/status",
		Status:   Summarize(status),
		GetItem:  Summarize(get),
		Ops:      Since(before, env.Ops.Snapshot()),
	}
	res.RatioP50 = ratio(res.Status.P50MS, res.GetItem.P50MS)
	res.RatioP99 = ratio(res.Status.P99MS, res.GetItem.P99MS)
	env.Printf("status: p50 %.3f ms vs GetItem %.3f ms (×%.2f)", res.Status.P50MS, res.GetItem.P50MS, res.RatioP50)
	return res, nil
}
