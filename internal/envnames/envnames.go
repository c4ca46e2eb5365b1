// Package envnames is Sandman's environment contract: the name of every
// environment variable a function or the local stack reads, and the default
// names of the Secrets Manager secrets. The CDK stack (infra) sets the
// variables by these names and the readers (internal/app, internal/sweep,
// internal/localstack) read them by these names, so the two cannot drift;
// internal/app's tests tie them (every name here is read, every variable the
// stack sets is one of them). Standard library only: the CDK app imports it.
package envnames

// The functions' configuration (internal/app.ConfigFromEnv). Durations are
// Go durations ("90s", "10m", "24h").
const (
	Table          = "SANDMAN_TABLE"     // the sessions table; set by the stack
	DynamoEndpoint = "DYNAMODB_ENDPOINT" // DynamoDB Local's endpoint; unset in AWS
	// Provider names the sandbox provider: "e2b", "local" or "fake"; set by
	// the stack.
	Provider             = "SANDMAN_PROVIDER"
	ProviderAPIKey       = "SANDMAN_PROVIDER_API_KEY"        // the provider API key in plain text (local use)
	ProviderAPIKeySecret = "SANDMAN_PROVIDER_API_KEY_SECRET" // the secret holding it; set by the stack for provider functions
	WebhookSecret        = "SANDMAN_WEBHOOK_SECRET"          // the webhook signing secret in plain text (local use)
	WebhookSecretSecret  = "SANDMAN_WEBHOOK_SECRET_SECRET"   // the secret holding it; set by the stack for webhook
	E2BBaseURL           = "SANDMAN_E2B_BASE_URL"            // E2B's control API URL
	E2BDomain            = "SANDMAN_E2B_DOMAIN"              // E2B's sandbox domain
	LocalDir             = "SANDMAN_LOCAL_DIR"               // the local provider's state folder
	LocalWebhookURL      = "SANDMAN_LOCAL_WEBHOOK_URL"       // where the local provider sends webhooks
	EventBus             = "SANDMAN_EVENT_BUS"               // the lifecycle event bus; set by the stack
	EventsFile           = "SANDMAN_EVENTS_FILE"             // the local stack's JSON-lines events file
	CORSOrigin           = "SANDMAN_CORS_ORIGIN"             // Access-Control-Allow-Origin, default "*"
	LogLevel             = "SANDMAN_LOG_LEVEL"               // debug, info, warn or error

	IdleTimeout         = "SANDMAN_IDLE_TIMEOUT"         // lifecycle.Policy.DefaultIdleTimeout
	MinIdleTimeout      = "SANDMAN_MIN_IDLE_TIMEOUT"     // lifecycle.Policy.MinIdleTimeout
	MaxIdleTimeout      = "SANDMAN_MAX_IDLE_TIMEOUT"     // lifecycle.Policy.MaxIdleTimeout
	MaxLifetimeLimit    = "SANDMAN_MAX_LIFETIME_LIMIT"   // lifecycle.Policy.MaxLifetimeLimit
	ActivityGranularity = "SANDMAN_ACTIVITY_GRANULARITY" // lifecycle.Policy.ActivityGranularity
	ProviderGrace       = "SANDMAN_PROVIDER_GRACE"       // lifecycle.Policy.ProviderGrace
	MaxProviderTimeout  = "SANDMAN_MAX_PROVIDER_TIMEOUT" // lifecycle.Policy.MaxProviderTimeout
	LeaseDuration       = "SANDMAN_LEASE_DURATION"       // lifecycle.Policy.LeaseDuration

	Deployment          = "SANDMAN_DEPLOYMENT"            // tags every sandbox; default the table name
	APIKeyCacheTTL      = "SANDMAN_API_KEY_CACHE_TTL"     // apigw.KeyCache's TTL; "0" turns it off
	ProbeTimeout        = "SANDMAN_PROBE_TIMEOUT"         // reconnect's live probe
	ProviderCallTimeout = "SANDMAN_PROVIDER_CALL_TIMEOUT" // every other provider call, the sweep's included

	// ClientTokenKeysSecret names the Secrets Manager secret holding the
	// client-token key set (internal/clienttoken JSON); set by the stack for
	// the functions that mint or verify client tokens.
	ClientTokenKeysSecret = "SANDMAN_CLIENT_TOKEN_KEYS_SECRET"
	// ClientTokenKeysFile is the local key-set file, generated on first use
	// (clienttoken.LoadOrCreateFile); the local stack points it into its
	// state folder.
	ClientTokenKeysFile = "SANDMAN_CLIENT_TOKEN_KEYS_FILE"
	// WSURL is the client channel's WebSocket URL, named in client-token
	// answers ("ws_url").
	WSURL = "SANDMAN_WS_URL"
)

// The sweep's configuration (internal/sweep.ConfigFromEnv).
const (
	SweepConcurrency     = "SANDMAN_SWEEP_CONCURRENCY"
	SweepRate            = "SANDMAN_SWEEP_RATE"
	SweepBurst           = "SANDMAN_SWEEP_BURST"
	SweepPageSize        = "SANDMAN_SWEEP_PAGE_SIZE"
	SweepDeadlineMargin  = "SANDMAN_SWEEP_DEADLINE_MARGIN"
	SweepReconcileSample = "SANDMAN_SWEEP_RECONCILE_SAMPLE"
	SweepDormancyAge     = "SANDMAN_SWEEP_DORMANCY_AGE"
)

// The local stack's own variables (internal/localstack).
const (
	Addr          = "SANDMAN_ADDR"           // listen address
	SweepInterval = "SANDMAN_SWEEP_INTERVAL" // idle-pause schedule
	InMemory      = "SANDMAN_DDB_IN_MEMORY"  // "1": DynamoDB Local keeps nothing
	StateDir      = "SANDMAN_STATE_DIR"      // data, sandboxes, events, dev key
	DevAPIKey     = "SANDMAN_DEV_API_KEY"    // the dev account's key
)

// Default names of the Secrets Manager secrets the stack points the
// functions at (README, Deploy).
const (
	DefaultProviderAPIKeySecretName = "sandman/provider-api-key"
	DefaultWebhookSecretName        = "sandman/webhook-signing-key"
)

// Functions lists every variable the Lambda functions read (internal/app
// and internal/sweep); LocalStack the local stack's own.
var (
	Functions = []string{
		Table, DynamoEndpoint, Provider, ProviderAPIKey, ProviderAPIKeySecret, WebhookSecret, WebhookSecretSecret,
		E2BBaseURL, E2BDomain, LocalDir, LocalWebhookURL, EventBus, EventsFile, CORSOrigin, LogLevel,
		IdleTimeout, MinIdleTimeout, MaxIdleTimeout, MaxLifetimeLimit, ActivityGranularity, ProviderGrace,
		MaxProviderTimeout, LeaseDuration, Deployment, APIKeyCacheTTL, ProbeTimeout, ProviderCallTimeout,
		ClientTokenKeysSecret, ClientTokenKeysFile, WSURL,
		SweepConcurrency, SweepRate, SweepBurst, SweepPageSize, SweepDeadlineMargin, SweepReconcileSample, SweepDormancyAge,
	}
	LocalStack = []string{Addr, SweepInterval, InMemory, StateDir, DevAPIKey}
)
