package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/linkpage"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Environment variables read by ConfigFromEnv, named once in
// internal/envnames (see there for what each means).
const (
	EnvTable               = envnames.Table
	EnvDynamoEndpoint      = envnames.DynamoEndpoint
	EnvProvider            = envnames.Provider
	EnvTemplateApps        = envnames.TemplateApps
	EnvIdlePolicy          = envnames.IdlePolicy
	EnvIdleUserField       = envnames.IdleUserField
	EnvPools               = envnames.Pools
	EnvReadinessQueueURL   = envnames.ReadinessQueueURL
	EnvResumeQueueURL      = envnames.ResumeQueueURL
	EnvPoolRefillQueueURL  = envnames.PoolRefillQueueURL
	EnvCheckpointQueueURL  = envnames.CheckpointQueueURL
	EnvArchiveAfter        = envnames.ArchiveAfter
	EnvDeleteAfter         = envnames.DeleteAfter
	EnvEventBus            = envnames.EventBus
	EnvEventsFile          = envnames.EventsFile
	EnvCORSOrigin          = envnames.CORSOrigin
	EnvLogLevel            = envnames.LogLevel
	EnvIdleTimeout         = envnames.IdleTimeout
	EnvMinIdleTimeout      = envnames.MinIdleTimeout
	EnvMaxIdleTimeout      = envnames.MaxIdleTimeout
	EnvMaxLifetimeLimit    = envnames.MaxLifetimeLimit
	EnvActivityGranularity = envnames.ActivityGranularity
	EnvProviderGrace       = envnames.ProviderGrace
	EnvMaxProviderTimeout  = envnames.MaxProviderTimeout
	EnvGuardHeadroom       = envnames.GuardHeadroom
	EnvLeaseDuration       = envnames.LeaseDuration
	EnvDeployment          = envnames.Deployment
	EnvAPIKeyCacheTTL      = envnames.APIKeyCacheTTL
	EnvProbeTimeout        = envnames.ProbeTimeout
	EnvProviderCallTimeout = envnames.ProviderCallTimeout

	EnvProviders     = envnames.Providers
	EnvTimerQueueURL = envnames.TimerQueueURL
	EnvMaxRunning    = envnames.MaxRunning
	EnvShards        = envnames.Shards
	// EnvEventRetentionDays is the timeline's retention in days.
	EnvEventRetentionDays = envnames.EventRetentionDays
	// The fleet's provider governor (internal/governor).
	EnvGovernor         = envnames.Governor
	EnvGovernorFallback = envnames.GovernorFallback
	EnvGovernorShards   = envnames.GovernorShards
	EnvPrices           = envnames.Prices
)

// The client channel's variables (internal/envnames).
const (
	EnvClientTokenKeysSecret = envnames.ClientTokenKeysSecret
	EnvClientTokenKeysFile   = envnames.ClientTokenKeysFile
	EnvWSURL                 = envnames.WSURL
	EnvWSManagementURL       = envnames.WSManagementURL

	EnvBrandName    = envnames.BrandName
	EnvBrandAccent  = envnames.BrandAccent
	EnvBrandLogoURL = envnames.BrandLogoURL

	EnvWebhookRetrySchedule       = envnames.WebhookRetrySchedule
	EnvWebhookAllowPrivateTargets = envnames.WebhookAllowPrivateTargets
	EnvWebhookQueueURL            = envnames.WebhookQueueURL
	EnvWebhookDLQURL              = envnames.WebhookDLQURL
)

// DefaultProvider is the provider SANDMAN_PROVIDER names when unset.
const DefaultProvider = "e2b"

// Config is everything a function reads from its environment, read once per
// cold start. Secret values are not in it: Load resolves them.
type Config struct {
	Table          string
	DynamoEndpoint string // "" in AWS

	// Provider is the default provider (DefaultProvider when unset);
	// Providers every enabled one, the default first, each once. Names are
	// checked against the adapters ConfigFromEnv is given.
	Provider  string
	Providers []string
	// Settings are the adapters' settings by provider name, each what its
	// registry.Adapter.Read returned (its package's Config type); New
	// reads the defaults (an empty environment) of an adapter missing here.
	Settings map[string]any
	// Secrets are the values of the adapters' secret variables by variable
	// name (registry.Secret.Env and SecretEnv; unset ones are absent): for
	// each secret, a plain value or a Secrets Manager secret's name, at
	// most one of the two. New resolves them.
	Secrets map[string]string
	// CallLimits are the providers' call budgets by provider name
	// (registry.ReadCalls): the whole fleet's, kept by the governor
	// (internal/governor). A provider missing here has no limit.
	CallLimits map[string]calllimit.Limit
	// Governor is the fleet's provider governor's setting: off (true:
	// SANDMAN_GOVERNOR=off) leaves each process its own limiter alone
	// (calllimit.Wrap at the whole limit); Fallback is the share of the
	// limit a process allows itself while the table is slow or down (0:
	// governor.DefaultFallback); Shards the items of each bucket (0: 1).
	GovernorOff      bool
	GovernorFallback float64
	GovernorShards   int

	EventBus   string // EventBridge bus name or ARN; wins over EventsFile
	EventsFile string // JSON-lines file when no bus is set

	CORSOrigin string // "" means "*"
	LogLevel   slog.Level
	Policy     lifecycle.Policy
	// Tiers are the deployment's retention tiers (SANDMAN_ARCHIVE_AFTER,
	// SANDMAN_DELETE_AFTER; lifecycle.Config.Tiers).
	Tiers lifecycle.Tiers

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
	// EventRetention is dynamo.Config.EventRetention: how long a session's
	// recorded events are kept (SANDMAN_EVENT_RETENTION_DAYS; 0: the
	// store's default, 30 days).
	EventRetention time.Duration
	// Prices is SANDMAN_PRICES: US dollars per hour by provider, for usage
	// estimates, over the adapters' own (registry.Adapter.Price).
	Prices map[string]lifecycle.Price
	// TemplateApps is lifecycle.Config.TemplateApps (SANDMAN_TEMPLATE_APPS):
	// default app specs by template; nil: none.
	TemplateApps map[string]*lifecycle.AppSpec
	// IdlePolicy and IdleUserField are lifecycle.Config's
	// (SANDMAN_IDLE_POLICY, default fixed; SANDMAN_IDLE_USER_FIELD,
	// default "user", "-" for none).
	IdlePolicy    lifecycle.IdlePolicy
	IdleUserField string
	// Pools is lifecycle.Config.Pools (SANDMAN_POOLS, docs/POOLS.md):
	// the warm pools, validated against the enabled providers and
	// TemplateApps; nil: none.
	Pools []lifecycle.Pool
	// ReadinessQueueURL is the SQS queue of readiness jobs
	// (internal/readiness/sqsjobs); "" queues none unless
	// Deps.ReadinessJobs is given.
	ReadinessQueueURL string
	// ResumeQueueURL is the SQS queue of the jobs that finish a handed-off
	// resume (lifecycle.Config.ResumeJobs); "" sends them to
	// ReadinessQueueURL unless Deps.ResumeJobs is given.
	ResumeQueueURL string
	// PoolRefillQueueURL is the FIFO SQS queue of pool refill requests
	// (internal/sweep/sqsrefill, lifecycle.Config.PoolRefills); "" sends
	// none unless Deps.PoolRefills is given.
	PoolRefillQueueURL string
	// CheckpointQueueURL is the SQS queue of checkpoint jobs
	// (internal/checkpoint/sqscheckpoint, lifecycle.Config.CheckpointJobs);
	// "" queues none unless Deps.CheckpointJobs is given.
	CheckpointQueueURL string
	// Archive is where workspace archives are kept (internal/archive's
	// ConfigFromEnv, the SANDMAN_ARCHIVE_* variables): New keeps them in
	// S3 when Archive.Bucket is set (the stack sets it on the functions
	// that read or write archives); otherwise only Deps.Archives does.
	Archive archive.Config

	// ClientTokenKeysSecret and ClientTokenKeysFile: at most one is set
	// (Secrets Manager secret name in AWS, generated file locally); with
	// neither, the deployment mints no client tokens.
	ClientTokenKeysSecret string
	ClientTokenKeysFile   string
	WSURL                 string // the client channel's WebSocket URL; "" for none
	// WSManagementURL is the API Gateway Management API endpoint of the
	// WebSocket stage (internal/channel/apigwmgmt); "" locally.
	WSManagementURL string
	// Brand is the look of the stable link's pages (SANDMAN_BRAND_NAME,
	// SANDMAN_BRAND_ACCENT, SANDMAN_BRAND_LOGO_URL; internal/linkpage);
	// the zero Brand is the default look.
	Brand linkpage.Brand

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

// ConfigFromEnv reads the Config from getenv (os.Getenv in production),
// with the settings, secrets and call budgets of adapters (the providers
// the caller links: internal/provider.Lambda for the Lambda functions).
// Given no adapters, provider names are not checked and no provider
// setting is read (a function that calls no provider).
// Errors: a missing table, an unknown provider, a value and a secret name
// both set for one secret, an unparsable or out-of-range value, or a lease
// shorter than lifecycle.MinLeaseDuration (docs/DESIGN.md "Session
// states"); each names its variable.
func ConfigFromEnv(getenv func(string) string, adapters ...registry.Adapter) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{
		Table:          get(EnvTable),
		DynamoEndpoint: get(EnvDynamoEndpoint),
		EventBus:       get(EnvEventBus),
		EventsFile:     get(EnvEventsFile),
		CORSOrigin:     get(EnvCORSOrigin),
		Deployment:     get(EnvDeployment),
		TimerQueueURL:  get(EnvTimerQueueURL),
		Policy:         lifecycle.DefaultPolicy(),

		ReadinessQueueURL:     get(EnvReadinessQueueURL),
		ResumeQueueURL:        get(EnvResumeQueueURL),
		PoolRefillQueueURL:    get(EnvPoolRefillQueueURL),
		CheckpointQueueURL:    get(EnvCheckpointQueueURL),
		ClientTokenKeysSecret: get(EnvClientTokenKeysSecret),
		ClientTokenKeysFile:   get(EnvClientTokenKeysFile),
		WSURL:                 get(EnvWSURL),
		WSManagementURL:       get(EnvWSManagementURL),
		WebhookQueueURL:       get(EnvWebhookQueueURL),
		WebhookDLQURL:         get(EnvWebhookDLQURL),
	}
	if c.Table == "" {
		return Config{}, fmt.Errorf("%s is required: the name of the sessions table", EnvTable)
	}
	if c.Deployment == "" {
		c.Deployment = c.Table
	}
	if c.ClientTokenKeysSecret != "" && c.ClientTokenKeysFile != "" {
		return Config{}, fmt.Errorf("set only one of %s and %s", EnvClientTokenKeysSecret, EnvClientTokenKeysFile)
	}
	for _, read := range []func(func(string) string, *Config) error{readBrand, readWebhooks, readLimits, readShards, readEventRetention, readGovernor, readTemplateApps, readIdlePolicy, readLogLevel, readDurations, readTiers} {
		if err := read(get, &c); err != nil {
			return Config{}, err
		}
	}
	if err := readProviders(get, &c, adapters); err != nil {
		return Config{}, err
	}
	if err := readPools(get, &c); err != nil {
		return Config{}, err
	}
	var err error
	if c.Archive, err = archive.ConfigFromEnv(get); err != nil {
		return Config{}, err
	}
	return c, nil
}

// readPools reads the warm pools, after the providers and the templates'
// apps they are checked against.
func readPools(get func(string) string, c *Config) error {
	v := get(EnvPools)
	if v == "" {
		return nil
	}
	pools, err := lifecycle.ParsePools(v, lifecycle.PoolOptions{DefaultProvider: c.Provider,
		Providers: c.Providers, TemplateApps: c.TemplateApps})
	if err != nil {
		return fmt.Errorf("%s: %w", EnvPools, err)
	}
	c.Pools = pools
	return nil
}

// readBrand reads the look of the stable link's pages. Errors name the
// variable.
func readBrand(get func(string) string, c *Config) error {
	b, err := linkpage.ParseBrand(get(EnvBrandName), get(EnvBrandAccent), get(EnvBrandLogoURL))
	var be *linkpage.BrandError
	if errors.As(err, &be) {
		env := map[string]string{linkpage.PartName: EnvBrandName, linkpage.PartAccent: EnvBrandAccent, linkpage.PartLogoURL: EnvBrandLogoURL}[be.Part]
		return fmt.Errorf("%s: %s", env, be.Reason)
	}
	if err != nil {
		return err
	}
	c.Brand = b
	return nil
}

// readWebhooks reads the outbound webhooks' schedule and target guard.
func readWebhooks(get func(string) string, c *Config) error {
	sched, err := delivery.ParseSchedule(get(EnvWebhookRetrySchedule))
	if err != nil {
		return fmt.Errorf("%s: %w", EnvWebhookRetrySchedule, err)
	}
	c.WebhookSchedule = sched
	switch v := strings.ToLower(get(EnvWebhookAllowPrivateTargets)); v {
	case "", "false", "0":
	case "true", "1":
		c.WebhookAllowPrivate = true
	default:
		return fmt.Errorf("%s=%q: want true or false", EnvWebhookAllowPrivateTargets, v)
	}
	return nil
}

// readShards reads the due indexes' shard count.
func readShards(get func(string) string, c *Config) error {
	if v := get(EnvShards); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > dynamo.MaxShards {
			return fmt.Errorf("%s=%q: want a whole number of shards from 1 to %d", EnvShards, v, dynamo.MaxShards)
		}
		c.Shards = n
	}
	return nil
}

// readEventRetention reads how many days a session's events are kept.
func readEventRetention(get func(string) string, c *Config) error {
	if v := get(EnvEventRetentionDays); v != "" {
		maxDays := int(lifecycle.MaxEventRetention / (24 * time.Hour))
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDays {
			return fmt.Errorf("%s=%q: want a whole number of days from 1 to %d", EnvEventRetentionDays, v, maxDays)
		}
		c.EventRetention = time.Duration(n) * 24 * time.Hour
	}
	return nil
}

// readGovernor reads the fleet's provider governor's settings.
func readGovernor(get func(string) string, c *Config) error {
	switch v := strings.ToLower(get(EnvGovernor)); v {
	case "", "on":
	case "off":
		c.GovernorOff = true
	default:
		return fmt.Errorf("%s=%q: want on or off", EnvGovernor, v)
	}
	if v := get(EnvGovernorFallback); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			return fmt.Errorf("%s=%q: want a share of the limit above 0, at most 1 (such as 0.1)", EnvGovernorFallback, v)
		}
		c.GovernorFallback = f
	}
	if v := get(EnvGovernorShards); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("%s=%q: want a whole number of shards from 1 to 64", EnvGovernorShards, v)
		}
		c.GovernorShards = n
	}
	return nil
}

// readTemplateApps reads the templates' default app specs.
func readTemplateApps(get func(string) string, c *Config) error {
	if v := get(EnvTemplateApps); v != "" {
		apps, err := parseTemplateApps(v)
		if err != nil {
			return err
		}
		c.TemplateApps = apps
	}
	return nil
}

// readIdlePolicy reads the deployment's idle policy and the user field of
// the learned one's histograms.
func readIdlePolicy(get func(string) string, c *Config) error {
	c.IdlePolicy = lifecycle.IdlePolicyFixed
	if v := get(EnvIdlePolicy); v != "" {
		if c.IdlePolicy = lifecycle.IdlePolicy(v); !c.IdlePolicy.Valid() {
			return fmt.Errorf("%s=%q: want %s or %s", EnvIdlePolicy, v, lifecycle.IdlePolicyFixed, lifecycle.IdlePolicyLearned)
		}
	}
	switch v := get(EnvIdleUserField); v {
	case "":
		c.IdleUserField = "user"
	case "-":
		c.IdleUserField = "" // no user key: account and template only
	default:
		c.IdleUserField = v
	}
	return nil
}

// readLogLevel reads the log level.
func readLogLevel(get func(string) string, c *Config) error {
	if v := get(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%s=%q: want debug, info, warn or error", EnvLogLevel, v)
		}
	}
	return nil
}

// readDurations reads the policy's and the calls' durations, then checks
// them together: the lease outlasts the longest operation holding one, the
// default idle timeout lies within its bounds, and a guard headroom set here
// fits under the max provider timeout with the default idle timeout.
func readDurations(get func(string) string, c *Config) error {
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
		{EnvGuardHeadroom, &p.GuardHeadroom},
		{EnvLeaseDuration, &p.LeaseDuration},
		{EnvProbeTimeout, &c.ProbeTimeout},
		{EnvProviderCallTimeout, &c.ProviderCallTimeout},
	} {
		d, err := registry.Duration(get, o.name)
		if err != nil {
			return err
		}
		if d > 0 {
			*o.dst = d
		}
	}
	if least := lifecycle.MinLeaseDuration(c.ProviderCallTimeout); p.LeaseDuration < least {
		return fmt.Errorf("%s=%v is shorter than the longest operation holding a lease (%v: a %v request or a %s provider call and its settle write, plus %v): the sweep would reconcile operations still in flight; set at least %v",
			EnvLeaseDuration, p.LeaseDuration, least, lifecycle.MaxRequestDuration, EnvProviderCallTimeout, lifecycle.LeaseMargin, least)
	}
	if p.MinIdleTimeout > p.MaxIdleTimeout || p.DefaultIdleTimeout < p.MinIdleTimeout || p.DefaultIdleTimeout > p.MaxIdleTimeout {
		return fmt.Errorf("%s (%v) must lie between %s (%v) and %s (%v)",
			EnvIdleTimeout, p.DefaultIdleTimeout, EnvMinIdleTimeout, p.MinIdleTimeout, EnvMaxIdleTimeout, p.MaxIdleTimeout)
	}
	// Only a headroom set here is checked against the cap: the default one
	// under a long default idle timeout is capped as documented
	// (lifecycle.Policy.GuardRefreshInterval).
	if get(EnvGuardHeadroom) != "" {
		if err := p.CheckGuardHeadroom(); err != nil {
			return fmt.Errorf("%s: %w (with %s, %s, %s and %s)", EnvGuardHeadroom, err,
				EnvIdleTimeout, EnvActivityGranularity, EnvProviderGrace, EnvMaxProviderTimeout)
		}
	}
	return nil
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
// (the default first, each once), checked against adapters when given, and
// every adapter's settings, secret variables and call budget (all of them,
// enabled or not, so a mistake shows before the provider is enabled).
// Errors: an unknown name, readAdapters'.
func readProviders(get func(string) string, c *Config, adapters registry.Set) error {
	c.Provider, c.Providers = providerNames(get)
	if known := adapters.Names(); len(adapters) > 0 {
		if !slices.Contains(known, c.Provider) {
			return fmt.Errorf("%s=%q is not a provider: want one of %s", EnvProvider, c.Provider, strings.Join(known, ", "))
		}
		for _, name := range c.Providers {
			if !slices.Contains(known, name) {
				return fmt.Errorf("%s names %q, not a provider: want some of %s", EnvProviders, name, strings.Join(known, ", "))
			}
		}
	}
	return readAdapters(get, c, adapters)
}

// readAdapters reads every adapter's settings, secret variables and call
// budget into c. Errors: a secret given both as a value and as a secret
// name, an adapter's own (each names its variable).
func readAdapters(get func(string) string, c *Config, adapters registry.Set) error {
	for _, a := range adapters {
		settings, err := a.Read(get)
		if err != nil {
			return err
		}
		limit, err := registry.ReadCalls(a, get)
		if err != nil {
			return err
		}
		if c.Settings == nil {
			c.Settings, c.Secrets, c.CallLimits = map[string]any{}, map[string]string{}, map[string]calllimit.Limit{}
		}
		c.Settings[a.Name], c.CallLimits[a.Name] = settings, limit
		for _, s := range a.Secrets() {
			plain, name := get(s.Env), get(s.SecretEnv)
			if plain != "" && name != "" {
				return fmt.Errorf("set only one of %s and %s", s.Env, s.SecretEnv)
			}
			for k, v := range map[string]string{s.Env: plain, s.SecretEnv: name} {
				if v != "" {
					c.Secrets[k] = v
				}
			}
		}
	}
	return nil
}

// providerNames returns the default provider (DefaultProvider when unset)
// and every enabled one, the default first, each once, lowercase.
func providerNames(get func(string) string) (def string, all []string) {
	def = strings.ToLower(get(EnvProvider))
	if def == "" {
		def = DefaultProvider
	}
	all = []string{def}
	for _, name := range strings.Split(strings.ToLower(get(EnvProviders)), ",") {
		if name = strings.TrimSpace(name); name != "" && !slices.Contains(all, name) {
			all = append(all, name)
		}
	}
	return def, all
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

// readTiers reads the deployment's retention tiers (ParseTierAfter);
// unset leaves the level unset. Errors name the variable.
func readTiers(get func(string) string, c *Config) error {
	for _, o := range []struct {
		name string
		dst  **time.Duration
	}{{EnvArchiveAfter, &c.Tiers.ArchiveAfter}, {EnvDeleteAfter, &c.Tiers.DeleteAfter}} {
		d, err := ParseTierAfter(get(o.name))
		if err != nil {
			return fmt.Errorf("%s=%q: %w", o.name, get(o.name), err)
		}
		*o.dst = d
	}
	if err := lifecycle.ValidTiers(c.Tiers); err != nil {
		return fmt.Errorf("%s/%s: %w", EnvArchiveAfter, EnvDeleteAfter, err)
	}
	return nil
}

// ParseTierAfter reads one tier setting (SANDMAN_ARCHIVE_AFTER, `sandman
// apikey -archive-after`): a Go duration such as 648h, or "0"/"off" for
// never; "" is nil (not set at this level). It does not check the range
// (lifecycle.ValidTiers does). Errors: anything else.
func ParseTierAfter(v string) (*time.Duration, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return nil, nil
	}
	d := time.Duration(0)
	if v != "off" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			return nil, errors.New("want a duration such as 648h, or 0 (off) for never")
		}
	}
	return &d, nil
}
