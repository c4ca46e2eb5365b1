package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// adapters are every provider the local stack runs: names and settings of
// all of them are read.
var adapters = localstack.Adapters()

// env returns a getenv over m.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		c, err := app.ConfigFromEnv(env(map[string]string{app.EnvTable: "sessions"}))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.Provider, app.DefaultProvider; got != want {
			t.Errorf("Provider = %q, want %q", got, want)
		}
		if got, want := c.Policy, lifecycle.DefaultPolicy(); got != want {
			t.Errorf("Policy = %+v, want the defaults %+v", got, want)
		}
		if got, want := c.LogLevel, slog.LevelInfo; got != want {
			t.Errorf("LogLevel = %v, want %v", got, want)
		}
	})
	t.Run("Overrides", func(t *testing.T) {
		c, err := app.ConfigFromEnv(env(map[string]string{
			app.EnvTable: "sessions", app.EnvProvider: "FAKE", app.EnvIdleTimeout: "15m",
			app.EnvActivityGranularity: "10s", app.EnvLeaseDuration: "90s", app.EnvLogLevel: "debug",
			e2b.EnvWebhookSecretSecret: "sandman/webhook-signing-key", app.EnvCORSOrigin: "https://app.example.com",
			app.EnvProbeTimeout: "5s", app.EnvProviderCallTimeout: "45s", app.EnvAPIKeyCacheTTL: "0",
			app.EnvGuardHeadroom:      "10m",
			app.EnvPrices:             `{"e2b":{"running_per_hour":0.2,"paused_per_hour":0.01}}`,
			app.EnvCheckpointQueueURL: "https://sqs.example/checkpoint", envnames.ArchiveBucket: "archives",
			envnames.ArchiveSSE: archive.SSEKMS, envnames.ArchiveKMSKeyID: "alias/sandman",
		}), adapters...)
		if err != nil {
			t.Fatal(err)
		}
		if c.Provider != fake.DefaultName || c.Policy.DefaultIdleTimeout != 15*time.Minute ||
			c.Policy.ActivityGranularity != 10*time.Second || c.Policy.LeaseDuration != 90*time.Second ||
			c.Policy.GuardHeadroom != 10*time.Minute ||
			c.LogLevel != slog.LevelDebug || c.Secrets[e2b.EnvWebhookSecretSecret] != "sandman/webhook-signing-key" ||
			c.CORSOrigin != "https://app.example.com" || c.ProbeTimeout != 5*time.Second || c.ProviderCallTimeout != 45*time.Second ||
			c.APIKeyCacheTTL >= 0 || c.Deployment != "sessions" ||
			c.Prices["e2b"] != (lifecycle.Price{RunningPerHour: 0.2, PausedPerHour: 0.01}) ||
			c.CheckpointQueueURL != "https://sqs.example/checkpoint" ||
			c.Archive != (archive.Config{Bucket: "archives", Dir: archive.DefaultDir, SSE: archive.SSEKMS, KMSKeyID: "alias/sandman", Access: archive.AccessReadWrite}) {
			t.Errorf("config = %+v", c)
		}
	})
	for _, tc := range []struct {
		name     string
		env      map[string]string
		contains string
	}{
		{"ErrNoTable", map[string]string{}, app.EnvTable},
		{"ErrUnknownProvider", map[string]string{app.EnvProvider: "docker"}, app.EnvProvider},
		{"ErrKeyTwice", map[string]string{e2b.EnvAPIKey: "k", e2b.EnvAPIKeySecret: "s"}, e2b.EnvAPIKeySecret},
		{"ErrWebhookSecretTwice", map[string]string{e2b.EnvWebhookSecret: "k", e2b.EnvWebhookSecretSecret: "s"}, e2b.EnvWebhookSecretSecret},
		{"ErrBadDuration", map[string]string{app.EnvProviderGrace: "two minutes"}, app.EnvProviderGrace},
		{"ErrNegativeDuration", map[string]string{app.EnvMaxProviderTimeout: "-1h"}, app.EnvMaxProviderTimeout},
		{"ErrDefaultAboveMax", map[string]string{app.EnvIdleTimeout: "48h"}, app.EnvIdleTimeout},
		{"ErrGuardHeadroomZero", map[string]string{app.EnvGuardHeadroom: "0s"}, app.EnvGuardHeadroom},
		// 10 min idle + 30 s + 2 min grace + 50 min > the 1 h cap.
		{"ErrGuardHeadroomBeyondCap", map[string]string{app.EnvGuardHeadroom: "50m"}, "set at most 47m30s"},
		{"ErrLogLevel", map[string]string{app.EnvLogLevel: "loud"}, app.EnvLogLevel},
		{"ErrProbeTimeout", map[string]string{app.EnvProbeTimeout: "0s"}, app.EnvProbeTimeout},
		{"ErrKeyCacheTTL", map[string]string{app.EnvAPIKeyCacheTTL: "-1m"}, app.EnvAPIKeyCacheTTL},
		{"ErrPricesNotJSON", map[string]string{app.EnvPrices: "e2b=0.1"}, app.EnvPrices},
		{"ErrPricesUnknownField", map[string]string{app.EnvPrices: `{"e2b":{"per_hour":0.1}}`}, app.EnvPrices},
		{"ErrPricesNegative", map[string]string{app.EnvPrices: `{"e2b":{"running_per_hour":-1}}`}, app.EnvPrices},
		{"ErrArchiveSSE", map[string]string{envnames.ArchiveSSE: "aes"}, envnames.ArchiveSSE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "ErrNoTable" {
				tc.env[app.EnvTable] = "sessions"
			}
			_, err := app.ConfigFromEnv(env(tc.env), adapters...)
			if err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err = %v, want one naming %s", err, tc.contains)
			}
		})
	}
}

// fakeSecrets is a Secrets Manager that counts reads.
type fakeSecrets struct {
	mu     sync.Mutex
	values map[string]string
	reads  map[string]int
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := aws.ToString(in.SecretId)
	f.reads[id]++
	v, ok := f.values[id]
	if !ok {
		return nil, errors.New("ResourceNotFoundException: no such secret")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

func newFakeSecrets(values map[string]string) *fakeSecrets {
	return &fakeSecrets{values: values, reads: map[string]int{}}
}

// baseConfig is a Config over a fresh DynamoDB Local table.
func baseConfig(tb testing.TB, provider string) app.Config {
	tb.Helper()
	table := dynamotest.MustTable(tb)
	c, err := app.ConfigFromEnv(env(map[string]string{
		app.EnvTable: table, app.EnvDynamoEndpoint: os.Getenv(dynamotest.EndpointEnv), app.EnvProvider: provider,
	}))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// wired adds what a Lambda main composes (the providers it links) to deps,
// and the in-memory fake the tests run the functions on.
func wired(deps app.Deps) app.Deps {
	if deps.Adapters == nil {
		deps.Adapters = append(provider.Lambda(), fake.Adapter)
	}
	return deps
}

// MustApp builds an App and closes it when the test ends.
func MustApp(tb testing.TB, cfg app.Config, needs app.Needs, deps app.Deps) *app.App {
	tb.Helper()
	if deps.Log == nil {
		deps.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	a, err := app.New(tb.Context(), cfg, needs, wired(deps))
	if err != nil {
		tb.Fatalf("app.New: %v", err)
	}
	tb.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return a
}

func TestNewSecrets(t *testing.T) {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := app.Config{Table: "t", DynamoEndpoint: "http://127.0.0.1:1", Provider: e2b.Name, Policy: lifecycle.DefaultPolicy()}

	t.Run("ProviderKeyFromSecretsManager", func(t *testing.T) {
		sm := newFakeSecrets(map[string]string{"sandman/provider-api-key": " e2b_live_key\n"})
		c := cfg
		c.Secrets = map[string]string{e2b.EnvAPIKeySecret: "sandman/provider-api-key"}
		a := MustApp(t, c, app.Needs{Provider: true}, app.Deps{Secrets: sm, Log: quiet})
		if got, want := a.Provider.Name(), "e2b"; got != want {
			t.Errorf("provider = %q, want %q", got, want)
		}
		if got, want := sm.reads["sandman/provider-api-key"], 1; got != want {
			t.Errorf("secret reads = %d, want %d", got, want)
		}
	})
	t.Run("ErrProviderKeyMissing", func(t *testing.T) {
		_, err := app.New(t.Context(), cfg, app.Needs{Provider: true}, wired(app.Deps{Log: quiet}))
		if err == nil || !strings.Contains(err.Error(), e2b.EnvAPIKeySecret) {
			t.Fatalf("err = %v, want one naming %s", err, e2b.EnvAPIKeySecret)
		}
	})
	t.Run("ErrSecretRead", func(t *testing.T) {
		c := cfg
		c.Secrets = map[string]string{e2b.EnvAPIKeySecret: "sandman/absent"}
		_, err := app.New(t.Context(), c, app.Needs{Provider: true}, wired(app.Deps{Secrets: newFakeSecrets(nil), Log: quiet}))
		if err == nil || !strings.Contains(err.Error(), "sandman/absent") {
			t.Fatalf("err = %v, want one naming the secret", err)
		}
	})
	t.Run("NoProviderNeeded", func(t *testing.T) {
		sm := newFakeSecrets(nil)
		a := MustApp(t, cfg, app.Needs{}, app.Deps{Secrets: sm, Log: quiet})
		if got := len(sm.reads); got != 0 {
			t.Errorf("secret reads = %d, want 0", got)
		}
		if _, err := a.Provider.Probe(t.Context(), "sbx"); err == nil || !strings.Contains(err.Error(), "not configured to call the sandbox provider") {
			t.Errorf("Probe err = %v, want the no-provider refusal", err)
		}
		if got, want := a.Provider.Name(), "e2b"; got != want {
			t.Errorf("provider name = %q, want %q", got, want)
		}
	})
	t.Run("WebhookSecret", func(t *testing.T) {
		sm := newFakeSecrets(map[string]string{"sandman/webhook-signing-key": "whsec_123"})
		c := cfg
		c.Secrets = map[string]string{e2b.EnvWebhookSecretSecret: "sandman/webhook-signing-key"}
		a := MustApp(t, c, app.Needs{WebhookSecret: true}, app.Deps{Secrets: sm, Log: quiet})
		if got, want := a.WebhookSecrets[e2b.Name], "whsec_123"; got != want {
			t.Errorf("WebhookSecret = %q, want %q", got, want)
		}
	})
	t.Run("ErrWebhookSecretMissing", func(t *testing.T) {
		_, err := app.New(t.Context(), cfg, app.Needs{WebhookSecret: true}, wired(app.Deps{Log: quiet}))
		if err == nil || !strings.Contains(err.Error(), e2b.EnvWebhookSecret) {
			t.Fatalf("err = %v, want one naming %s", err, e2b.EnvWebhookSecret)
		}
	})
	t.Run("ClientTokenKeysFromTheStacksSecret", func(t *testing.T) {
		// The value Secrets Manager generates for infra's ClientTokenKeys:
		// the template's signing_key_id and 64 generated alphanumerics.
		arn := "arn:aws:secretsmanager:us-east-1:123456789012:secret:ClientTokenKeys-AbCdEf"
		sm := newFakeSecrets(map[string]string{arn: `{"signing_key_id":"k1","secret":"Zx8kQ2mN7pR4tV1wY6bD3fH9jL0nP5sU2xA8cE4gI7kM1oQ6rT3vW9yB5dF0hJ2l"}`})
		c := cfg
		c.ClientTokenKeysSecret = arn
		a := MustApp(t, c, app.Needs{}, app.Deps{Secrets: sm, Log: quiet})
		if a.Tokens == nil {
			t.Fatal("no client tokens: the client-tokens route would answer 503")
		}
		tok, _, err := a.Tokens.Mint("ses_1", "acct_1", 0)
		if err != nil {
			t.Fatal(err)
		}
		if claims, err := a.Tokens.VerifyFor(tok, "ses_1"); err != nil || claims.AccountID != "acct_1" {
			t.Errorf("VerifyFor = %+v, %v", claims, err)
		}
		if got, want := sm.reads[arn], 1; got != want {
			t.Errorf("secret reads = %d, want %d (once per cold start)", got, want)
		}
	})
	t.Run("ErrClientTokenKeysMalformed", func(t *testing.T) {
		sm := newFakeSecrets(map[string]string{"keys": `{"signing_key_id":"k1","secret":"short"}`})
		c := cfg
		c.ClientTokenKeysSecret = "keys"
		if _, err := app.New(t.Context(), c, app.Needs{}, app.Deps{Secrets: sm, Log: quiet}); err == nil {
			t.Fatal("a malformed key set loaded")
		}
	})
	t.Run("PlainEnvKey", func(t *testing.T) {
		c := cfg
		c.Secrets = map[string]string{e2b.EnvAPIKey: "e2b_local_key"}
		sm := newFakeSecrets(nil)
		MustApp(t, c, app.Needs{Provider: true}, app.Deps{Secrets: sm, Log: quiet})
		if got := len(sm.reads); got != 0 {
			t.Errorf("secret reads = %d, want 0", got)
		}
	})
}

// TestWiring drives the handlers an App builds end to end: create through
// the sessions function (fake provider), then status
// through a status function that may not call the provider, over one table.
func TestWiring(t *testing.T) {
	cfg := baseConfig(t, fake.DefaultName)
	sessions := MustApp(t, cfg, app.Needs{Provider: true}, app.Deps{})
	if err := sessions.Store.PutAPIKey(t.Context(), lifecycle.APIKey{
		Hash: apigw.HashAPIKey(apigw.DevAPIKey), AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC(),
	}); err != nil {
		t.Fatal(err)
	}
	h, err := sessions.HTTPHandler(routes.Sessions)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(t.Context(), mustEvent(t, "sessions-create.json"))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create = %d %s, %v; want 201", resp.StatusCode, resp.Body, err)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &created); err != nil {
		t.Fatal(err)
	}

	statusCfg := cfg
	statusCfg.Provider = e2b.Name // as the stack deploys it: no key
	status := MustApp(t, statusCfg, app.Needs{}, app.Deps{})
	sh, err := status.HTTPHandler(routes.Status)
	if err != nil {
		t.Fatal(err)
	}
	ev := mustEvent(t, "status.json")
	ev.PathParameters["id"] = created.ID
	resp, err = sh.Handle(t.Context(), ev)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Body, `"state":"running"`) {
		t.Fatalf("status = %d %s, %v; want 200 running", resp.StatusCode, resp.Body, err)
	}

}

func mustEvent(tb testing.TB, name string) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "api", name))
	if err != nil {
		tb.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		tb.Fatal(err)
	}
	return ev
}
