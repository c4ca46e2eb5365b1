package app

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Environment variables read by ConfigFromEnv, named once in
// internal/envnames (see there for what each means).
const (
	EnvTable                = envnames.Table
	EnvDynamoEndpoint       = envnames.DynamoEndpoint
	EnvProvider             = envnames.Provider
	EnvProviderAPIKey       = envnames.ProviderAPIKey
	EnvProviderAPIKeySecret = envnames.ProviderAPIKeySecret
	EnvWebhookSecret        = envnames.WebhookSecret
	EnvWebhookSecretSecret  = envnames.WebhookSecretSecret
	EnvE2BBaseURL           = envnames.E2BBaseURL
	EnvE2BDomain            = envnames.E2BDomain
	EnvLocalDir             = envnames.LocalDir
	EnvLocalWebhookURL      = envnames.LocalWebhookURL
	EnvEventBus             = envnames.EventBus
	EnvEventsFile           = envnames.EventsFile
	EnvCORSOrigin           = envnames.CORSOrigin
	EnvLogLevel             = envnames.LogLevel
	EnvIdleTimeout          = envnames.IdleTimeout
	EnvMinIdleTimeout       = envnames.MinIdleTimeout
	EnvMaxIdleTimeout       = envnames.MaxIdleTimeout
	EnvMaxLifetimeLimit     = envnames.MaxLifetimeLimit
	EnvActivityGranularity  = envnames.ActivityGranularity
	EnvProviderGrace        = envnames.ProviderGrace
	EnvMaxProviderTimeout   = envnames.MaxProviderTimeout
	EnvLeaseDuration        = envnames.LeaseDuration
	EnvDeployment           = envnames.Deployment
	EnvAPIKeyCacheTTL       = envnames.APIKeyCacheTTL
	EnvProbeTimeout         = envnames.ProbeTimeout
	EnvProviderCallTimeout  = envnames.ProviderCallTimeout
)

// The client channel's variables (internal/envnames).
const (
	EnvClientTokenKeysSecret = envnames.ClientTokenKeysSecret
	EnvClientTokenKeysFile   = envnames.ClientTokenKeysFile
	EnvWSURL                 = envnames.WSURL
)

// The provider names EnvProvider accepts.
const (
	ProviderE2B   = "e2b"
	ProviderLocal = "local"
	ProviderFake  = "fake"
)

// Config is everything a function reads from its environment, read once per
// cold start. Secret values are not in it: Load resolves them.
type Config struct {
	Table          string
	DynamoEndpoint string // "" in AWS

	Provider string // ProviderE2B, ProviderLocal or ProviderFake
	// ProviderAPIKey and ProviderAPIKeySecret: at most one is set (plain
	// value for local use, secret name for AWS).
	ProviderAPIKey       string
	ProviderAPIKeySecret string
	// WebhookSecret and WebhookSecretSecret: likewise.
	WebhookSecret       string
	WebhookSecretSecret string

	E2BBaseURL      string // "" for the e2b package's default
	E2BDomain       string // "" for the e2b package's default
	LocalDir        string // "" for the localsandbox package's default
	LocalWebhookURL string

	EventBus   string // EventBridge bus name or ARN; wins over EventsFile
	EventsFile string // JSON-lines file when no bus is set

	CORSOrigin string // "" means "*"
	LogLevel   slog.Level
	Policy     lifecycle.Policy

	Deployment          string        // default: Table
	APIKeyCacheTTL      time.Duration // 0: apigw.DefaultKeyCacheTTL; negative: off
	ProbeTimeout        time.Duration // 0: lifecycle.Service's default (15 s)
	ProviderCallTimeout time.Duration // 0: lifecycle.Service's default (30 s)

	// ClientTokenKeysSecret and ClientTokenKeysFile: at most one is set
	// (Secrets Manager secret name in AWS, generated file locally); with
	// neither, the deployment mints no client tokens.
	ClientTokenKeysSecret string
	ClientTokenKeysFile   string
	WSURL                 string // the client channel's WebSocket URL; "" for none
}

// ConfigFromEnv reads the Config from getenv (os.Getenv in production).
// Errors: a missing table, an unknown provider, a value and a secret name
// both set for one secret, or an unparsable or out-of-range value; each
// names its variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{
		Table:                get(EnvTable),
		DynamoEndpoint:       get(EnvDynamoEndpoint),
		Provider:             strings.ToLower(get(EnvProvider)),
		ProviderAPIKey:       get(EnvProviderAPIKey),
		ProviderAPIKeySecret: get(EnvProviderAPIKeySecret),
		WebhookSecret:        get(EnvWebhookSecret),
		WebhookSecretSecret:  get(EnvWebhookSecretSecret),
		E2BBaseURL:           get(EnvE2BBaseURL),
		E2BDomain:            get(EnvE2BDomain),
		LocalDir:             get(EnvLocalDir),
		LocalWebhookURL:      get(EnvLocalWebhookURL),
		EventBus:             get(EnvEventBus),
		EventsFile:           get(EnvEventsFile),
		CORSOrigin:           get(EnvCORSOrigin),
		Deployment:           get(EnvDeployment),
		Policy:               lifecycle.DefaultPolicy(),
	}
	c.ClientTokenKeysSecret, c.ClientTokenKeysFile, c.WSURL = get(EnvClientTokenKeysSecret), get(EnvClientTokenKeysFile), get(EnvWSURL)
	if c.Table == "" {
		return Config{}, fmt.Errorf("%s is required: the name of the sessions table", EnvTable)
	}
	if c.Deployment == "" {
		c.Deployment = c.Table
	}
	if v := get(EnvAPIKeyCacheTTL); v != "" {
		d, err := time.ParseDuration(v) // "0" parses as 0
		if err != nil || d < 0 {
			return Config{}, fmt.Errorf("%s=%q: want a duration such as 1m, or 0 for no cache", EnvAPIKeyCacheTTL, v)
		}
		if d == 0 {
			d = -1 // off
		}
		c.APIKeyCacheTTL = d
	}
	switch c.Provider {
	case "":
		c.Provider = ProviderE2B
	case ProviderE2B, ProviderLocal, ProviderFake:
	default:
		return Config{}, fmt.Errorf("%s=%q is not a provider: want %s, %s or %s",
			EnvProvider, c.Provider, ProviderE2B, ProviderLocal, ProviderFake)
	}
	if c.ProviderAPIKey != "" && c.ProviderAPIKeySecret != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvProviderAPIKey, EnvProviderAPIKeySecret)
	}
	if c.ClientTokenKeysSecret != "" && c.ClientTokenKeysFile != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvClientTokenKeysSecret, EnvClientTokenKeysFile)
	}
	if c.WebhookSecret != "" && c.WebhookSecretSecret != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvWebhookSecret, EnvWebhookSecretSecret)
	}
	if v := get(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return Config{}, fmt.Errorf("%s=%q: want debug, info, warn or error", EnvLogLevel, v)
		}
	}
	p := &c.Policy
	for _, o := range []struct {
		name string
		dst  *time.Duration
	}{
		{EnvIdleTimeout, &p.DefaultIdleTimeout},
		{EnvMinIdleTimeout, &p.MinIdleTimeout},
		{EnvMaxIdleTimeout, &p.MaxIdleTimeout},
		{EnvMaxLifetimeLimit, &p.MaxLifetimeLimit},
		{EnvActivityGranularity, &p.ActivityGranularity},
		{EnvProviderGrace, &p.ProviderGrace},
		{EnvMaxProviderTimeout, &p.MaxProviderTimeout},
		{EnvLeaseDuration, &p.LeaseDuration},
		{EnvProbeTimeout, &c.ProbeTimeout},
		{EnvProviderCallTimeout, &c.ProviderCallTimeout},
	} {
		v := get(o.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("%s=%q: want a positive duration such as 90s or 10m", o.name, v)
		}
		*o.dst = d
	}
	if p.MinIdleTimeout > p.MaxIdleTimeout || p.DefaultIdleTimeout < p.MinIdleTimeout || p.DefaultIdleTimeout > p.MaxIdleTimeout {
		return Config{}, fmt.Errorf("%s (%v) must lie between %s (%v) and %s (%v)",
			EnvIdleTimeout, p.DefaultIdleTimeout, EnvMinIdleTimeout, p.MinIdleTimeout, EnvMaxIdleTimeout, p.MaxIdleTimeout)
	}
	return c, nil
}
