package app

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Environment variables read by ConfigFromEnv. Durations are Go durations
// ("90s", "10m", "24h").
const (
	// EnvTable is the sessions table's name. Required.
	EnvTable = "SANDMAN_TABLE"
	// EnvDynamoEndpoint is DynamoDB Local's endpoint, e.g.
	// "http://127.0.0.1:8000"; unset in AWS.
	EnvDynamoEndpoint = "DYNAMODB_ENDPOINT"
	// EnvProvider names the sandbox provider: "e2b" (default), "local" (the
	// process provider of the local stack) or "fake" (in memory, per
	// process: demos and smoke tests only).
	EnvProvider = "SANDMAN_PROVIDER"
	// EnvProviderAPIKey is the provider's API key in plain text (local use).
	EnvProviderAPIKey = "SANDMAN_PROVIDER_API_KEY"
	// EnvProviderAPIKeySecret names (or is the ARN of) a Secrets Manager
	// secret whose SecretString is the provider's API key (AWS use).
	EnvProviderAPIKeySecret = "SANDMAN_PROVIDER_API_KEY_SECRET"
	// EnvWebhookSecret is the provider's webhook signing secret in plain
	// text (local use).
	EnvWebhookSecret = "SANDMAN_WEBHOOK_SECRET"
	// EnvWebhookSecretSecret names a Secrets Manager secret whose
	// SecretString is the webhook signing secret (AWS use).
	EnvWebhookSecretSecret = "SANDMAN_WEBHOOK_SECRET_SECRET"
	// EnvWebhookSigningKeySecret is accepted as another name for
	// EnvWebhookSecretSecret: it is the name infra/stack.go sets.
	EnvWebhookSigningKeySecret = "SANDMAN_WEBHOOK_SIGNING_KEY_SECRET"
	// EnvE2BBaseURL overrides E2B's control API URL (default https://api.e2b.app).
	EnvE2BBaseURL = "SANDMAN_E2B_BASE_URL"
	// EnvE2BDomain overrides E2B's sandbox domain (default e2b.app).
	EnvE2BDomain = "SANDMAN_E2B_DOMAIN"
	// EnvLocalDir is the local provider's state folder (default .sandman/sandboxes).
	EnvLocalDir = "SANDMAN_LOCAL_DIR"
	// EnvLocalWebhookURL is where the local provider sends its signed
	// webhooks ("" sends none); it needs the webhook secret.
	EnvLocalWebhookURL = "SANDMAN_LOCAL_WEBHOOK_URL"
	// EnvEventBus is the EventBridge bus lifecycle events go to.
	EnvEventBus = "SANDMAN_EVENT_BUS"
	// EnvEventsFile is a JSON-lines file lifecycle events go to when no bus
	// is set (the local stack).
	EnvEventsFile = "SANDMAN_EVENTS_FILE"
	// EnvCORSOrigin is the Access-Control-Allow-Origin of API responses
	// (default "*").
	EnvCORSOrigin = "SANDMAN_CORS_ORIGIN"
	// EnvLogLevel is debug, info (default), warn or error.
	EnvLogLevel = "SANDMAN_LOG_LEVEL"

	// Policy overrides (lifecycle.Policy; defaults from DESIGN.md there).
	EnvIdleTimeout         = "SANDMAN_IDLE_TIMEOUT"         // DefaultIdleTimeout, default 10m
	EnvMinIdleTimeout      = "SANDMAN_MIN_IDLE_TIMEOUT"     // MinIdleTimeout, default 1m
	EnvMaxIdleTimeout      = "SANDMAN_MAX_IDLE_TIMEOUT"     // MaxIdleTimeout, default 24h
	EnvMaxLifetimeLimit    = "SANDMAN_MAX_LIFETIME_LIMIT"   // MaxLifetimeLimit, default 720h
	EnvActivityGranularity = "SANDMAN_ACTIVITY_GRANULARITY" // ActivityGranularity, default 30s
	EnvProviderGrace       = "SANDMAN_PROVIDER_GRACE"       // ProviderGrace, default 2m
	EnvMaxProviderTimeout  = "SANDMAN_MAX_PROVIDER_TIMEOUT" // MaxProviderTimeout, default 1h
	EnvLeaseDuration       = "SANDMAN_LEASE_DURATION"       // LeaseDuration, default 5m

	// EnvDeployment names this deployment; it tags every sandbox created so
	// deployments sharing one provider account never touch each other's
	// sandboxes. Default: the table name.
	EnvDeployment = "SANDMAN_DEPLOYMENT"

	// EnvAPIKeyCacheTTL is how long a warm function trusts an API key it has
	// looked up (apigw.KeyCache), default 1m; "0" turns the cache off.
	EnvAPIKeyCacheTTL = "SANDMAN_API_KEY_CACHE_TTL"

	// Provider call bounds (lifecycle.Service).
	EnvProbeTimeout        = "SANDMAN_PROBE_TIMEOUT"         // reconnect's live probe, default 15s
	EnvProviderCallTimeout = "SANDMAN_PROVIDER_CALL_TIMEOUT" // every other provider call, default 30s
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
	if alias := get(EnvWebhookSigningKeySecret); alias != "" {
		if c.WebhookSecretSecret != "" && c.WebhookSecretSecret != alias {
			return Config{}, fmt.Errorf("%s and %s name different secrets; set one", EnvWebhookSecretSecret, EnvWebhookSigningKeySecret)
		}
		c.WebhookSecretSecret = alias
	}
	if c.ProviderAPIKey != "" && c.ProviderAPIKeySecret != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvProviderAPIKey, EnvProviderAPIKeySecret)
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
