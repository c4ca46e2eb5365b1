package app_test

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
)

// TestConfigProviders: SANDMAN_PROVIDER is the default, SANDMAN_PROVIDERS
// adds the others; every provider's settings are read by their envnames.
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
		c, err := app.ConfigFromEnv(env(with()))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(c.Providers, ","), "e2b"; got != want {
			t.Errorf("Providers = %s, want %s", got, want)
		}
	})
	t.Run("Several", func(t *testing.T) {
		c, err := app.ConfigFromEnv(env(with(app.EnvProvider, "daytona", app.EnvProviders, " vercel, e2b ,daytona,",
			app.EnvVercelProjectID, "prj_1", app.EnvVercelTeamID, "team_1", app.EnvVercelMaxSessionTimeout, "24h",
			app.EnvDaytonaBaseURL, "http://d.test/api", app.EnvDaytonaAutoArchive, "48h", app.EnvDaytonaPauseMode, "Pause")))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(c.Providers, ","), "daytona,vercel,e2b"; got != want {
			t.Errorf("Providers = %s, want %s (the default first, each once)", got, want)
		}
		if !c.Enabled(app.ProviderVercel) || c.Enabled(app.ProviderLocal) {
			t.Errorf("Enabled: vercel %v, local %v", c.Enabled(app.ProviderVercel), c.Enabled(app.ProviderLocal))
		}
		if c.VercelProjectID != "prj_1" || c.VercelTeamID != "team_1" || c.VercelMaxSessionTimeout != 24*time.Hour {
			t.Errorf("vercel settings: %q %q %s", c.VercelProjectID, c.VercelTeamID, c.VercelMaxSessionTimeout)
		}
		if c.DaytonaBaseURL != "http://d.test/api" || c.DaytonaAutoArchive != 48*time.Hour || c.DaytonaPauseMode != "pause" {
			t.Errorf("daytona settings: %q %s %q", c.DaytonaBaseURL, c.DaytonaAutoArchive, c.DaytonaPauseMode)
		}
	})
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"ErrUnknownInList", with(app.EnvProviders, "e2b,modal"), app.EnvProviders},
		{"ErrUnknownDefault", with(app.EnvProvider, "modal"), app.EnvProvider},
		{"ErrDaytonaKeyTwice", with(app.EnvDaytonaAPIKey, "k", app.EnvDaytonaAPIKeySecret, "s"), app.EnvDaytonaAPIKeySecret},
		{"ErrVercelTokenTwice", with(app.EnvVercelToken, "k", app.EnvVercelTokenSecret, "s"), app.EnvVercelTokenSecret},
		{"ErrPauseMode", with(app.EnvDaytonaPauseMode, "archive"), app.EnvDaytonaPauseMode},
		{"ErrAutoDelete", with(app.EnvDaytonaAutoDelete, "soon"), app.EnvDaytonaAutoDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.ConfigFromEnv(env(tc.env))
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
	cfg := baseConfig(t, app.ProviderDaytona)
	cfg.Providers = append(cfg.Providers, app.ProviderVercel, app.ProviderE2B)
	cfg.DaytonaAPIKeySecret, cfg.VercelTokenSecret, cfg.ProviderAPIKeySecret = "d-key", "v-token", "e-key"
	cfg.DaytonaWebhookSecretSecret, cfg.WebhookSecretSecret = "d-hook", "e-hook"
	cfg.VercelProjectID = "prj_1"
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
		if a.DaytonaWebhookSecret != "whsec_c2FuZG1hbg==" || a.WebhookSecret != "whsec_e2b" {
			t.Errorf("webhook secrets = %q, %q", a.DaytonaWebhookSecret, a.WebhookSecret)
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
		c.DaytonaAPIKeySecret = ""
		_, err := app.New(t.Context(), c, app.Needs{Provider: true}, wired(app.Deps{Secrets: newFakeSecrets(secrets), Log: quiet}))
		if err == nil || !strings.Contains(err.Error(), app.EnvDaytonaAPIKeySecret) {
			t.Errorf("err = %v, want one naming %s", err, app.EnvDaytonaAPIKeySecret)
		}
	})
}
