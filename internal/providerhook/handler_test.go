package providerhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// t0 is the tests' start time: a minute before the first fixture event.
var t0 = fixtureStart.Add(-time.Minute)

// harness is a Handler over a real Service: a fresh store (memstore, or a
// DynamoDB Local table where the table matters), the fake provider and a
// manual clock. The fake provider's sessions are
// stored with provider "fake", so the E2B format stamps "fake", as the
// local stack stamps "local".
type harness struct {
	handler  *providerhook.Handler
	service  *lifecycle.Service
	store    harnessStore
	clock    *lifecycle.ManualClock
	provider *fake.Provider
	logs     *syncBuffer

	mu        sync.Mutex
	published []lifecycle.Event
}

// harnessStore is what the harness needs of its store.
type harnessStore interface {
	lifecycle.Store
	lifecycle.SlotCounter
}

// MustHarness returns a harness on an in-memory store (memstore, which keeps
// the DynamoDB store's conditional-write rules); opts configure the handler.
func MustHarness(tb testing.TB, opts ...func(*providerhook.Config)) *harness {
	tb.Helper()
	return mustHarnessOn(tb, memstore.New(), opts...)
}

// MustDynamoHarness returns a harness on a fresh DynamoDB Local table, for
// what the table itself decides (racing conditional writes); without
// DynamoDB Local it skips or fails (dynamotest).
func MustDynamoHarness(tb testing.TB, opts ...func(*providerhook.Config)) *harness {
	tb.Helper()
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(tb), Table: dynamotest.MustTable(tb)})
	return mustHarnessOn(tb, store, opts...)
}

func mustHarnessOn(tb testing.TB, store harnessStore, opts ...func(*providerhook.Config)) *harness {
	tb.Helper()
	clock := lifecycle.NewManualClock(t0)
	h := &harness{store: store, clock: clock, logs: &syncBuffer{}}
	h.provider = fake.New(fake.Config{Clock: clock})
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pub := lifecycle.PublisherFunc(func(_ context.Context, evs ...lifecycle.Event) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.published = append(h.published, evs...)
		return nil
	})
	h.service = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(store, pub), Provider: h.provider, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: log,
		NewID: func() string { return FixtureSessionID }})
	h.handler = MustHandler(tb, h.service, h.provider.Name(), append([]func(*providerhook.Config){func(c *providerhook.Config) { c.Log = log }}, opts...)...)
	return h
}

// MustHandler returns a handler over a with the E2B format, signed with
// TestSecret, stamping provider; opts then change its Config.
func MustHandler(tb testing.TB, a providerhook.Applier, provider string, opts ...func(*providerhook.Config)) *providerhook.Handler {
	tb.Helper()
	f, err := providerhook.NewE2B(provider, TestSecret)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := providerhook.Config{Applier: a, Formats: []providerhook.Format{f}}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := providerhook.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// MustSession creates the fixtures' session (FixtureSessionID, running on
// sandbox FixtureSandboxID) and forgets the events its creation published.
func (h *harness) MustSession(tb testing.TB) *lifecycle.Session {
	tb.Helper()
	sess, _, err := h.service.Create(tb.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		tb.Fatalf("create session: %v", err)
	}
	if got, want := sess.SandboxID, FixtureSandboxID; got != want {
		tb.Fatalf("sandbox id = %q, want %q (the fixtures name it)", got, want)
	}
	h.mu.Lock()
	h.published = nil
	h.mu.Unlock()
	return sess
}

// Published returns the events published since MustSession.
func (h *harness) Published() []lifecycle.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]lifecycle.Event(nil), h.published...)
}

// MustGet reads the fixtures' session.
func (h *harness) MustGet(tb testing.TB) *lifecycle.Session {
	tb.Helper()
	sess, err := h.store.GetSession(tb.Context(), FixtureSessionID)
	if err != nil {
		tb.Fatalf("get session: %v", err)
	}
	return sess
}

// reply is a decoded response.
type reply struct {
	status int
	header map[string]string
	body   map[string]string
}

// MustDeliver runs req through the handler and decodes the answer, failing
// the test when the handler returns an error, an answer that does not match
// the OpenAPI document, or a body that is not a JSON object of strings.
func (h *harness) MustDeliver(tb testing.TB, req events.APIGatewayV2HTTPRequest) reply {
	tb.Helper()
	return mustHandle(tb, h.handler, req)
}

func mustHandle(tb testing.TB, hd *providerhook.Handler, req events.APIGatewayV2HTTPRequest) reply {
	tb.Helper()
	resp, err := hd.Handle(tb.Context(), req)
	if err != nil {
		tb.Fatalf("Handle returned an error: %v", err)
	}
	checkContract(tb, req, resp)
	var body map[string]string
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		tb.Fatalf("response body %q: %v", resp.Body, err)
	}
	return reply{status: resp.StatusCode, header: resp.Headers, body: body}
}

// SignedRequest returns a delivery of b signed with TestSecret.
func SignedRequest(tb testing.TB, b e2bhook.Body) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	raw := MustBuild(tb, b)
	return NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d-"+b.ID, raw), raw, false)
}

// fixtureBody returns the fixture body of E2B type typ, to vary.
func fixtureBody(tb testing.TB, typ string) e2bhook.Body {
	tb.Helper()
	for _, f := range fixtures() {
		if f.body.Type == typ {
			return f.body
		}
	}
	tb.Fatalf("no fixture of type %s", typ)
	return e2bhook.Body{}
}

func wantOK(tb testing.TB, r reply, outcome lifecycle.WebhookOutcome) {
	tb.Helper()
	if got, want := r.status, http.StatusOK; got != want {
		tb.Fatalf("status = %d (%v), want %d", got, r.body, want)
	}
	if got, want := r.body["status"], "ok"; got != want {
		tb.Errorf("body status = %q, want %q", got, want)
	}
	if got, want := r.body["outcome"], string(outcome); got != want {
		tb.Errorf("outcome = %q, want %q", got, want)
	}
}

func wantError(tb testing.TB, r reply, status int, errorType string) {
	tb.Helper()
	if got, want := r.status, status; got != want {
		tb.Fatalf("status = %d (%v), want %d", got, r.body, want)
	}
	if got, want := r.body["status"], "error"; got != want {
		tb.Errorf("body status = %q, want %q", got, want)
	}
	if got, want := r.body["error_type"], errorType; got != want {
		tb.Errorf("error_type = %q, want %q", got, want)
	}
	if r.body["error"] == "" {
		tb.Error("error sentence is empty")
	}
	if got, want := r.header["Access-Control-Allow-Origin"], "*"; got != want {
		tb.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
	}
}

// TestFixtureSequence delivers every signed fixture in time order to a
// session on the fixtures' sandbox: each is accepted and does what the
// lifecycle rules say.
func TestFixtureSequence(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	h.clock.Set(fixtureStart.Add(time.Hour))

	steps := []struct {
		file    string
		outcome lifecycle.WebhookOutcome
		state   lifecycle.State
	}{
		{"apigw-e2b-created.json", lifecycle.WebhookRecorded, lifecycle.StateRunning},
		{"apigw-e2b-paused.json", lifecycle.WebhookApplied, lifecycle.StatePaused},
		{"apigw-e2b-resumed.json", lifecycle.WebhookApplied, lifecycle.StateRunning},
		{"apigw-e2b-updated.json", lifecycle.WebhookRecorded, lifecycle.StateRunning},
		{"apigw-e2b-killed.json", lifecycle.WebhookApplied, lifecycle.StateExpired},
	}
	version := sess.Version
	for _, s := range steps {
		wantOK(t, h.MustDeliver(t, MustFixtureRequest(t, s.file)), s.outcome)
		got := h.MustGet(t)
		if got.State != s.state {
			t.Fatalf("after %s: state = %s, want %s", s.file, got.State, s.state)
		}
		if got, want := got.Version, version+1; got != want {
			t.Errorf("after %s: version = %d, want %d", s.file, got, want)
		}
		version = got.Version
		if s.file == "apigw-e2b-updated.json" {
			if got, want := got.SandboxExpiresAt, fixtureStart.Add(21*time.Minute+time.Hour); !got.Equal(want) {
				t.Errorf("after updated: sandbox_expires_at = %v, want %v", got, want)
			}
		}
	}
	if got, want := len(h.Published()), 3; got != want {
		t.Errorf("published events = %d, want %d (paused, running, expired)", got, want)
	}
	for _, ev := range h.Published() {
		if got, want := ev.Reason, lifecycle.ReasonWebhook; got != want {
			t.Errorf("event %s→%s reason = %q, want %q", ev.From, ev.To, got, want)
		}
	}
}

// TestSignatureRefused: a delivery whose signature does not hold is 401 and
// changes nothing, not even the dedupe record.
func TestSignatureRefused(t *testing.T) {
	h := MustHarness(t)
	h.MustSession(t)
	before := h.MustGet(t)
	good := MustFixtureRequest(t, "apigw-e2b-paused.json")

	flip := func(s string, i int) string { b := []byte(s); b[i] ^= 0x01; return string(b) }
	cases := []struct {
		name   string
		mutate func(r *events.APIGatewayV2HTTPRequest)
	}{
		{"FlippedBodyByte", func(r *events.APIGatewayV2HTTPRequest) { r.Body = flip(r.Body, len(r.Body)/2) }},
		{"FlippedSignatureByte", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers[e2bhook.HeaderSignature] = flip(r.Headers[e2bhook.HeaderSignature], 3)
		}},
		{"WrongSecret", func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers[e2bhook.HeaderSignature] = e2bhook.Sign("whsec_someone_else", []byte(r.Body))
		}},
		{"HMACNotPlainHash", func(r *events.APIGatewayV2HTTPRequest) {
			// The body signed as secret+body reversed (body+secret): not E2B's scheme.
			r.Headers[e2bhook.HeaderSignature] = e2bhook.Sign(r.Body, []byte(TestSecret))
		}},
		{"PaddedSignature", func(r *events.APIGatewayV2HTTPRequest) { r.Headers[e2bhook.HeaderSignature] += "=" }},
		{"MissingSignature", func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, e2bhook.HeaderSignature) }},
		{"EmptySignature", func(r *events.APIGatewayV2HTTPRequest) { r.Headers[e2bhook.HeaderSignature] = "" }},
		{"MissingVersion", func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, e2bhook.HeaderSignatureVersion) }},
		{"UnsupportedVersion", func(r *events.APIGatewayV2HTTPRequest) { r.Headers[e2bhook.HeaderSignatureVersion] = "v2" }},
		{"NoHeaders", func(r *events.APIGatewayV2HTTPRequest) { r.Headers = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := MustFixtureRequest(t, "apigw-e2b-paused.json")
			c.mutate(&req)
			wantError(t, h.MustDeliver(t, req), http.StatusUnauthorized, "unauthorized")
			after := h.MustGet(t)
			if got, want := after.Version, before.Version; got != want {
				t.Errorf("version = %d, want %d (unchanged)", got, want)
			}
			if got, want := after.State, lifecycle.StateRunning; got != want {
				t.Errorf("state = %s, want %s", got, want)
			}
			if got := len(h.Published()); got != 0 {
				t.Errorf("published %d events, want 0", got)
			}
		})
	}

	// The refusals claimed nothing: the genuine delivery still applies.
	t.Run("GenuineAfterwards", func(t *testing.T) {
		wantOK(t, h.MustDeliver(t, good), lifecycle.WebhookApplied)
	})
}

// TestHeaderNamesAnyCase: a caller that does not lowercase header names
// (API Gateway does) is still verified.
func TestHeaderNamesAnyCase(t *testing.T) {
	h := MustHarness(t)
	h.MustSession(t)
	req := MustFixtureRequest(t, "apigw-e2b-paused.json")
	mixed := map[string]string{}
	for k, v := range req.Headers {
		mixed[http.CanonicalHeaderKey(k)] = v
	}
	req.Headers = mixed
	wantOK(t, h.MustDeliver(t, req), lifecycle.WebhookApplied)
}

// TestBase64: API Gateway's base64 flag is honoured, and the signature is
// checked over the decoded bytes, never over the transport encoding.
func TestBase64(t *testing.T) {
	t.Run("Fixture", func(t *testing.T) {
		h := MustHarness(t)
		h.MustSession(t)
		req := MustFixtureRequest(t, "apigw-e2b-paused-base64.json")
		if !req.IsBase64Encoded {
			t.Fatal("fixture is not base64-encoded")
		}
		wantOK(t, h.MustDeliver(t, req), lifecycle.WebhookApplied)
		if got, want := h.MustGet(t).State, lifecycle.StatePaused; got != want {
			t.Errorf("state = %s, want %s", got, want)
		}
	})
	t.Run("SignedOverEncodedText", func(t *testing.T) {
		h := MustHarness(t)
		h.MustSession(t)
		req := MustFixtureRequest(t, "apigw-e2b-paused-base64.json")
		req.Headers[e2bhook.HeaderSignature] = e2bhook.Sign(TestSecret, []byte(req.Body))
		wantError(t, h.MustDeliver(t, req), http.StatusUnauthorized, "unauthorized")
	})
	t.Run("FlagMissing", func(t *testing.T) {
		h := MustHarness(t)
		h.MustSession(t)
		req := MustFixtureRequest(t, "apigw-e2b-paused-base64.json")
		req.IsBase64Encoded = false
		wantError(t, h.MustDeliver(t, req), http.StatusUnauthorized, "unauthorized")
	})
	t.Run("InvalidBase64", func(t *testing.T) {
		h := MustHarness(t)
		req := MustFixtureRequest(t, "apigw-e2b-paused-base64.json")
		req.Body = "%%%" + req.Body
		wantError(t, h.MustDeliver(t, req), http.StatusBadRequest, "invalid")
	})
}

// TestDuplicate: the same event delivered again (a provider retry, with a
// new delivery id) changes the session once and publishes once.
func TestDuplicate(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	req := MustFixtureRequest(t, "apigw-e2b-paused.json")
	// The fixture's event is dated 10:10, more than MaxProviderClockSkew
	// ahead of t0: with the clock there it would be clamped to each
	// delivery's now. This test is about dedupe alone.
	h.clock.Set(fixtureStart.Add(10 * time.Minute))

	wantOK(t, h.MustDeliver(t, req), lifecycle.WebhookApplied)
	h.clock.Advance(time.Minute)
	wantOK(t, h.MustDeliver(t, req), lifecycle.WebhookDuplicate)
	retry := MustFixtureRequest(t, "apigw-e2b-paused-base64.json") // same event, another encoding
	retry.Headers[e2bhook.HeaderDeliveryID] = "another-attempt"
	wantOK(t, h.MustDeliver(t, retry), lifecycle.WebhookDuplicate)

	got := h.MustGet(t)
	if got, want := got.Version, sess.Version+1; got != want {
		t.Errorf("version = %d, want %d (one write)", got, want)
	}
	if got, want := len(h.Published()), 1; got != want {
		t.Errorf("published events = %d, want %d", got, want)
	}
}

// TestDuplicateConcurrent: deliveries of one event racing each other change
// the session once. Which delivery reports "applied" is up to the race (the
// service claims the id after its write), so only the effect is checked.
func TestDuplicateConcurrent(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testDuplicateConcurrent(t, MustHarness(t)) })
	t.Run("dynamodb", func(t *testing.T) { testDuplicateConcurrent(t, MustDynamoHarness(t)) })
}

func testDuplicateConcurrent(t *testing.T, h *harness) {
	sess := h.MustSession(t)
	const n = 8
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := MustFixtureRequest(t, "apigw-e2b-paused.json")
			resp, err := h.handler.Handle(context.Background(), req)
			if err != nil {
				t.Errorf("Handle: %v", err)
				return
			}
			checkContract(t, req, resp)
			var body map[string]string
			_ = json.Unmarshal([]byte(resp.Body), &body)
			replies[i] = reply{status: resp.StatusCode, body: body}
		}()
	}
	wg.Wait()
	for i, r := range replies {
		if r.status != http.StatusOK {
			t.Errorf("delivery %d: status %d (%v), want 200", i, r.status, r.body)
		}
		switch lifecycle.WebhookOutcome(r.body["outcome"]) {
		case lifecycle.WebhookApplied, lifecycle.WebhookDuplicate, lifecycle.WebhookStale:
		default:
			t.Errorf("delivery %d: outcome %q, want applied, duplicate or stale", i, r.body["outcome"])
		}
	}
	got := h.MustGet(t)
	if got, want := got.Version, sess.Version+1; got != want {
		t.Errorf("version = %d, want %d (one write)", got, want)
	}
	if got, want := got.State, lifecycle.StatePaused; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if got, want := len(h.Published()), 1; got != want {
		t.Errorf("published events = %d, want %d", got, want)
	}
}

// TestOutOfOrder: an event older than the last applied one is ignored, so a
// late delivery never moves a session backwards.
func TestOutOfOrder(t *testing.T) {
	h := MustHarness(t)
	h.MustSession(t)
	wantOK(t, h.MustDeliver(t, MustFixtureRequest(t, "apigw-e2b-paused.json")), lifecycle.WebhookApplied)
	paused := h.MustGet(t)

	late := fixtureBody(t, e2bhook.TypeResumed)
	late.ID = "late-resume"
	late.Timestamp = fixtureStart.Add(5 * time.Minute).Format(time.RFC3339Nano) // before the 10:10 pause
	wantOK(t, h.MustDeliver(t, SignedRequest(t, late)), lifecycle.WebhookStale)

	same := fixtureBody(t, e2bhook.TypeResumed)
	same.ID = "same-instant-resume"
	same.Timestamp = fixtureStart.Add(10 * time.Minute).Format(time.RFC3339Nano) // equal: not newer
	wantOK(t, h.MustDeliver(t, SignedRequest(t, same)), lifecycle.WebhookStale)

	got := h.MustGet(t)
	if got, want := got.State, lifecycle.StatePaused; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if got, want := got.Version, paused.Version; got != want {
		t.Errorf("version = %d, want %d (unchanged)", got, want)
	}
	if got, want := len(h.Published()), 1; got != want {
		t.Errorf("published events = %d, want %d (the pause only)", got, want)
	}
}

// TestUnknownSandbox: an event for a sandbox no session holds is
// acknowledged and logged, and changes nothing.
func TestUnknownSandbox(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	b := fixtureBody(t, e2bhook.TypePaused)
	b.SandboxID = "fake_999"
	wantOK(t, h.MustDeliver(t, SignedRequest(t, b)), lifecycle.WebhookUnknownSandbox)

	if got, want := h.MustGet(t).Version, sess.Version; got != want {
		t.Errorf("version = %d, want %d (unchanged)", got, want)
	}
	line := h.logs.Find(t, "webhook", "outcome", "unknown_sandbox")
	for k, want := range map[string]string{
		"level": "WARN", "sandbox_id": "fake_999", "event_id": b.ID, "type": "paused",
		"provider": "fake", "session_id": FixtureSessionID, "request_id": "fixture-request",
	} {
		if got := fmt.Sprint(line[k]); got != want {
			t.Errorf("log %s = %q, want %q", k, got, want)
		}
	}
}

// TestProviderStamp: events are matched to sessions by the provider name the
// format is configured with, not the path segment.
func TestProviderStamp(t *testing.T) {
	h := MustHarness(t)
	h.MustSession(t) // stored with provider "fake"
	hd := MustHandler(t, h.service, "e2b")
	wantOK(t, mustHandle(t, hd, MustFixtureRequest(t, "apigw-e2b-paused.json")), lifecycle.WebhookUnknownSandbox)
	wantOK(t, h.MustDeliver(t, MustFixtureRequest(t, "apigw-e2b-paused.json")), lifecycle.WebhookApplied)
}

// TestMalformed: a correctly signed body that is not a valid event is 400
// and changes nothing.
func TestMalformed(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	cases := map[string][]byte{
		"TruncatedJSON": []byte(`{"id":"x","version":"v2",`),
		"NotObject":     []byte(`["sandbox.lifecycle.paused"]`),
		"Empty":         nil,
		"TrailingData":  append(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)), []byte(` {}`)...),
		"MissingType":   bytes.Replace(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)), []byte(`"type":"sandbox.lifecycle.paused",`), nil, 1),
		"MissingSandbox": bytes.Replace(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)),
			[]byte(`"sandbox_id":"fake_1"`), []byte(`"sandbox_id":""`), 1),
		"BadTimestamp": bytes.Replace(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)),
			[]byte(`2026-01-15T10:10:00Z`), []byte(`yesterday`), 1),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d", raw), raw, false)
			wantError(t, h.MustDeliver(t, req), http.StatusBadRequest, "invalid")
			if got, want := h.MustGet(t).Version, sess.Version; got != want {
				t.Errorf("version = %d, want %d (unchanged)", got, want)
			}
		})
	}
}

// TestUnknownTypeIgnored: a signed, well-formed event of a type Sandman
// does not use (checkpointed today, any later one) is 200 "ignored", never
// a 400 that E2B would retry, and changes nothing (docs/providers/e2b.md).
func TestUnknownTypeIgnored(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	for _, typ := range []string{e2bhook.TypeCheckpointed, "sandbox.lifecycle.exploded"} {
		t.Run(typ, func(t *testing.T) {
			raw := bytes.Replace(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)),
				[]byte(e2bhook.TypePaused), []byte(typ), 1)
			req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d-"+typ, raw), raw, false)
			wantOK(t, h.MustDeliver(t, req), "ignored")
			if got, want := h.MustGet(t).Version, sess.Version; got != want {
				t.Errorf("version = %d, want %d (unchanged)", got, want)
			}
		})
	}
	t.Run("WrongSignatureStill401", func(t *testing.T) {
		raw := bytes.Replace(MustBuild(t, fixtureBody(t, e2bhook.TypePaused)),
			[]byte(e2bhook.TypePaused), []byte(e2bhook.TypeCheckpointed), 1)
		req := NewRequest(providerhook.E2BName, SignedHeaders("whsec_someone_else", "d", raw), raw, false)
		wantError(t, h.MustDeliver(t, req), http.StatusUnauthorized, "unauthorized")
	})
}

// TestV1CamelCaseBody: the v1 camelCase body of E2B's public docs applies
// like the v2 one.
func TestV1CamelCaseBody(t *testing.T) {
	h := MustHarness(t)
	sess := h.MustSession(t)
	raw := []byte(`{"version":"v1","id":"evt-v1-paused","type":"sandbox.lifecycle.paused",` +
		`"eventData":{"sandbox_metadata":{"sandman_session_id":"` + sess.ID + `"}},` +
		`"sandboxId":"` + sess.SandboxID + `","sandboxTemplateId":"base","timestamp":"2026-01-15T10:10:00Z"}`)
	req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d", raw), raw, false)
	wantOK(t, h.MustDeliver(t, req), lifecycle.WebhookApplied)
	if got, want := h.MustGet(t).State, lifecycle.StatePaused; got != want {
		t.Errorf("state = %q, want %q", got, want)
	}
}

// TestTooLarge: the size check comes first, before decoding or verifying.
func TestTooLarge(t *testing.T) {
	h := MustHarness(t, func(c *providerhook.Config) { c.MaxBodyBytes = 1024 })
	h.MustSession(t)
	big := bytes.Repeat([]byte("x"), 1025)
	fits := bytes.Repeat([]byte("x"), 1024)
	t.Run("Plain", func(t *testing.T) {
		req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d", big), big, false)
		wantError(t, h.MustDeliver(t, req), http.StatusRequestEntityTooLarge, "too_large")
	})
	t.Run("Base64", func(t *testing.T) {
		req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d", big), big, true)
		wantError(t, h.MustDeliver(t, req), http.StatusRequestEntityTooLarge, "too_large")
	})
	t.Run("UnsignedUnknownProvider", func(t *testing.T) {
		req := NewRequest("nope", nil, big, false)
		wantError(t, h.MustDeliver(t, req), http.StatusRequestEntityTooLarge, "too_large")
	})
	t.Run("AtLimitPassesSizeCheck", func(t *testing.T) {
		req := NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, "d", fits), fits, true)
		wantError(t, h.MustDeliver(t, req), http.StatusBadRequest, "invalid") // signed, so it reaches the parser
	})
	t.Run("DefaultIs256KiB", func(t *testing.T) {
		d := MustHarness(t)
		over := bytes.Repeat([]byte(" "), providerhook.DefaultMaxBodyBytes+1)
		wantError(t, d.MustDeliver(t, NewRequest(providerhook.E2BName, nil, over, false)), http.StatusRequestEntityTooLarge, "too_large")
	})
}

// TestUnknownProvider: a provider segment no format answers is 404.
func TestUnknownProvider(t *testing.T) {
	h := MustHarness(t)
	for name, provider := range map[string]string{"Unknown": "vercel", "Empty": "", "Uppercase": "E2B"} {
		t.Run(name, func(t *testing.T) {
			req := MustFixtureRequest(t, "apigw-e2b-paused.json")
			req.PathParameters = map[string]string{providerhook.ProviderParam: provider}
			wantError(t, h.MustDeliver(t, req), http.StatusNotFound, "not_found")
		})
	}
}

// TestStoreFailure: when the store fails the provider is told to retry: a
// 500 without detail, and nothing was claimed, so the retry applies.
func TestStoreFailure(t *testing.T) {
	broken := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: "no-such-table-" + strings.ReplaceAll(t.Name(), "/", "_")})
	h := mustHarnessOn(t, broken)
	r := h.MustDeliver(t, MustFixtureRequest(t, "apigw-e2b-paused.json"))
	wantError(t, r, http.StatusInternalServerError, "internal")
	if got := r.body["error"]; strings.Contains(got, "no-such-table") || !strings.Contains(got, "fixture-request") {
		t.Errorf("error = %q, want the generic sentence with the request id and no detail", got)
	}
	h.logs.Find(t, "webhook not applied")
}

// stubApplier answers with a fixed outcome or error and records the events.
type stubApplier struct {
	outcome lifecycle.WebhookOutcome
	err     error

	mu     sync.Mutex
	events []lifecycle.ProviderEvent
}

func (s *stubApplier) ApplyProviderEvent(_ context.Context, ev lifecycle.ProviderEvent) (lifecycle.WebhookOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return s.outcome, s.err
}

func (s *stubApplier) Events() []lifecycle.ProviderEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lifecycle.ProviderEvent(nil), s.events...)
}

// MustStubHandler returns a handler over a stub applier, with the E2B
// format stamping "e2b".
func MustStubHandler(tb testing.TB, a providerhook.Applier, opts ...func(*providerhook.Config)) *providerhook.Handler {
	tb.Helper()
	quiet := func(c *providerhook.Config) { c.Log = slog.New(slog.DiscardHandler) }
	return MustHandler(tb, a, "e2b", append([]func(*providerhook.Config){quiet}, opts...)...)
}

// TestApplyErrors: every failure of the apply step is a 5xx so the
// provider retries; lost races and timeouts say when.
func TestApplyErrors(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		status     int
		errorType  string
		retryAfter string
	}{
		{"Internal", errors.New("dynamodb: throttled"), http.StatusInternalServerError, "internal", ""},
		{"Conflict", lifecycle.Errorf(lifecycle.CodeConflict, "session moved"), http.StatusServiceUnavailable, "unavailable", "7"},
		{"Deadline", fmt.Errorf("find session: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "unavailable", "7"},
		{"InvalidFromStore", lifecycle.Errorf(lifecycle.CodeInvalid, "sandbox id is required"), http.StatusInternalServerError, "internal", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hd := MustStubHandler(t, &stubApplier{err: c.err}, func(c *providerhook.Config) { c.RetryAfter = 6500 * time.Millisecond })
			r := mustHandle(t, hd, MustFixtureRequest(t, "apigw-e2b-paused.json"))
			wantError(t, r, c.status, c.errorType)
			if got, want := r.header["Retry-After"], c.retryAfter; got != want {
				t.Errorf("Retry-After = %q, want %q", got, want)
			}
			if strings.Contains(r.body["error"], "throttled") || strings.Contains(r.body["error"], "sandbox id") {
				t.Errorf("error %q leaks the cause", r.body["error"])
			}
		})
	}
}

// panicApplier panics, as a bug in the rules would.
type panicApplier struct{}

func (panicApplier) ApplyProviderEvent(context.Context, lifecycle.ProviderEvent) (lifecycle.WebhookOutcome, error) {
	panic("boom")
}

// waitApplier blocks until its context ends, as a hung store call would.
type waitApplier struct{}

func (waitApplier) ApplyProviderEvent(ctx context.Context, _ lifecycle.ProviderEvent) (lifecycle.WebhookOutcome, error) {
	<-ctx.Done()
	return "", fmt.Errorf("find session: %w", ctx.Err())
}

// TestApplyFailures: a panic in the rules is a 500, and the request timeout
// bounds the apply step (a 503 the provider retries).
func TestApplyFailures(t *testing.T) {
	t.Run("Panic", func(t *testing.T) {
		r := mustHandle(t, MustStubHandler(t, panicApplier{}), MustFixtureRequest(t, "apigw-e2b-paused.json"))
		wantError(t, r, http.StatusInternalServerError, "internal")
		if strings.Contains(r.body["error"], "boom") {
			t.Errorf("error %q leaks the panic", r.body["error"])
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		hd := MustStubHandler(t, waitApplier{}, func(c *providerhook.Config) { c.RequestTimeout = time.Millisecond })
		r := mustHandle(t, hd, MustFixtureRequest(t, "apigw-e2b-paused.json"))
		wantError(t, r, http.StatusServiceUnavailable, "unavailable")
		if got, want := r.header["Retry-After"], "5"; got != want {
			t.Errorf("Retry-After = %q, want %q", got, want)
		}
	})
}

// TestResponseHeaders: answers carry the API's CORS and caching headers,
// with the configured origin.
func TestResponseHeaders(t *testing.T) {
	hd := MustStubHandler(t, &stubApplier{outcome: lifecycle.WebhookStale}, func(c *providerhook.Config) { c.AllowOrigin = "https://app.example.test" })
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"OK":    MustFixtureRequest(t, "apigw-e2b-paused.json"),
		"Error": NewRequest("nope", nil, nil, false),
	} {
		t.Run(name, func(t *testing.T) {
			r := mustHandle(t, hd, req)
			for k, want := range map[string]string{
				"Access-Control-Allow-Origin": "https://app.example.test",
				"Vary":                        "Origin",
				"Cache-Control":               "no-store",
				"Content-Type":                "application/json; charset=utf-8",
			} {
				if got := r.header[k]; got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestParsedEvent: what reaches the rules is the fixture's event, stamped
// with the configured provider name.
func TestParsedEvent(t *testing.T) {
	a := &stubApplier{outcome: lifecycle.WebhookApplied}
	hd := MustStubHandler(t, a)
	wantOK(t, mustHandle(t, hd, MustFixtureRequest(t, "apigw-e2b-updated.json")), lifecycle.WebhookApplied)
	evs := a.Events()
	if got, want := len(evs), 1; got != want {
		t.Fatalf("applied %d events, want %d", got, want)
	}
	want := lifecycle.ProviderEvent{
		ID: "5f0c6c1e-7d4b-4a8e-9b1a-000000000004", Provider: "e2b", Type: lifecycle.ProviderEventUpdated,
		SandboxID: FixtureSandboxID, Timestamp: fixtureStart.Add(21 * time.Minute), Timeout: time.Hour,
	}
	if got := evs[0]; got != want {
		t.Errorf("event = %+v, want %+v", got, want)
	}
}

// TestNew: misconfigurations fail at cold start, not per request.
func TestNew(t *testing.T) {
	f, err := providerhook.NewE2B("e2b", TestSecret)
	if err != nil {
		t.Fatal(err)
	}
	a := &stubApplier{}
	cases := []struct {
		name string
		cfg  providerhook.Config
	}{
		{"NoApplier", providerhook.Config{Formats: []providerhook.Format{f}}},
		{"NilFormat", providerhook.Config{Applier: a, Formats: []providerhook.Format{nil}}},
		{"DuplicateName", providerhook.Config{Applier: a, Formats: []providerhook.Format{f, f}}},
		{"NegativeLimit", providerhook.Config{Applier: a, Formats: []providerhook.Format{f}, MaxBodyBytes: -1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := providerhook.New(c.cfg); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
	for name, args := range map[string][]string{"NoProvider": {"", TestSecret}, "NoSecret": {"e2b"}, "EmptySecret": {"e2b", ""}} {
		t.Run("NewE2B"+name, func(t *testing.T) {
			if _, err := providerhook.NewE2B(args[0], args[1:]...); err == nil {
				t.Error("NewE2B succeeded, want an error")
			}
		})
	}
}

// TestSecretRotation: with two secrets configured, a delivery signed with
// either verifies, and one signed with neither does not.
func TestSecretRotation(t *testing.T) {
	f, err := providerhook.NewE2B("e2b", "whsec_old", TestSecret)
	if err != nil {
		t.Fatal(err)
	}
	raw := MustBuild(t, fixtureBody(t, e2bhook.TypePaused))
	for secret, want := range map[string]bool{"whsec_old": true, TestSecret: true, "whsec_other": false} {
		t.Run(secret, func(t *testing.T) {
			h := map[string]string{
				e2bhook.HeaderSignatureVersion: e2bhook.SignatureVersion,
				e2bhook.HeaderSignature:        e2bhook.Sign(secret, raw),
			}
			err := f.Verify(h, raw)
			if got := err == nil; got != want {
				t.Errorf("verified = %v (%v), want %v", got, err, want)
			}
			if err != nil && !lifecycle.IsCode(err, lifecycle.CodeUnauthorized) {
				t.Errorf("error code = %s, want unauthorized", lifecycle.ErrorCode(err))
			}
		})
	}
}

// syncBuffer is a goroutine-safe log sink with a finder for JSON lines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Find returns the first log line with message msg and the given key/value
// pairs, failing the test when there is none.
func (b *syncBuffer) Find(tb testing.TB, msg string, kv ...string) map[string]any {
	tb.Helper()
	b.mu.Lock()
	text := b.buf.String()
	b.mu.Unlock()
lines:
	for _, l := range strings.Split(text, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(m[kv[i]]) != kv[i+1] {
				continue lines
			}
		}
		return m
	}
	tb.Fatalf("no log line %q with %v in:\n%s", msg, kv, text)
	return nil
}
