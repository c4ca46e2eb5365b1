// Package envnames is Sandman's environment contract: the name of every
// environment variable a function or the local stack reads, and the default
// names of the Secrets Manager secrets. A provider adapter's own variables
// are not here: its package declares them (internal/provider/registry).
// The CDK stack (infra) sets the
// variables by these names and the readers (internal/app, internal/sweep,
// internal/localstack) read them by these names, so the two cannot drift;
// internal/app's tests tie them (every name here is read, every variable the
// stack sets is one of them). docs/CONFIGURATION.md documents each one,
// with its default and who reads it; this package's docs_test.go fails when
// a name the code reads is missing there. Standard library only: the CDK app
// imports it.
package envnames

// The functions' configuration (internal/app.ConfigFromEnv). Durations are
// Go durations ("90s", "10m", "24h").
const (
	Table          = "SANDMAN_TABLE"     // the sessions table; set by the stack
	DynamoEndpoint = "DYNAMODB_ENDPOINT" // DynamoDB Local's endpoint; unset in AWS
	// Provider names the default sandbox provider, the one a create that
	// names none uses, one of the adapters' names
	// (internal/provider/registry); set by the stack.
	Provider = "SANDMAN_PROVIDER"
	// Providers lists, comma-separated, every provider a create may name;
	// the default is always one of them. Unset: the default only. Set by the
	// stack.
	Providers = "SANDMAN_PROVIDERS"

	EventBus   = "SANDMAN_EVENT_BUS"   // the lifecycle event bus; set by the stack
	EventsFile = "SANDMAN_EVENTS_FILE" // the local stack's JSON-lines events file
	CORSOrigin = "SANDMAN_CORS_ORIGIN" // Access-Control-Allow-Origin, default "*"
	LogLevel   = "SANDMAN_LOG_LEVEL"   // debug, info, warn or error

	IdleTimeout         = "SANDMAN_IDLE_TIMEOUT"         // lifecycle.Policy.DefaultIdleTimeout
	MinIdleTimeout      = "SANDMAN_MIN_IDLE_TIMEOUT"     // lifecycle.Policy.MinIdleTimeout
	MaxIdleTimeout      = "SANDMAN_MAX_IDLE_TIMEOUT"     // lifecycle.Policy.MaxIdleTimeout
	MaxLifetimeLimit    = "SANDMAN_MAX_LIFETIME_LIMIT"   // lifecycle.Policy.MaxLifetimeLimit
	ActivityGranularity = "SANDMAN_ACTIVITY_GRANULARITY" // lifecycle.Policy.ActivityGranularity
	ProviderGrace       = "SANDMAN_PROVIDER_GRACE"       // lifecycle.Policy.ProviderGrace
	MaxProviderTimeout  = "SANDMAN_MAX_PROVIDER_TIMEOUT" // lifecycle.Policy.MaxProviderTimeout
	GuardHeadroom       = "SANDMAN_GUARD_HEADROOM"       // lifecycle.Policy.GuardHeadroom; set by the stack from sandman:guardHeadroom
	LeaseDuration       = "SANDMAN_LEASE_DURATION"       // lifecycle.Policy.LeaseDuration

	Deployment          = "SANDMAN_DEPLOYMENT"            // tags every sandbox; default the table name
	APIKeyCacheTTL      = "SANDMAN_API_KEY_CACHE_TTL"     // apigw.KeyCache's TTL; "0" turns it off
	ProbeTimeout        = "SANDMAN_PROBE_TIMEOUT"         // reconnect's live probe
	ProviderCallTimeout = "SANDMAN_PROVIDER_CALL_TIMEOUT" // every other provider call, the sweep's included

	// TimerQueueURL is the SQS queue pause timers are sent to
	// (internal/timer/sqstimer); set by the stack on the functions that arm
	// timers. Unset: no timers, the sweep alone pauses.
	TimerQueueURL = "SANDMAN_TIMER_QUEUE_URL"
	MaxRunning    = "SANDMAN_MAX_RUNNING" // lifecycle.Config.MaxRunning: running sandboxes per account, 0 = no limit
	// Shards is the due indexes' shard count (dynamo.Config.Shards);
	// default 8 (tabledef.Shards), the stack sets tabledef.DeployedShards.
	Shards = "SANDMAN_SHARDS"
	// EventRetentionDays is how many days a session's recorded events (its
	// timeline, GET /v1/sessions/{id}/events) are kept, 1..366
	// (dynamo.Config.EventRetention); default 30. Read by the publisher,
	// which writes the events' TTL.
	EventRetentionDays = "SANDMAN_EVENT_RETENTION_DAYS"
	// Governor turns the fleet's provider governor (internal/governor)
	// off ("off": each process keeps its own call limiter alone); default on.
	Governor = "SANDMAN_GOVERNOR"
	// GovernorFallback is the share of a provider's limit each process
	// allows itself while the governor's table is slow or down
	// (governor.Config.Fallback); default 0.1. Set by the stack from
	// sandman:governorFallback.
	GovernorFallback = "SANDMAN_GOVERNOR_FALLBACK"
	// GovernorShards spreads each provider's bucket over this many items
	// (governor.Config.Shards); default 1, the stack sets
	// sandman:governorShards (4).
	GovernorShards = "SANDMAN_GOVERNOR_SHARDS"
	// ArchiveAfter and DeleteAfter are the deployment's retention tiers
	// (lifecycle.Config.Tiers; docs/CHECKPOINTS.md "Retention tiers"):
	// how long after its pause a session is archived (only a checkpoint
	// kept) and deleted (its checkpoints too), Go durations such as 648h;
	// "0" or "off": never; unset: the provider's default (archive) and
	// never (delete). A create's archive_after_seconds and
	// delete_after_seconds override them.
	ArchiveAfter = "SANDMAN_ARCHIVE_AFTER"
	DeleteAfter  = "SANDMAN_DELETE_AFTER"
	// Prices are usage estimates' per-provider prices, a JSON object
	// {"<provider>":{"running_per_hour":N,"paused_per_hour":N}} in US
	// dollars per hour (lifecycle.Config.Prices, over the adapters' own
	// registry.Adapter.Price).
	Prices = "SANDMAN_PRICES"
	// TemplateApps gives templates a default app spec, a JSON object
	// {"<template>":{"port":3000,"start_command":"npm run dev",…}} with the
	// fields of POST /v1/sessions' "app" (docs/READINESS.md).
	TemplateApps = "SANDMAN_TEMPLATE_APPS"
	// IdlePolicy is the deployment's idle policy for creates that name
	// none: fixed (default) or learned (lifecycle.Config.IdlePolicy,
	// docs/COST.md "The learned idle policy").
	IdlePolicy = "SANDMAN_IDLE_POLICY"
	// IdleUserField is the session metadata field that names a session's
	// user for the learned idle policy's histograms (default "user"; "-":
	// keyed by account and template only).
	IdleUserField = "SANDMAN_IDLE_USER_FIELD"
	// Pools configures warm pools, a JSON array
	// [{"provider","template","app","size","tier","max_age_seconds"}]
	// (docs/POOLS.md); set by the stack from the context key sandman:pools
	// on the functions that create sessions, list pools or sweep.
	Pools = "SANDMAN_POOLS"
	// ReadinessQueueURL is the SQS queue readiness jobs are sent to
	// (internal/readiness/sqsjobs); set by the stack on the functions that
	// create or resume sessions. Unset: no readiness jobs in AWS.
	ReadinessQueueURL = "SANDMAN_READINESS_QUEUE_URL"
	// ResumeQueueURL is the SQS queue the jobs that finish a handed-off
	// resume (an open of the stable link, a return) are sent to, apart
	// from the app bring-ups (internal/readiness/sqsjobs, docs/WAKE.md
	// "The resume runs in the background"); set by the stack on the
	// functions that open, return or sweep. Unset: those jobs go to
	// ReadinessQueueURL.
	ResumeQueueURL = "SANDMAN_RESUME_QUEUE_URL"
	// CheckpointQueueURL is the SQS queue checkpoint jobs (saves,
	// restores, forks, deletes) are sent to
	// (internal/checkpoint/sqscheckpoint, docs/CHECKPOINTS.md "Jobs"); set
	// by the stack on the functions that ask for them. Unset: no
	// checkpoint jobs in AWS (the checkpoint routes answer unavailable).
	CheckpointQueueURL = "SANDMAN_CHECKPOINT_QUEUE_URL"
	// PoolRefillQueueURL is the FIFO SQS queue a claim of a warm pool's
	// spare sends its pool's refill request to (internal/sweep/sqsrefill,
	// docs/POOLS.md "Refill"); set by the stack on the sessions function
	// when pools are configured. Unset: pools refill on the sweep's runs
	// only (locally, in the background after each claim).
	PoolRefillQueueURL = "SANDMAN_POOL_REFILL_QUEUE_URL"
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
	// WSManagementURL is the WebSocket stage's callback URL,
	// https://{api-id}.execute-api.{region}.amazonaws.com/{stage}, the
	// endpoint of the API Gateway Management API pushes go through
	// (internal/channel/apigwmgmt); set by the stack on the channel and notifier
	// functions. Unset locally: the local gateway pushes itself.
	WSManagementURL = "SANDMAN_WS_MANAGEMENT_URL"
)

// The look of the stable link's pages (internal/linkpage, docs/WAKE.md
// "What a browser sees"), read by internal/app.ConfigFromEnv; the stack
// sets them on the resume function from its CDK context
// (sandman:brandName, sandman:brandAccent, sandman:brandLogoUrl).
const (
	// BrandName is shown beside the logo and in the pages' titles (at most
	// 60 characters); unset: none.
	BrandName = "SANDMAN_BRAND_NAME"
	// BrandAccent is the colour of buttons, links and progress, "#rgb" or
	// "#rrggbb", adjusted until it reads at 4.5:1; unset: #4f46e5.
	BrandAccent = "SANDMAN_BRAND_ACCENT"
	// BrandLogoURL is the logo's absolute http(s) URL, the pages' one
	// asset from elsewhere; unset: none.
	BrandLogoURL = "SANDMAN_BRAND_LOGO_URL"
)

// Outbound webhooks (internal/delivery, docs/WEBHOOKS.md), read by
// internal/app.ConfigFromEnv.
const (
	// WebhookRetrySchedule is the wait before each delivery attempt after
	// the previous one, comma-separated Go durations (default
	// "0s,5s,5m,30m,2h,5h,10h,10h"); tests shorten it.
	WebhookRetrySchedule = "SANDMAN_WEBHOOK_RETRY_SCHEDULE"
	// WebhookAllowPrivateTargets "true" allows http endpoints and
	// addresses that are not globally reachable (loopback, private,
	// link-local and the other special-purpose blocks; never the metadata
	// address). make run sets it unless the environment says otherwise;
	// the stack never does.
	WebhookAllowPrivateTargets = "SANDMAN_WEBHOOK_ALLOW_PRIVATE_TARGETS"
	// WebhookQueueURL is the SQS queue of delivery jobs (lifecycle events
	// from the bus, and attempts waiting for their time); set by the stack
	// on the deliver function and on the sessions function (replays).
	WebhookQueueURL = "SANDMAN_WEBHOOK_QUEUE_URL"
	// WebhookDLQURL is the dead-letter queue exhausted deliveries are
	// copied to (an alarm watches it); set by the stack on the deliver
	// function.
	WebhookDLQURL = "SANDMAN_WEBHOOK_DLQ_URL"
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

// Where Sandman keeps its archives of sessions' workspaces (docs/ARCHIVES.md),
// read by internal/archive.ConfigFromEnv (through internal/app's). The stack
// sets the bucket and its encryption on the functions that read or write
// archives.
const (
	// ArchiveBucket is the S3 bucket archives are kept in; set by the stack.
	// Unset: the folder store at ArchiveDir.
	ArchiveBucket = "SANDMAN_ARCHIVE_BUCKET"
	// ArchiveDir is the folder store's root when no bucket is set (default
	// ".sandman/archives").
	ArchiveDir = "SANDMAN_ARCHIVE_DIR"
	// ArchiveSSE is the server-side encryption every put asks S3 for:
	// "AES256" (the default, S3-managed keys) or "aws:kms".
	ArchiveSSE = "SANDMAN_ARCHIVE_SSE"
	// ArchiveKMSKeyID is the KMS key of "aws:kms" (an id, ARN or alias);
	// unset: the account's aws/s3 key.
	ArchiveKMSKeyID = "SANDMAN_ARCHIVE_KMS_KEY_ID"
	// ArchiveS3Endpoint is an S3-compatible endpoint such as moto's
	// (http://127.0.0.1:N); unset in AWS.
	ArchiveS3Endpoint = "SANDMAN_ARCHIVE_S3_ENDPOINT"
	// ArchiveS3PathStyle "true" addresses the bucket in the path
	// (endpoint/bucket/key) instead of the host name, as moto and other
	// local S3 servers need; default false, true when ArchiveS3Endpoint is
	// set.
	ArchiveS3PathStyle = "SANDMAN_ARCHIVE_S3_PATH_STYLE"
	// ArchiveAccess is what this function may do with archives: "readwrite"
	// (the default: save, open, delete; the checkpoint function), "read"
	// (open only; the sweep, which finishes a lost session's restore), or
	// "jobs" (none, but the deployment keeps archives through its
	// checkpoint jobs, so checkpoints of kind archive are chosen here).
	ArchiveAccess = "SANDMAN_ARCHIVE_ACCESS"
)

// The local stack's own variables (internal/localstack).
const (
	Addr          = "SANDMAN_ADDR"           // listen address
	SweepInterval = "SANDMAN_SWEEP_INTERVAL" // idle-pause schedule
	InMemory      = "SANDMAN_DDB_IN_MEMORY"  // "1": DynamoDB Local keeps nothing
	DDBPort       = "SANDMAN_DDB_PORT"       // DynamoDB Local's port; unset: a free one
	StateDir      = "SANDMAN_STATE_DIR"      // data, sandboxes, events, dev key
	DevAPIKey     = "SANDMAN_DEV_API_KEY"    // the dev account's key
)

// Functions lists every variable the Lambda functions read (internal/app
// and internal/sweep) besides the provider adapters' own
// (registry.Adapter.Vars); LocalStack the local stack's own.
var (
	Functions = []string{
		Table, DynamoEndpoint, Provider, Providers, EventBus, EventsFile, CORSOrigin, LogLevel,
		IdleTimeout, MinIdleTimeout, MaxIdleTimeout, MaxLifetimeLimit, ActivityGranularity, ProviderGrace,
		MaxProviderTimeout, GuardHeadroom, LeaseDuration, Deployment, APIKeyCacheTTL, ProbeTimeout, ProviderCallTimeout,
		MaxRunning, Shards, EventRetentionDays, Governor, GovernorFallback, GovernorShards, ArchiveAfter, DeleteAfter, Prices, TemplateApps, IdlePolicy, IdleUserField, Pools, ReadinessQueueURL, ResumeQueueURL, PoolRefillQueueURL, CheckpointQueueURL,
		ArchiveBucket, ArchiveDir, ArchiveSSE, ArchiveKMSKeyID, ArchiveS3Endpoint, ArchiveS3PathStyle, ArchiveAccess,
		ClientTokenKeysSecret, ClientTokenKeysFile, WSURL, WSManagementURL,
		BrandName, BrandAccent, BrandLogoURL,
		SweepConcurrency, SweepRate, SweepBurst, SweepPageSize, SweepDeadlineMargin, SweepReconcileSample, SweepDormancyAge,
		TimerQueueURL,
		WebhookRetrySchedule, WebhookAllowPrivateTargets, WebhookQueueURL, WebhookDLQURL,
	}
	LocalStack = []string{Addr, SweepInterval, InMemory, DDBPort, StateDir, DevAPIKey}
	// Archive lists the archive store's variables (internal/archive).
	Archive = []string{ArchiveBucket, ArchiveDir, ArchiveSSE, ArchiveKMSKeyID, ArchiveS3Endpoint, ArchiveS3PathStyle, ArchiveAccess}
)
