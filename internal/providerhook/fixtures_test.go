package providerhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/providerhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

var update = flag.Bool("update", false, "rewrite the fixtures in events/webhooks and the fuzz seed corpus")

// Fixture constants; events/webhooks/README.md documents them.
const (
	// TestSecret signs every fixture. It is a test value, never a real one.
	TestSecret = "whsec_sandman_test"
	// FixtureSandboxID is the first sandbox id the fake provider hands out,
	// so a test that creates one session delivers the fixtures unchanged.
	FixtureSandboxID = "fake_1"
	// FixtureSessionID is the session the fixtures' sandbox metadata names;
	// tests create their session with this id.
	FixtureSessionID = "ses_webhookfixture222222222222"
	// FixtureWebhookID is the e2b-webhook-id of every fixture delivery.
	FixtureWebhookID = "wh_sandman_test"
)

// fixtureDir is the repository's events/webhooks, from this package.
var fixtureDir = filepath.Join("..", "..", "events", "webhooks")

// fixtureStart is the time of the first fixture event; the others follow.
var fixtureStart = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

// fixture is one E2B lifecycle event and where it is written.
type fixture struct {
	name string // e2b-<type>
	body e2bhook.Body
}

// fixtures returns the sample events, one per E2B type, in time order:
// created 10:00, paused 10:10, resumed 10:20, updated 10:21 (timeout 3600 s),
// killed 10:30 (kill_reason timeout), all on 2026-01-15 UTC.
func fixtures() []fixture {
	ev := func(n int, typ lifecycle.ProviderEventType, at time.Duration) lifecycle.ProviderEvent {
		return lifecycle.ProviderEvent{
			ID:        fmt.Sprintf("5f0c6c1e-7d4b-4a8e-9b1a-00000000000%d", n),
			Type:      typ,
			SandboxID: FixtureSandboxID,
			Timestamp: fixtureStart.Add(at),
		}
	}
	created := ev(1, lifecycle.ProviderEventCreated, 0)
	paused := ev(2, lifecycle.ProviderEventPaused, 10*time.Minute)
	resumed := ev(3, lifecycle.ProviderEventResumed, 20*time.Minute)
	updated := ev(4, lifecycle.ProviderEventUpdated, 21*time.Minute)
	updated.Timeout = time.Hour
	killed := ev(5, lifecycle.ProviderEventKilled, 30*time.Minute)
	killed.KillReason = e2bhook.KillTimeout

	meta := map[string]string{lifecycle.MetadataSessionID: FixtureSessionID, "project": "demo"}
	var out []fixture
	for _, e := range []lifecycle.ProviderEvent{created, paused, resumed, updated, killed} {
		b := e2bhook.NewBody(e, meta)
		b.SandboxExecutionID = "exec_0001"
		b.SandboxTemplateID = "base"
		b.SandboxBuildID = "build_0001"
		b.SandboxTeamID = "team_sandman_test"
		if e.Type == lifecycle.ProviderEventPaused || e.Type == lifecycle.ProviderEventKilled {
			b.EventData.Execution = &e2bhook.Execution{
				StartedAt:     fixtureStart.Format(time.RFC3339),
				VCPUCount:     2,
				MemoryMB:      512,
				ExecutionTime: float64(e.Timestamp.Sub(fixtureStart).Milliseconds()),
			}
		}
		out = append(out, fixture{name: "e2b-" + string(e.Type), body: b})
	}
	return out
}

// MustBuild encodes b as the exact bytes E2B would send.
func MustBuild(tb testing.TB, b e2bhook.Body) []byte {
	tb.Helper()
	raw, err := e2bhook.Build(b)
	if err != nil {
		tb.Fatalf("build body: %v", err)
	}
	return raw
}

// NewRequest returns the API Gateway v2 request of a delivery of raw to
// /v1/webhooks/{provider} with the given headers (names as given), the body
// base64-encoded when b64.
func NewRequest(provider string, headers map[string]string, raw []byte, b64 bool) events.APIGatewayV2HTTPRequest {
	route := routes.Route{Method: "POST", Path: "/v1/webhooks/{provider}", Function: routes.Webhook}
	req := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       route.Key(),
		RawPath:        "/v1/webhooks/" + provider,
		Headers:        headers,
		PathParameters: map[string]string{providerhook.ProviderParam: provider},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   route.Key(),
			AccountID:  "000000000000",
			Stage:      "$default",
			RequestID:  "fixture-request",
			APIID:      "sandman",
			DomainName: "sandman.example.test",
			Time:       "15/Jan/2026:10:00:01 +0000",
			TimeEpoch:  fixtureStart.Add(time.Second).UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    "POST",
				Path:      "/v1/webhooks/" + provider,
				Protocol:  "HTTP/1.1",
				SourceIP:  "203.0.113.10",
				UserAgent: "e2b-webhooks",
			},
		},
		Body: string(raw),
	}
	if b64 {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(raw), true
	}
	return req
}

// SignedHeaders returns the lowercase headers of a delivery of raw signed
// with secret, as API Gateway passes them.
func SignedHeaders(secret, deliveryID string, raw []byte) map[string]string {
	h := map[string]string{
		"content-type":   "application/json",
		"content-length": strconv.Itoa(len(raw)),
		"host":           "sandman.example.test",
		"user-agent":     "e2b-webhooks",
	}
	for k, vs := range e2bhook.Header(secret, FixtureWebhookID, deliveryID, raw) {
		h[strings.ToLower(k)] = vs[0]
	}
	return h
}

// generated is every fixture file by name, as the generator writes it.
func generated(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	sigs := map[string]string{}
	for i, f := range fixtures() {
		raw := MustBuild(tb, f.body)
		files[f.name+".json"] = raw
		sigs[f.name+".json"] = e2bhook.Sign(TestSecret, raw)
		delivery := fmt.Sprintf("d1e7e0a0-0000-4000-8000-00000000000%d", i+1)
		files["apigw-"+f.name+".json"] = mustIndent(tb, NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, delivery, raw), raw, false))
		if f.body.Type == e2bhook.TypePaused {
			files["apigw-"+f.name+"-base64.json"] = mustIndent(tb, NewRequest(providerhook.E2BName, SignedHeaders(TestSecret, delivery, raw), raw, true))
		}
	}
	files["signatures.json"] = mustIndent(tb, signatureManifest{Secret: TestSecret, Signatures: sigs})
	return files
}

// signatureManifest is events/webhooks/signatures.json: the v1 signature of
// each body file under the test secret.
type signatureManifest struct {
	Secret     string            `json:"secret"`
	Signatures map[string]string `json:"signatures"`
}

func mustIndent(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatalf("encode fixture: %v", err)
	}
	return append(b, '\n')
}

// TestFixtures keeps events/webhooks in step with the generator above
// (`go test . -run TestFixtures -update` rewrites them, as does
// `go generate ./internal/providerhook/`) and checks that every fixture on disk
// is signed correctly, whoever edited it.
func TestFixtures(t *testing.T) {
	want := generated(t)
	if *update {
		if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(fixtureDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeSeedCorpus(t)
	}

	t.Run("UpToDate", func(t *testing.T) {
		for name, b := range want {
			got, err := os.ReadFile(filepath.Join(fixtureDir, name))
			if err != nil {
				t.Errorf("%v (run `go generate ./internal/providerhook/`)", err)
				continue
			}
			if !bytes.Equal(got, b) {
				t.Errorf("%s differs from the generator's output; run `go generate ./internal/providerhook/`", name)
			}
		}
	})

	t.Run("BodySignaturesVerify", func(t *testing.T) {
		var m signatureManifest
		mustReadJSON(t, filepath.Join(fixtureDir, "signatures.json"), &m)
		if got, want := m.Secret, TestSecret; got != want {
			t.Errorf("manifest secret = %q, want %q", got, want)
		}
		bodies := 0
		for name, sig := range m.Signatures {
			raw, err := os.ReadFile(filepath.Join(fixtureDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !e2bhook.Verify(TestSecret, raw, sig) {
				t.Errorf("%s: signature %q does not verify under the test secret", name, sig)
			}
			if _, err := e2bhook.Parse(raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			bodies++
		}
		if got, want := bodies, 5; got != want {
			t.Errorf("signed bodies = %d, want %d (one per E2B event type)", got, want)
		}
	})

	t.Run("RequestSignaturesVerify", func(t *testing.T) {
		names, err := filepath.Glob(filepath.Join(fixtureDir, "apigw-*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(names), 6; got != want {
			t.Errorf("request fixtures = %d, want %d", got, want)
		}
		base64Seen := false
		for _, name := range names {
			req := MustFixtureRequest(t, filepath.Base(name))
			raw := []byte(req.Body)
			if req.IsBase64Encoded {
				base64Seen = true
				if raw, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			if !e2bhook.Verify(TestSecret, raw, req.Headers[e2bhook.HeaderSignature]) {
				t.Errorf("%s: e2b-signature does not verify over the decoded body", name)
			}
			if got, want := req.Headers[e2bhook.HeaderSignatureVersion], e2bhook.SignatureVersion; got != want {
				t.Errorf("%s: signature version = %q, want %q", name, got, want)
			}
			if got := req.RouteKey; !slices.ContainsFunc(routes.Table, func(r routes.Route) bool {
				return r.Key() == got && r.Function == routes.Webhook
			}) {
				t.Errorf("%s: route key %q is not the webhook route of routes.Table", name, got)
			}
		}
		if !base64Seen {
			t.Error("no request fixture has isBase64Encoded true")
		}
	})
}

// MustFixtureRequest reads events/webhooks/<name> as an API Gateway v2
// request.
func MustFixtureRequest(tb testing.TB, name string) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	var req events.APIGatewayV2HTTPRequest
	mustReadJSON(tb, filepath.Join(fixtureDir, name), &req)
	return req
}

func mustReadJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("decode %s: %v", path, err)
	}
}

// writeSeedCorpus writes testdata/fuzz/FuzzHandler: each fixture delivered
// plain and base64, signed, plus a few refusals.
func writeSeedCorpus(tb testing.TB) {
	tb.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzHandler")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	type seed struct {
		name                   string
		provider, version, sig string
		body                   []byte
		b64, sign              bool
	}
	var seeds []seed
	for _, f := range fixtures() {
		raw := MustBuild(tb, f.body)
		seeds = append(seeds,
			seed{name: f.name, provider: "e2b", version: "v1", body: raw, sign: true},
			seed{name: f.name + "-base64", provider: "e2b", version: "v1", body: raw, b64: true, sign: true})
	}
	raw := MustBuild(tb, fixtures()[1].body)
	seeds = append(seeds,
		seed{name: "bad-signature", provider: "e2b", version: "v1", sig: "AAAA", body: raw},
		seed{name: "unknown-provider", provider: "nope", version: "v1", body: raw, sign: true},
		seed{name: "version-v2", provider: "e2b", version: "v2", body: raw, sign: true},
		seed{name: "malformed", provider: "e2b", version: "v1", body: []byte(`{"id":`), sign: true},
		seed{name: "not-object", provider: "e2b", version: "v1", body: []byte(`[1,2]`), sign: true},
		seed{name: "empty", provider: "e2b", version: "v1", body: nil, sign: true},
	)
	for _, s := range seeds {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		fmt.Fprintf(&b, "string(%q)\nstring(%q)\nstring(%q)\n[]byte(%q)\nbool(%v)\nbool(%v)\n",
			s.provider, s.version, s.sig, s.body, s.b64, s.sign)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+s.name), []byte(b.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
