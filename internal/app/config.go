package app

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/dynamo"
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
	EnvTemplateApps         = envnames.TemplateApps
	EnvPools                = envnames.Pools
	EnvLocalKeepProcesses   = envnames.LocalKeepProcesses
	EnvReadinessQueueURL    = envnames.ReadinessQueueURL
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

	EnvProviders                  = envnames.Providers
	EnvDaytonaBaseURL             = envnames.DaytonaBaseURL
	EnvDaytonaOrganizationID      = envnames.DaytonaOrganizationID
	EnvDaytonaTarget              = envnames.DaytonaTarget
	EnvDaytonaPauseMode           = envnames.DaytonaPauseMode
	EnvDaytonaAutoArchive         = envnames.DaytonaAutoArchive
	EnvDaytonaAutoDelete          = envnames.DaytonaAutoDelete
	EnvDaytonaAPIKey              = envnames.DaytonaAPIKey
	EnvDaytonaAPIKeySecret        = envnames.DaytonaAPIKeySecret
	EnvDaytonaWebhookSecret       = envnames.DaytonaWebhookSecret
	EnvDaytonaWebhookSecretSecret = envnames.DaytonaWebhookSecretSecret
	EnvVercelBaseURL              = envnames.VercelBaseURL
	EnvVercelTeamID               = envnames.VercelTeamID
	EnvVercelProjectID            = envnames.VercelProjectID
	EnvVercelMaxSessionTimeout    = envnames.VercelMaxSessionTimeout
	EnvVercelToken                = envnames.VercelToken
	EnvVercelTokenSecret          = envnames.VercelTokenSecret
	EnvTimerQueueURL              = envnames.TimerQueueURL
	EnvMaxRunning                 = envnames.MaxRunning
	EnvShards                     = envnames.Shards
	EnvPrices                     = envnames.Prices
)

// The client channel's variables (internal/envnames).
const (
	EnvClientTokenKeysSecret = envnames.ClientTokenKeysSecret
	EnvClientTokenKeysFile   = envnames.ClientTokenKeysFile
	EnvWSURL                 = envnames.WSURL
	EnvWSManagementURL       = envnames.WSManagementURL

	EnvWebhookRetrySchedule       = envnames.WebhookRetrySchedule
	EnvWebhookAllowPrivateTargets = envnames.WebhookAllowPrivateTargets
	EnvWebhookQueueURL            = envnames.WebhookQueueURL
	EnvWebhookDLQURL              = envnames.WebhookDLQURL
)

// The provider names EnvProvider and EnvProviders accept (docs/DESIGN.md
// "Providers"; the names sessions are stored with).
const (
	ProviderE2B     = "e2b"
	ProviderDaytona = "daytona"
	ProviderVercel  = "vercel"
	ProviderLocal   = "local"
	ProviderFake    = "fake"
)

// LambdaProviders are the providers a deployed function may be configured
// with; Load refuses the others. The local provider's sandboxes are
// processes of the local stack and the fake's live in one process's memory,
// so neither can serve a deployment (docs/DESIGN.md "Providers"), and the
// Lambda functions do not link them (internal/provider.Lambda).
var LambdaProviders = []string{ProviderE2B, ProviderDaytona, ProviderVercel}

// knownProviders lists the names EnvProvider and EnvProviders accept.
var knownProviders = []string{ProviderE2B, ProviderDaytona, ProviderVercel, ProviderLocal, ProviderFake}

// Config is everything a function reads from its environment, read once per
// cold start. Secret values are not in it: Load resolves them.
type Config struct {
	Table          string
	DynamoEndpoint string // "" in AWS

	// Provider is the default provider (one of knownProviders); Providers
	// every enabled one, the default first, each once.
	Provider  string
	Providers []string
	// ProviderAPIKey and ProviderAPIKeySecret: E2B's API key; at most one
	// is set (plain value for local use, secret name for AWS).
	ProviderAPIKey       string
	ProviderAPIKeySecret string
	// WebhookSecret and WebhookSecretSecret: likewise.
	WebhookSecret       string
	WebhookSecretSecret string

	E2BBaseURL      string // "" for the e2b package's default
	E2BDomain       string // "" for the e2b package's default
	LocalDir        string // "" for the local provider package's default
	LocalWebhookURL string

	// Daytona (docs/providers/daytona.md): the control API, organization
	// and region ("" for the daytona package's defaults), the pause mode
	// (daytona.PauseStop or PausePause; "" for stop), autoArchiveInterval
	// and autoDeleteInterval (0: Daytona's defaults), the API key and the
	// Svix webhook endpoint secret, each a plain value or a secret name.
	DaytonaBaseURL             string
	DaytonaOrganizationID      string
	DaytonaTarget              string
	DaytonaPauseMode           string
	DaytonaAutoArchive         time.Duration
	DaytonaAutoDelete          time.Duration
	DaytonaAPIKey              string
	DaytonaAPIKeySecret        string
	DaytonaWebhookSecret       string
	DaytonaWebhookSecretSecret string

	// Vercel Sandbox (docs/providers/vercel.md): the REST API,
	// team and project, the plan's maximum session length (0: the vercel
	// package's default, Hobby's 45 min), the token as a plain value or a
	// secret name.
	VercelBaseURL           string
	VercelTeamID            string
	VercelProjectID         string
	VercelMaxSessionTimeout time.Duration
	VercelToken             string
	VercelTokenSecret       string

	EventBus   string // EventBridge bus name or ARN; wins over EventsFile
	EventsFile string // JSON-lines file when no bus is set

	CORSOrigin string // "" means "*"
	LogLevel   slog.Level
	Policy     lifecycle.Policy

	Deployment          string        // default: Table
	APIKeyCacheTTL      time.Duration // 0: apigw.DefaultKeyCacheTTL; negative: off
	ProbeTimeout        time.Duration // 0: lifecycle.Service's default (15 s)
	ProviderCallTimeout time.Duration // 0: lifecycle.Service's default (30 s)
	// TimerQueueURL is the SQS queue of pause timers (internal/timer/sqstimer);
	// "" arms none unless Deps.Timers is given.
	TimerQueueURL string
	// MaxRunning is lifecycle.Config.MaxRunning: sandboxes an account may
	// hold running at once (0, the default: no limit).
	MaxRunning int
	// Shards is dynamo.Config.Shards: the due indexes' shard count
	// (SANDMAN_SHARDS; 0: the store's default).
	Shards int
	// Prices is lifecycle.Config.Prices (SANDMAN_PRICES): US dollars per
	// hour by provider, for usage estimates; nil: lifecycle.DefaultPrices.
	Prices map[string]lifecycle.Price
	// TemplateApps is lifecycle.Config.TemplateApps (SANDMAN_TEMPLATE_APPS):
	// default app specs by template; nil: none.
	TemplateApps map[string]*lifecycle.AppSpec
	// Pools is lifecycle.Config.Pools (SANDMAN_POOLS, docs/POOLS.md):
	// the warm pools, validated against the enabled providers and
	// TemplateApps; nil: none.
	Pools []lifecycle.Pool
	// LocalDropProcesses is the local provider's DropProcesses
	// (SANDMAN_LOCAL_KEEP_PROCESSES=false).
	LocalDropProcesses bool
	// ReadinessQueueURL is the SQS queue of readiness jobs
	// (internal/readiness/sqsjobs); "" queues none unless
	// Deps.ReadinessJobs is given.
	ReadinessQueueURL string

	// ClientTokenKeysSecret and ClientTokenKeysFile: at most one is set
	// (Secrets Manager secret name in AWS, generated file locally); with
	// neither, the deployment mints no client tokens.
	ClientTokenKeysSecret string
	ClientTokenKeysFile   string
	WSURL                 string // the client channel's WebSocket URL; "" for none
	// WSManagementURL is the API Gateway Management API endpoint of the
	// WebSocket stage (internal/channel/apigwmgmt); "" locally.
	WSManagementURL string

	// Outbound webhooks (docs/WEBHOOKS.md): the retry schedule
	// (delivery.ParseSchedule; default delivery.DefaultSchedule), whether
	// private and http targets are allowed (local use only), the SQS queue
	// of delivery jobs ("" locally: Deps.WebhookDispatcher runs them) and
	// the dead-letter queue of exhausted deliveries.
	WebhookSchedule     []time.Duration
	WebhookAllowPrivate bool
	WebhookQueueURL     string
	WebhookDLQURL       string
}

// ConfigFromEnv reads the Config from getenv (os.Getenv in production).
// Errors: a missing table, an unknown provider, a value and a secret name
// both set for one secret, an unparsable or out-of-range value, or a lease
// shorter than lifecycle.MinLeaseDuration (docs/DESIGN.md "Session
// states"); each names its variable.
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

		DaytonaBaseURL:             get(EnvDaytonaBaseURL),
		DaytonaOrganizationID:      get(EnvDaytonaOrganizationID),
		DaytonaTarget:              get(EnvDaytonaTarget),
		DaytonaPauseMode:           strings.ToLower(get(EnvDaytonaPauseMode)),
		DaytonaAPIKey:              get(EnvDaytonaAPIKey),
		DaytonaAPIKeySecret:        get(EnvDaytonaAPIKeySecret),
		DaytonaWebhookSecret:       get(EnvDaytonaWebhookSecret),
		DaytonaWebhookSecretSecret: get(EnvDaytonaWebhookSecretSecret),
		VercelBaseURL:              get(EnvVercelBaseURL),
		VercelTeamID:               get(EnvVercelTeamID),
		VercelProjectID:            get(EnvVercelProjectID),
		VercelToken:                get(EnvVercelToken),
		VercelTokenSecret:          get(EnvVercelTokenSecret),

		EventBus:      get(EnvEventBus),
		EventsFile:    get(EnvEventsFile),
		CORSOrigin:    get(EnvCORSOrigin),
		Deployment:    get(EnvDeployment),
		TimerQueueURL: get(EnvTimerQueueURL),
		Policy:        lifecycle.DefaultPolicy(),
	}
	c.ClientTokenKeysSecret, c.ClientTokenKeysFile, c.WSURL = get(EnvClientTokenKeysSecret), get(EnvClientTokenKeysFile), get(EnvWSURL)
	c.WSManagementURL = get(EnvWSManagementURL)
	c.WebhookQueueURL, c.WebhookDLQURL = get(EnvWebhookQueueURL), get(EnvWebhookDLQURL)
	sched, err := delivery.ParseSchedule(get(EnvWebhookRetrySchedule))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", EnvWebhookRetrySchedule, err)
	}
	c.WebhookSchedule = sched
	switch v := strings.ToLower(get(EnvWebhookAllowPrivateTargets)); v {
	case "", "false", "0":
	case "true", "1":
		c.WebhookAllowPrivate = true
	default:
		return Config{}, fmt.Errorf("%s=%q: want true or false", EnvWebhookAllowPrivateTargets, v)
	}
	if c.Table == "" {
		return Config{}, fmt.Errorf("%s is required: the name of the sessions table", EnvTable)
	}
	if c.Deployment == "" {
		c.Deployment = c.Table
	}
	if err := readLimits(get, &c); err != nil {
		return Config{}, err
	}
	if v := get(EnvShards); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > dynamo.MaxShards {
			return Config{}, fmt.Errorf("%s=%q: want a whole number of shards from 1 to %d", EnvShards, v, dynamo.MaxShards)
		}
		c.Shards = n
	}
	if v := get(EnvTemplateApps); v != "" {
		apps, err := parseTemplateApps(v)
		if err != nil {
			return Config{}, err
		}
		c.TemplateApps = apps
	}
	switch v := strings.ToLower(get(EnvLocalKeepProcesses)); v {
	case "", "true", "1":
	case "false", "0":
		c.LocalDropProcesses = true
	default:
		return Config{}, fmt.Errorf("%s=%q: want true or false", EnvLocalKeepProcesses, v)
	}
	c.ReadinessQueueURL = get(EnvReadinessQueueURL)
	if err := readProviders(get, &c); err != nil {
		return Config{}, err
	}
	if v := get(EnvPools); v != "" {
		pools, err := lifecycle.ParsePools(v, lifecycle.PoolOptions{DefaultProvider: c.Provider,
			Providers: c.Providers, TemplateApps: c.TemplateApps})
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", EnvPools, err)
		}
		c.Pools = pools
	}
	switch c.DaytonaPauseMode {
	case "", "stop", "pause":
	default:
		return Config{}, fmt.Errorf("%s=%q: want stop or pause", EnvDaytonaPauseMode, c.DaytonaPauseMode)
	}
	if c.ClientTokenKeysSecret != "" && c.ClientTokenKeysFile != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvClientTokenKeysSecret, EnvClientTokenKeysFile)
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
		{EnvDaytonaAutoArchive, &c.DaytonaAutoArchive},
		{EnvDaytonaAutoDelete, &c.DaytonaAutoDelete},
		{EnvVercelMaxSessionTimeout, &c.VercelMaxSessionTimeout},
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
	if least := lifecycle.MinLeaseDuration(c.ProviderCallTimeout); p.LeaseDuration < least {
		return Config{}, fmt.Errorf("%s=%v is shorter than the longest operation holding a lease (%v: a %v request or a %s provider call and its settle write, plus %v): the sweep would reconcile operations still in flight; set at least %v",
			EnvLeaseDuration, p.LeaseDuration, least, lifecycle.MaxRequestDuration, EnvProviderCallTimeout, lifecycle.LeaseMargin, least)
	}
	if p.MinIdleTimeout > p.MaxIdleTimeout || p.DefaultIdleTimeout < p.MinIdleTimeout || p.DefaultIdleTimeout > p.MaxIdleTimeout {
		return Config{}, fmt.Errorf("%s (%v) must lie between %s (%v) and %s (%v)",
			EnvIdleTimeout, p.DefaultIdleTimeout, EnvMinIdleTimeout, p.MinIdleTimeout, EnvMaxIdleTimeout, p.MaxIdleTimeout)
	}
	return c, nil
}

// readLimits reads the API key cache TTL, the running limit and the prices
// into c. Errors name the variable.
func readLimits(get func(string) string, c *Config) error {
	if v := get(EnvAPIKeyCacheTTL); v != "" {
		d, err := time.ParseDuration(v) // "0" parses as 0
		if err != nil || d < 0 {
			return fmt.Errorf("%s=%q: want a duration such as 1m, or 0 for no cache", EnvAPIKeyCacheTTL, v)
		}
		if d == 0 {
			d = -1 // off
		}
		c.APIKeyCacheTTL = d
	}
	if v := get(EnvMaxRunning); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want a whole number of sandboxes, 0 for no limit", EnvMaxRunning, v)
		}
		c.MaxRunning = n
	}
	if v := get(EnvPrices); v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c.Prices); err != nil {
			return fmt.Errorf(`%s: want a JSON object such as {"e2b":{"running_per_hour":0.1,"paused_per_hour":0}}: %w`, EnvPrices, err)
		}
		for name, p := range c.Prices {
			if p.RunningPerHour < 0 || p.PausedPerHour < 0 {
				return fmt.Errorf("%s: the prices of %s must not be negative", EnvPrices, name)
			}
		}
	}
	return nil
}

// readProviders reads the default provider and the enabled ones into c
// (the default first, each once), and refuses a secret given both as a
// value and as a secret name. Errors name the variable.
func readProviders(get func(string) string, c *Config) error {
	if c.Provider == "" {
		c.Provider = ProviderE2B
	}
	if !slices.Contains(knownProviders, c.Provider) {
		return fmt.Errorf("%s=%q is not a provider: want one of %s",
			EnvProvider, c.Provider, strings.Join(knownProviders, ", "))
	}
	c.Providers = []string{c.Provider}
	for _, name := range strings.Split(strings.ToLower(get(EnvProviders)), ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "" || slices.Contains(c.Providers, name):
		case !slices.Contains(knownProviders, name):
			return fmt.Errorf("%s names %q, not a provider: want some of %s",
				EnvProviders, name, strings.Join(knownProviders, ", "))
		default:
			c.Providers = append(c.Providers, name)
		}
	}
	for _, pair := range [][2]string{
		{EnvProviderAPIKey, EnvProviderAPIKeySecret},
		{EnvWebhookSecret, EnvWebhookSecretSecret},
		{EnvDaytonaAPIKey, EnvDaytonaAPIKeySecret},
		{EnvDaytonaWebhookSecret, EnvDaytonaWebhookSecretSecret},
		{EnvVercelToken, EnvVercelTokenSecret},
	} {
		if get(pair[0]) != "" && get(pair[1]) != "" {
			return fmt.Errorf("set only one of %s and %s", pair[0], pair[1])
		}
	}
	return nil
}

// templateAppJSON is one template's default app spec in
// SANDMAN_TEMPLATE_APPS: the fields of POST /v1/sessions' "app".
type templateAppJSON struct {
	Port                *int              `json:"port"`
	StartCommand        *string           `json:"start_command"`
	Cwd                 *string           `json:"cwd"`
	Env                 map[string]string `json:"env"`
	ReadyPath           *string           `json:"ready_path"`
	ReadyTimeoutSeconds *int64            `json:"ready_timeout_seconds"`
}

// parseTemplateApps reads SANDMAN_TEMPLATE_APPS. Errors: not a JSON
// object of app specs, or a spec the API would refuse (named).
func parseTemplateApps(v string) (map[string]*lifecycle.AppSpec, error) {
	var raw map[string]templateAppJSON
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf(`%s: want a JSON object such as {"node":{"port":3000,"start_command":"npm run dev"}}: %w`, EnvTemplateApps, err)
	}
	apps := make(map[string]*lifecycle.AppSpec, len(raw))
	for tmpl, a := range raw {
		spec, err := lifecycle.ResolveApp(nil, &lifecycle.AppInput{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd,
			Env: a.Env, ReadyPath: a.ReadyPath, ReadyTimeoutSeconds: a.ReadyTimeoutSeconds})
		if err != nil {
			return nil, fmt.Errorf("%s: template %q: %w", EnvTemplateApps, tmpl, err)
		}
		apps[tmpl] = spec
	}
	return apps, nil
}

// Enabled reports whether provider is one of c.Providers.
func (c Config) Enabled(provider string) bool { return slices.Contains(c.Providers, provider) }
