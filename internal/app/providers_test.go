package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
)

// TestConfigProviders: SANDMAN_PROVIDER is the default, SANDMAN_PROVIDERS
// adds the others; every provider's settings are read by the variables its
// adapter declares.
func TestConfigProviders(t *testing.T) {
	base := map[string]string{app.EnvTable: "t"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	t.Run("DefaultOnly", func(t *testing.T) {
		c, err := app.ConfigFromEnv(env(with()), adapters...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(c.Providers, ","), "e2b"; got != want {
			t.Errorf("Providers = %s, want %s", got, want)
		}
	})
	t.Run("Several", func(t *testing.T) {
		c, err := app.ConfigFromEnv(env(with(app.EnvProvider, "daytona", app.EnvProviders, " vercel, e2b ,daytona,",
			vercel.EnvProjectID, "prj_1", vercel.EnvTeamID, "team_1", vercel.EnvMaxSessionTimeout, "24h",
			daytona.EnvBaseURL, "http://d.test/api", daytona.EnvAutoArchive, "48h", daytona.EnvPauseMode, "Pause")), adapters...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(c.Providers, ","), "daytona,vercel,e2b"; got != want {
			t.Errorf("Providers = %s, want %s (the default first, each once)", got, want)
		}
		if !c.Enabled(vercel.Name) || c.Enabled(local.ProviderName) {
			t.Errorf("Enabled: vercel %v, local %v", c.Enabled(vercel.Name), c.Enabled(local.ProviderName))
		}
		v, _ := c.Settings[vercel.Name].(vercel.Config)
		if v.ProjectID != "prj_1" || v.TeamID != "team_1" || v.MaxSessionTimeout != 24*time.Hour {
			t.Errorf("vercel settings: %q %q %s", v.ProjectID, v.TeamID, v.MaxSessionTimeout)
		}
		d, _ := c.Settings[daytona.Name].(daytona.Config)
		if d.BaseURL != "http://d.test/api" || d.AutoArchive != 48*time.Hour || d.PauseMode != "pause" {
			t.Errorf("daytona settings: %q %s %q", d.BaseURL, d.AutoArchive, d.PauseMode)
		}
	})
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"ErrUnknownInList", with(app.EnvProviders, "e2b,not-a-provider"), app.EnvProviders},
		{"ErrUnknownDefault", with(app.EnvProvider, "not-a-provider"), app.EnvProvider},
		{"ErrDaytonaKeyTwice", with(daytona.EnvAPIKey, "k", daytona.EnvAPIKeySecret, "s"), daytona.EnvAPIKeySecret},
		{"ErrVercelTokenTwice", with(vercel.EnvToken, "k", vercel.EnvTokenSecret, "s"), vercel.EnvTokenSecret},
		{"ErrPauseMode", with(daytona.EnvPauseMode, "archive"), daytona.EnvPauseMode},
		{"ErrAutoDelete", with(daytona.EnvAutoDelete, "soon"), daytona.EnvAutoDelete},
		{"ErrCallsPerSecond", with(e2b.EnvCallsPerSecond, "fast"), e2b.EnvCallsPerSecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.ConfigFromEnv(env(tc.env), adapters...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestNewProviders: every enabled provider is built with its own secret,
// the service holds them all with the configured default, and a function
// that calls no provider fetches no provider secret.
func TestNewProviders(t *testing.T) {
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := baseConfig(t, daytona.Name)
	cfg.Providers = append(cfg.Providers, vercel.Name, e2b.Name)
	cfg.Secrets = map[string]string{daytona.EnvAPIKeySecret: "d-key", vercel.EnvTokenSecret: "v-token", e2b.EnvAPIKeySecret: "e-key",
		daytona.EnvWebhookSecretSecret: "d-hook", e2b.EnvWebhookSecretSecret: "e-hook"}
	cfg.Settings = map[string]any{vercel.Name: vercel.Config{ProjectID: "prj_1"}}
	secrets := map[string]string{"d-key": "dtn_1", "v-token": "vt_1", "e-key": "e2b_1",
		"d-hook": "whsec_c2FuZG1hbg==", "e-hook": "whsec_e2b"}

	t.Run("Provider", func(t *testing.T) {
		sm := newFakeSecrets(secrets)
		a := MustApp(t, cfg, app.Needs{Provider: true}, app.Deps{Secrets: sm, Log: quiet})
		if got, want := strings.Join(a.Service.ProviderNames(), ","), "daytona,e2b,vercel"; got != want {
			t.Errorf("ProviderNames = %s, want %s", got, want)
		}
		if got, want := a.Service.ProviderName(), "daytona"; got != want {
			t.Errorf("default = %s, want %s", got, want)
		}
		for _, name := range []string{"d-key", "v-token", "e-key"} {
			if sm.reads[name] != 1 {
				t.Errorf("secret %s read %d times, want 1", name, sm.reads[name])
			}
		}
		if sm.reads["d-hook"]+sm.reads["e-hook"] != 0 {
			t.Error("a provider function read a webhook secret")
		}
	})
	t.Run("Webhook", func(t *testing.T) {
		sm := newFakeSecrets(secrets)
		a := MustApp(t, cfg, app.Needs{WebhookSecret: true}, app.Deps{Secrets: sm, Log: quiet})
		if a.WebhookSecrets[daytona.Name] != "whsec_c2FuZG1hbg==" || a.WebhookSecrets[e2b.Name] != "whsec_e2b" {
			t.Errorf("webhook secrets = %q", a.WebhookSecrets)
		}
		for _, name := range []string{"d-key", "v-token", "e-key"} {
			if sm.reads[name] != 0 {
				t.Errorf("the webhook function read provider secret %s", name)
			}
		}
	})
	t.Run("StatusReadsNothing", func(t *testing.T) {
		sm := newFakeSecrets(secrets)
		a := MustApp(t, cfg, app.Needs{}, app.Deps{Secrets: sm, Log: quiet})
		if len(sm.reads) != 0 {
			t.Errorf("secret reads = %v, want none", sm.reads)
		}
		var names []string
		for _, p := range a.Providers {
			names = append(names, p.Name())
		}
		if !slices.Equal(names, []string{"daytona", "vercel", "e2b"}) {
			t.Errorf("providers = %v", names)
		}
	})
	t.Run("ErrDaytonaKeyMissing", func(t *testing.T) {
		c := cfg
		c.Secrets = maps.Clone(cfg.Secrets)
		delete(c.Secrets, daytona.EnvAPIKeySecret)
		_, err := app.New(t.Context(), c, app.Needs{Provider: true}, wired(app.Deps{Secrets: newFakeSecrets(secrets), Log: quiet}))
		if err == nil || !strings.Contains(err.Error(), daytona.EnvAPIKeySecret) {
			t.Errorf("err = %v, want one naming %s", err, daytona.EnvAPIKeySecret)
		}
	})
}

// TestNewPutsEachProviderBehindItsBudget: a provider New builds takes its
// calls from its adapter's budget (a second call within an hour-long
// refill fails transient at once; both reach Deps.Metrics as one call
// granted and one refused, by provider and class), and the service prices
// usage with the adapters' prices under SANDMAN_PRICES.
func TestNewPutsEachProviderBehindItsBudget(t *testing.T) {
	limited := registry.Adapter{Name: "limited", Calls: calllimit.Limit{PerSecond: 1.0 / 3600, Burst: 1},
		Price: lifecycle.Price{RunningPerHour: 0.5},
		Read:  func(func(string) string) (any, error) { return nil, nil },
		New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
			return fake.New(fake.Config{Name: "limited", Clock: p.Clock}), nil, nil
		}}
	set := registry.Set{limited, fake.Adapter}
	cfg := baseConfig(t, "limited")
	c, err := app.ConfigFromEnv(env(map[string]string{app.EnvTable: cfg.Table, app.EnvDynamoEndpoint: cfg.DynamoEndpoint,
		app.EnvProvider: "limited", app.EnvProviders: "fake", app.EnvPrices: `{"fake":{"running_per_hour":2}}`}), set...)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m := metrics.New(metrics.Config{Writer: &out})
	a := MustApp(t, c, app.Needs{Provider: true}, app.Deps{Adapters: set, Metrics: m})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := a.Provider.Get(ctx, "sbx"); errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("first call: %v, want the provider's own answer", err)
	}
	start := time.Now()
	if _, err := a.Provider.Get(ctx, "sbx"); !errors.Is(err, lifecycle.ErrProviderTransient) || time.Since(start) > time.Second {
		t.Errorf("second call = %v after %v, want a transient error at once (the budget is spent)", err, time.Since(start))
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	var line struct {
		Provider, Class                     string
		ProviderCalls, ProviderCallsRefused float64
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("metrics %q: %v", out.String(), err)
	}
	if line.Provider != "limited" || line.Class != "background" || line.ProviderCalls != 1 || line.ProviderCallsRefused != 1 {
		t.Errorf("metrics %+v, want limited background: 1 call, 1 refused", line)
	}
	prices := a.Service.Config().Prices
	if prices["limited"].RunningPerHour != 0.5 || prices["fake"].RunningPerHour != 2 {
		t.Errorf("prices = %v, want the adapter's for limited and SANDMAN_PRICES' for fake", prices)
	}
}
