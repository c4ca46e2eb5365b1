package apigw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// t0 is the harness clock's start.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fixtureID is the session id the fixtures in events/api carry.
const fixtureID = "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"

// otherAccount owns the harness's second key.
const otherAccount = "acct_other"

// apiFunctions are the functions apigw serves.
var apiFunctions = []string{routes.Sessions, routes.Status, routes.Resume, routes.Pause, routes.Reconnect}

// recorder is a lifecycle.Publisher that keeps every event; the harness
// feeds it through outbox.InPath, so it sees each transition the service
// committed, as the table's stream would.
type recorder struct {
	mu     sync.Mutex
	events []lifecycle.Event
}

func (r *recorder) Publish(_ context.Context, evs ...lifecycle.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, evs...)
	return nil
}

// forSession returns the events of one session, in order.
func (r *recorder) forSession(id string) []lifecycle.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []lifecycle.Event
	for _, ev := range r.events {
		if ev.SessionID == id {
			out = append(out, ev)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harnessStore is what the harness needs of its store: memstore by default
// (MustHarness), a fresh DynamoDB Local table where the table's own
// behaviour is under test (MustDynamoHarness).
type harnessStore interface {
	lifecycle.Store
	lifecycle.SlotCounter
	lifecycle.UsageStore
	apigw.KeyStore
	apigw.KeyWriter
}

// harness is the five API functions over one fresh store, the fake
// provider, a manual clock and a recording publisher.
type harness struct {
	store      harnessStore
	prov       *fake.Provider
	clock      *lifecycle.ManualClock
	svc        *lifecycle.Service
	events     *recorder
	logs       *syncBuffer
	handlers   map[string]*apigw.Handler
	otherKey   string // a key of otherAccount
	byRouteKey map[string]string
	apiCfg     apigw.Config // what the handlers were built from
}

// MustHarness builds a harness on an in-memory store (memstore, which keeps
// the DynamoDB store's conditional-write rules); DevAPIKey belongs to
// DevAccountID.
func MustHarness(tb testing.TB, opts ...func(*apigw.Config)) *harness {
	tb.Helper()
	return mustHarnessOn(tb, memstore.New(), opts...)
}

// MustDynamoHarness builds a harness on a fresh DynamoDB Local table, for
// tests of what the table itself does (conditional writes racing, its
// errors); without DynamoDB Local it skips or fails (dynamotest).
func MustDynamoHarness(tb testing.TB, opts ...func(*apigw.Config)) *harness {
	tb.Helper()
	return mustHarnessOn(tb, dynamo.New(dynamo.Config{Client: dynamotest.MustClient(tb), Table: dynamotest.MustTable(tb)}), opts...)
}

// harnessMaker builds a harness: MustHarness or MustDynamoHarness.
type harnessMaker func(tb testing.TB, opts ...func(*apigw.Config)) *harness

// forEachStore runs test once on memstore and once on DynamoDB Local (the
// second skips or fails without it, dynamotest), for the races whose
// outcome rests on the table's conditional writes.
func forEachStore(t *testing.T, test func(t *testing.T, newHarness harnessMaker)) {
	t.Run("memstore", func(t *testing.T) { test(t, MustHarness) })
	t.Run("dynamodb", func(t *testing.T) { test(t, MustDynamoHarness) })
}

func mustHarnessOn(tb testing.TB, store harnessStore, opts ...func(*apigw.Config)) *harness {
	tb.Helper()
	clock := lifecycle.NewManualClock(t0)
	prov := fake.New(fake.Config{Clock: clock})
	logs := &syncBuffer{}
	log := apigwLogger(logs)
	rec := &recorder{}
	svc := lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(store, rec), Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: log,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})

	ctx := tb.Context()
	if err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID, CreatedAt: t0}); err != nil {
		tb.Fatalf("put dev key: %v", err)
	}
	other, err := apigw.IssueAPIKey(ctx, store, otherAccount, t0)
	if err != nil {
		tb.Fatalf("issue other key: %v", err)
	}
	h := &harness{store: store, prov: prov, clock: clock, svc: svc, events: rec, logs: logs,
		handlers: map[string]*apigw.Handler{}, otherKey: other, byRouteKey: map[string]string{}}
	o := apigw.Config{Service: svc, Keys: store, Log: log}
	for _, f := range opts {
		f(&o)
	}
	h.apiCfg = o
	for _, fn := range apiFunctions {
		o.Function = fn
		hd, err := apigw.New(o)
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
	for _, rt := range routes.Table {
		h.byRouteKey[rt.Key()] = rt.Function
	}
	return h
}

func apigwLogger(w *syncBuffer) *slog.Logger {
	return slog.New(httpapi.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// result is a decoded handler response.
type result struct {
	status  int
	headers map[string]string
	body    string
}

// invoke sends ev to the function API Gateway would route it to (the
// sessions function for routes outside the table, e.g. preflights).
func (h *harness) invoke(tb testing.TB, ev events.APIGatewayV2HTTPRequest) result {
	tb.Helper()
	fn, ok := h.byRouteKey[ev.RouteKey]
	if !ok {
		fn = routes.Sessions
	}
	return h.invokeFunction(tb, fn, ev)
}

// invokeFunction sends ev to the named function's handler and checks the
// answer against the OpenAPI document (checkContract).
func (h *harness) invokeFunction(tb testing.TB, fn string, ev events.APIGatewayV2HTTPRequest) result {
	tb.Helper()
	hd := h.handlers[fn]
	if hd == nil {
		tb.Fatalf("no handler for function %q", fn)
	}
	resp, err := hd.Handle(context.Background(), ev)
	if err != nil {
		tb.Fatalf("Handle(%s) returned an error: %v", ev.RouteKey, err)
	}
	checkContract(tb, ev, resp)
	return result{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}
}

// MustEvent loads events/api/<name> and applies the patches.
func MustEvent(tb testing.TB, name string, patches ...func(*events.APIGatewayV2HTTPRequest)) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "api", name))
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		tb.Fatalf("decode fixture %s: %v", name, err)
	}
	for _, p := range patches {
		p(&ev)
	}
	return ev
}

// withID puts a session id into the path.
func withID(id string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		ev.PathParameters["id"] = id
		ev.RawPath = strings.Replace(ev.RawPath, fixtureID, id, 1)
		ev.RequestContext.HTTP.Path = strings.Replace(ev.RequestContext.HTTP.Path, fixtureID, id, 1)
	}
}

// withBody replaces the body (not base64-encoded).
func withBody(body string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		ev.Body, ev.IsBase64Encoded = body, false
		ev.Headers["content-length"] = strconv.Itoa(len(body))
	}
}

// withHeader sets a header; an empty value removes it.
func withHeader(name, value string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		for k := range ev.Headers {
			if strings.EqualFold(k, name) {
				delete(ev.Headers, k)
			}
		}
		if value != "" {
			ev.Headers[name] = value
		}
	}
}

// withKey replaces the x-api-key header.
func withKey(key string) func(*events.APIGatewayV2HTTPRequest) { return withHeader("x-api-key", key) }

// withQuery sets a query parameter.
func withQuery(name, value string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		if ev.QueryStringParameters == nil {
			ev.QueryStringParameters = map[string]string{}
		}
		ev.QueryStringParameters[name] = value
	}
}

// mustDecode decodes a response body strictly into T.
func mustDecode[T any](tb testing.TB, r result) T {
	tb.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("decode %T from %d %s: %v", v, r.status, r.body, err)
	}
	return v
}

// wantStatus fails unless r has status want.
func wantStatus(tb testing.TB, r result, want int) {
	tb.Helper()
	if r.status != want {
		tb.Fatalf("status = %d, want %d; body %s", r.status, want, r.body)
	}
}

// wantError checks an error response: status, error_type, the envelope,
// CORS, and that the sentence contains each of contains.
func wantError(tb testing.TB, r result, status int, errType string, contains ...string) api.Error {
	tb.Helper()
	wantStatus(tb, r, status)
	e := mustDecode[api.Error](tb, r)
	if got, want := e.Status, "error"; got != want {
		tb.Errorf("envelope status = %q, want %q", got, want)
	}
	if got, want := e.ErrorType, errType; got != want {
		tb.Errorf("error_type = %q, want %q (error %q)", got, want, e.Error)
	}
	for _, c := range contains {
		if !strings.Contains(e.Error, c) {
			tb.Errorf("error %q does not contain %q", e.Error, c)
		}
	}
	if got, want := r.headers["Access-Control-Allow-Origin"], "*"; got != want {
		tb.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
	}
	return e
}

// ts formats a time as the API does.
func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// str dereferences a nullable string for messages ("<null>" for nil).
func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// mustCreate creates a session through the API and returns it.
func (h *harness) mustCreate(tb testing.TB, patches ...func(*events.APIGatewayV2HTTPRequest)) api.Session {
	tb.Helper()
	patches = append([]func(*events.APIGatewayV2HTTPRequest){withHeader("idempotency-key", "")}, patches...)
	r := h.invoke(tb, MustEvent(tb, "sessions-create.json", patches...))
	wantStatus(tb, r, 201)
	return mustDecode[api.Session](tb, r)
}

// mustSession reads a session from the store.
func (h *harness) mustSession(tb testing.TB, id string) *lifecycle.Session {
	tb.Helper()
	s, err := h.store.GetSession(context.Background(), id)
	if err != nil {
		tb.Fatalf("GetSession(%s): %v", id, err)
	}
	return s
}

// providerCalls sums the fake's call counters over every operation.
func (h *harness) providerCalls() int {
	n := 0
	for _, op := range fake.Ops {
		n += h.prov.Calls(op)
	}
	return n
}

// wantEvents checks a session's published events: one per transition, with
// the given target states, each from the previous one, at consecutive
// versions (callers use it where every write was a transition).
func (h *harness) wantEvents(tb testing.TB, id string, to ...lifecycle.State) {
	tb.Helper()
	evs := h.events.forSession(id)
	var got []lifecycle.State
	for _, ev := range evs {
		got = append(got, ev.To)
	}
	if len(got) != len(to) {
		tb.Fatalf("events of %s = %v, want %v", id, got, to)
	}
	for i := range to {
		if got[i] != to[i] {
			tb.Fatalf("events of %s = %v, want %v", id, got, to)
		}
		if i > 0 && evs[i].From != evs[i-1].To {
			tb.Errorf("event %d from %s, want %s", i, evs[i].From, evs[i-1].To)
		}
		if i > 0 && evs[i].Version != evs[i-1].Version+1 {
			tb.Errorf("event %d version %d after %d: a write without an event or a skipped version", i, evs[i].Version, evs[i-1].Version)
		}
	}
}
