// Package infra is Sandman's AWS CDK stack: the sessions table, the seven
// Lambda functions, the HTTP API in front of them, the idle-pause schedule,
// the lifecycle event bus, the secrets the functions read, the alarms on
// all of it and a dashboard (dashboard.go) (docs/DESIGN.md).
//
// The table's keys, indexes and TTL attribute come from internal/dynamo/tabledef and
// the functions, routes and schedule from internal/routes, so the stack and
// the code that runs in it cannot drift. The CDK app that synthesizes the
// stack lives in infra/app; cdk.json at the repository root runs it, and
// scripts/cdk.sh installs the pinned CDK CLI that reads cdk.json.
//
// Synthesis needs Node.js (jsii runs the CDK in a Node child process) and the
// built function binaries (`make build`), but no AWS credentials.
package infra

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// Environment variables the stack sets on the functions, named once in
// internal/envnames (the functions read them there, once per cold start).
const (
	// EnvTable is the sessions table's name (every function).
	EnvTable = envnames.Table
	// EnvEventBus is the lifecycle event bus's name (every function; only
	// the publishers are allowed to PutEvents on it).
	EnvEventBus = envnames.EventBus
	// EnvProvider names the sandbox provider, e.g. "e2b" (every function).
	EnvProvider = envnames.Provider
	// EnvProviders lists the providers a create may name (every function).
	EnvProviders = envnames.Providers
	// EnvShards is the due indexes' shard count (every function).
	EnvShards = envnames.Shards
	// DefaultGovernorShards is SandmanStackProps.GovernorShards' default: at
	// E2B's 667 calls a second and 1.5 bucket updates a call, 4 items keep
	// each at 25 % of its 1,000 WCU/s (docs/CAPACITY.md).
	DefaultGovernorShards = 4
	// EnvGuardHeadroom is the provider guard's headroom (the functions that
	// call providers, when SandmanStackProps.GuardHeadroom is set).
	EnvGuardHeadroom = envnames.GuardHeadroom
	// EnvPools is the warm pools' configuration (the sessions and sweep
	// functions; docs/POOLS.md).
	EnvPools = envnames.Pools
)

// Defaults for the zero values of SandmanStackProps.
const (
	DefaultFunctionsDir = "build/lambda"
	DefaultProvider     = "e2b"
	// DefaultThrottleRateLimit is the default stage's steady-state limit in
	// requests per second, across all routes: 100,000 open tabs
	// heartbeating every 30 s over HTTP are 3,333 requests per second, plus
	// status reads and resumes (docs/CAPACITY.md "Stages"). API Gateway's
	// own account limit per region is 10,000 requests per second.
	DefaultThrottleRateLimit = 5000
	// DefaultThrottleBurstLimit is the default stage's burst, in requests:
	// two seconds of the rate limit (tabs reconnecting together after a
	// deploy or a network blip).
	DefaultThrottleBurstLimit = 10000
	// DefaultLogRetention applies to every function's and the API's logs.
	DefaultLogRetention = awslogs.RetentionDays_ONE_MONTH
)

// SandmanStackProps configures NewSandmanStack. Every zero value means the
// documented default, so &SandmanStackProps{} is a production stack.
type SandmanStackProps struct {
	awscdk.StackProps

	// FunctionsDir holds one subdirectory per function (routes.Functions),
	// each containing the `bootstrap` binary `make build` produces. Default
	// DefaultFunctionsDir, relative to the working directory.
	FunctionsDir string
	// Provider is the default sandbox provider: the one a create that names
	// none uses. Default "e2b".
	Provider string
	// Providers are the other providers a create may name, each one of
	// internal/provider.Lambda (e2b, daytona, vercel); another name (the
	// local provider, the fake) fails synthesis. Only the enabled
	// providers' secrets are read, each only by the functions that need it:
	// API keys and tokens by the functions that call providers, webhook
	// secrets (E2B, Daytona; Vercel sends none) by the webhook function.
	Providers []string
	// ProviderSettings are the providers' non-secret settings, by their
	// environment variable (registry.Adapter.Env, e.g.
	// SANDMAN_VERCEL_PROJECT_ID, which vercel requires), set on the
	// functions that call providers.
	ProviderSettings map[string]string
	// SecretNames name existing Secrets Manager secrets of the enabled
	// providers, by the variable the functions read the name from
	// (registry.Secret.SecretEnv, e.g. SANDMAN_PROVIDER_API_KEY_SECRET);
	// a secret not named here has its adapter's registry.Secret.DefaultName
	// (docs/DEPLOY.md). Each secret's CDK context key sets it too
	// (registry.Secret.ContextKey, e.g. sandman:providerApiKeySecretName).
	SecretNames map[string]string

	// CORSAllowOrigins are the origins browsers may call the API from.
	// Default ["*"]: the API authenticates with keys, not cookies. The rest
	// of the CORS configuration is internal/routes' (CORSAllowHeaders and
	// the like), shared with the functions and the local stack.
	CORSAllowOrigins []string
	// ThrottleRateLimit (requests per second) and ThrottleBurstLimit
	// (requests) limit the API's default stage. Defaults
	// DefaultThrottleRateLimit and DefaultThrottleBurstLimit.
	ThrottleRateLimit  float64
	ThrottleBurstLimit float64

	// Shards is how many partitions each due index of the table is spread
	// over (SANDMAN_SHARDS on every function; dynamo.Config.Shards).
	// Default tabledef.DeployedShards, sized by the capacity model for
	// 1,000,000 running sessions (docs/CAPACITY.md). Changing it on a table
	// with data needs `sandman reshard` (docs/CAPACITY.md "Changing the
	// shard count").
	Shards float64
	// GovernorShards is how many items each provider's bucket of the
	// fleet's governor is spread over (SANDMAN_GOVERNOR_SHARDS on the
	// functions that call providers; internal/governor Config.Shards).
	// Default DefaultGovernorShards, sized by the capacity model
	// (docs/CAPACITY.md "Fleet provider governor").
	GovernorShards float64
	// GuardHeadroom is how far past the pause deadline + grace the
	// provider's own timeout is set (SANDMAN_GUARD_HEADROOM on the functions
	// that call providers, the ones that create, resume and refresh;
	// lifecycle.Policy.GuardHeadroom): one provider call per headroom of a
	// session's activity, and a guard bound of grace + headroom + 30 s past
	// the idle timeout (docs/CAPACITY.md "Provider calls"). Default 0: the
	// functions' own default, lifecycle.DefaultGuardHeadroom. Synthesis fails
	// when it does not fit under the max provider timeout
	// (checkGuardHeadroom).
	GuardHeadroom time.Duration
	// Pools is the warm pools' configuration, SANDMAN_POOLS's JSON array
	// (docs/POOLS.md), set on the functions that create sessions and list
	// pools (sessions) and refill them (sweep); they validate it at
	// boot against the enabled providers. Default "": no pools.
	Pools string
	// PublisherParallelization is the stream event source's
	// ParallelizationFactor (1 to 10): concurrent batches per stream shard.
	// Lambda keeps records of one partition key (one session) in order
	// across them. Default DefaultPublisherParallelization.
	PublisherParallelization float64
	// EventRetentionDays is how many days sessions' recorded events (their
	// timelines, GET /v1/sessions/{id}/events) are kept:
	// SANDMAN_EVENT_RETENTION_DAYS on the publisher, which writes their
	// TTL. Default 0: unset, the functions' own 30 days.
	EventRetentionDays float64
	// KeepLegacyOwnerIndex keeps the first account index, by_owner
	// (projecting ALL: every session write also wrote it), beside the
	// keys-only one the code reads (tabledef.IndexByOwner). Set it for the
	// one deploy that adds the new index to a table that has the old one;
	// the next deploy without it drops the old one: CloudFormation creates or
	// deletes one index per table update (docs/CAPACITY.md "The by_owner
	// index"). Default false.
	KeepLegacyOwnerIndex bool
	// HoldBackIndexes names indexes of tabledef.Indexes this deploy leaves
	// out of the table: CloudFormation adds (or deletes) one index per
	// table update, so a stack two indexes behind deploys once holding the
	// newer one back and once without (docs/DEPLOY.md "Upgrading a deployed
	// table"). Default none.
	HoldBackIndexes []string

	// TableRemovalPolicy applies to the sessions table. Default RETAIN, so
	// deleting the stack never deletes sessions.
	TableRemovalPolicy awscdk.RemovalPolicy
	// DisableDeletionProtection turns off the table's deletion protection
	// (on by default), e.g. for a throwaway development stack.
	DisableDeletionProtection bool
	// DisablePointInTimeRecovery turns off the table's point-in-time
	// recovery (on by default).
	DisablePointInTimeRecovery bool
	// LogRetention is how long function and API logs are kept. Default
	// DefaultLogRetention.
	LogRetention awslogs.RetentionDays
	// PauserConcurrency is the timer queue event source's maximum
	// concurrency: at most this many timer invocations run at once, each
	// on a batch of up to timerBatchSize timers fired together
	// (sqstimer.DefaultConcurrency), so it bounds the rate of pause calls
	// the timers make to the provider (the 5-minute sweep is separate):
	// at most PauserConcurrency × timerBatchSize / pause time calls per
	// second. Lambda accepts 2 to 1000. Default DefaultPauserConcurrency.
	PauserConcurrency float64
	// ReadinessConcurrency is the readiness queue event source's maximum
	// concurrency: at most this many readiness jobs run at once (each
	// starts one command and probes one preview). Lambda accepts 2 to
	// 1000. Default DefaultReadinessConcurrency.
	ReadinessConcurrency float64
	// CheckpointConcurrency is the checkpoint queue event source's maximum
	// concurrency: at most this many checkpoint jobs (saves, restores,
	// forks, deletes) run at once. Lambda accepts 2 to 1000. Default
	// DefaultCheckpointConcurrency.
	CheckpointConcurrency float64
	// ArchiveEncryption is how the archive bucket encrypts its objects:
	// ArchiveEncryptionS3 (the default) or ArchiveEncryptionKMS (a key the
	// stack creates). Another value fails synthesis.
	ArchiveEncryption string
	// ArchiveExpirationDays is how many days after it was written the
	// archive bucket's lifecycle rule deletes an archive (1 to 3650).
	// Default DefaultArchiveExpirationDays.
	ArchiveExpirationDays float64

	// WebSocketAccessLogs says whether the WebSocket stage writes access
	// logs, which API Gateway allows only once the account has a CloudWatch
	// Logs role (an account-level, per-region setting; HTTP APIs need none):
	// WSAccessLogsOff (default ""), WSAccessLogsCreateRole or
	// WSAccessLogsAccountRole.
	WebSocketAccessLogs string
	// AlarmTopicArn, when set, is the SNS topic every alarm of the stack
	// notifies (alarm and OK). Default: alarms have no action.
	AlarmTopicArn string

	// BrandName, BrandAccent and BrandLogoURL are the look of the stable
	// link's pages (linkpage.ParseBrand; docs/WAKE.md "What a browser
	// sees"), set as SANDMAN_BRAND_* on the functions that serve them
	// (pageServers). Synthesis fails on a value ParseBrand refuses.
	// Default: the pages' default look.
	BrandName    string
	BrandAccent  string
	BrandLogoURL string
}

// DefaultPauserConcurrency is SandmanStackProps.PauserConcurrency's
// default, from docs/CAPACITY.md "Pauser": concurrency = ceil(pauses per
// second × pause time / batch) = ceil(333/s × 2 s / 10) = 67 at the target
// (100,000 pauses per 5 min, E2B's ~2 s pause), rounded up to 70, which
// caps the timers at 350 pause calls per second: about half of E2B's
// 20,000 calls per 30 s, the rest left to resumes, creates and refreshes.
const DefaultPauserConcurrency = 70

// DefaultPublisherParallelization is
// SandmanStackProps.PublisherParallelization's default: Lambda's maximum,
// 10 concurrent batches per stream shard (docs/CAPACITY.md "Publisher").
const DefaultPublisherParallelization = 10

// withDefaults returns a copy of p with every zero value replaced by its
// default. A nil p is all defaults.
func (p *SandmanStackProps) withDefaults() SandmanStackProps {
	var out SandmanStackProps
	if p != nil {
		out = *p
	}
	if out.FunctionsDir == "" {
		out.FunctionsDir = DefaultFunctionsDir
	}
	if out.Provider == "" {
		out.Provider = DefaultProvider
	}
	out.Providers = enabledProviders(out.Provider, out.Providers)
	if len(out.CORSAllowOrigins) == 0 {
		out.CORSAllowOrigins = []string{routes.CORSAnyOrigin}
	}
	if out.ThrottleRateLimit == 0 {
		out.ThrottleRateLimit = DefaultThrottleRateLimit
	}
	if out.ThrottleBurstLimit == 0 {
		out.ThrottleBurstLimit = DefaultThrottleBurstLimit
	}
	if out.TableRemovalPolicy == "" {
		out.TableRemovalPolicy = awscdk.RemovalPolicy_RETAIN
	}
	if out.LogRetention == "" {
		out.LogRetention = DefaultLogRetention
	}
	if out.PauserConcurrency == 0 {
		out.PauserConcurrency = DefaultPauserConcurrency
	}
	if out.Shards == 0 {
		out.Shards = tabledef.DeployedShards
	}
	if out.GovernorShards == 0 {
		out.GovernorShards = DefaultGovernorShards
	}
	if out.PublisherParallelization == 0 {
		out.PublisherParallelization = DefaultPublisherParallelization
	}
	if out.ReadinessConcurrency == 0 {
		out.ReadinessConcurrency = DefaultReadinessConcurrency
	}
	if out.CheckpointConcurrency == 0 {
		out.CheckpointConcurrency = DefaultCheckpointConcurrency
	}
	if out.ArchiveEncryption == "" {
		out.ArchiveEncryption = ArchiveEncryptionS3
	}
	if out.ArchiveExpirationDays == 0 {
		out.ArchiveExpirationDays = DefaultArchiveExpirationDays
	}
	return out
}

// BootstrapPath returns where the built binary of function name is expected:
// <dir>/<name>/bootstrap.
func BootstrapPath(dir, name string) string {
	return filepath.Join(dir, name, "bootstrap")
}

// CheckFunctionsDir reports the first function of routes.Functions whose
// bootstrap binary is missing from dir (or is not a regular file). Call it
// before NewSandmanStack: the CDK aborts synthesis on a missing asset with a
// less helpful message.
func CheckFunctionsDir(dir string) error {
	for _, name := range routes.Functions {
		path := BootstrapPath(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("function %s: %w (run `make build`)", name, err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("function %s: %s is not a regular file", name, path)
		}
	}
	return nil
}

// NewSandmanStack defines the whole Sandman deployment in one stack. props may
// be nil (all defaults). Its outputs are ApiUrl, WebhookUrl, WebSocketUrl,
// TableName, EventBusName, ArchiveBucketName and DashboardName.
//
// The function binaries are read from props.FunctionsDir at synthesis; see
// CheckFunctionsDir.
func NewSandmanStack(scope constructs.Construct, id string, props *SandmanStackProps) awscdk.Stack {
	p := props.withDefaults()
	stack := awscdk.NewStack(scope, jsii.String(id), &p.StackProps)
	if err := checkLease(p.ProviderSettings); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	if err := checkGuardHeadroom(p); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	if err := checkProviders(p.Providers); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	if err := checkArchive(p); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	if err := checkHoldBackIndexes(p.HoldBackIndexes); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	if _, err := brand(p); err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}

	table := newTable(stack, p)
	bus := awsevents.NewEventBus(stack, jsii.String("EventBus"), &awsevents.EventBusProps{
		Description: jsii.String("Sandman session lifecycle events (source \"sandman\")"),
	})
	secrets := newProviderSecrets(stack, p)
	timerQueue := newJobQueue(stack, timerQueueSpec)
	readinessQueue := newJobQueue(stack, readinessQueueSpec)
	resumeQueue := newJobQueue(stack, resumeQueueSpec)
	checkpointQueue := newJobQueue(stack, checkpointQueueSpec)
	archives := newArchiveBucket(stack, p)

	functions := make(map[string]awslambda.Function, len(functionSpecs))
	for _, spec := range functionSpecs {
		fn := newFunction(stack, spec, p, table, bus)
		grant(spec, fn, table, bus, secrets)
		if slices.Contains(timerArmers, spec.name) {
			timerQueue.grantSend(fn, envnames.TimerQueueURL)
		}
		if slices.Contains(readinessArmers, spec.name) {
			readinessQueue.grantSend(fn, envnames.ReadinessQueueURL)
		}
		if slices.Contains(resumeSenders, spec.name) {
			resumeQueue.grantSend(fn, envnames.ResumeQueueURL)
		}
		if slices.Contains(checkpointSenders, spec.name) {
			checkpointQueue.grantSend(fn, envnames.CheckpointQueueURL)
		}
		if access := archiveAccess(spec.name); access != "" {
			archives.grant(fn, access)
		}
		functions[spec.name] = fn
	}
	for _, name := range routes.Functions {
		if _, ok := functions[name]; !ok {
			awscdk.Annotations_Of(stack).AddError(jsii.String(fmt.Sprintf("infra: function %s of routes.Functions has no functionSpec", name)))
		}
		if _, ok := functionConstructIDs[name]; !ok {
			awscdk.Annotations_Of(stack).AddError(jsii.String(fmt.Sprintf("infra: function %s of routes.Functions has no pinned construct id in functionConstructIDs", name)))
		}
	}

	stage := newHTTPAPI(stack, p, functions)
	dlq := newSchedule(stack, functions[routes.Sweep])
	newAlarms(stack, functions, dlq)
	newOutbox(stack, functions[routes.Publisher], table, p.PublisherParallelization)
	timerQueue.feed(stack, functions[routes.Timer], timerBatchSize, p.PauserConcurrency)
	readinessQueue.feed(stack, functions[routes.Readiness], readinessBatchSize, p.ReadinessConcurrency)
	resumeQueue.feed(stack, functions[routes.Readiness], resumeBatchSize, resumeConcurrency)
	checkpointQueue.feed(stack, functions[routes.Checkpoint], checkpointBatchSize, p.CheckpointConcurrency)
	if hasPools(p) {
		// A claim asks for its pool's refill at once (docs/POOLS.md "Refill").
		refills := newJobQueue(stack, poolRefillQueueSpec)
		refills.grantSend(functions[routes.Sessions], envnames.PoolRefillQueueURL)
		refills.feed(stack, functions[routes.Sweep], poolRefillBatchSize, poolRefillConcurrency)
	}
	wsStage := newClientChannel(stack, p, functions, bus)
	newWebhooks(stack, functions, bus)
	newErrorLogFilters(stack, functions)
	newServiceAlarms(stack, table, stage, wsStage)
	dashboard := newDashboard(stack, functions, breakPoints(p)) // after every alarm: it shows them all
	wireAlarmTopic(stack, p.AlarmTopicArn)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("Base URL of the HTTP API (routes start with /v1)"),
		Value:       stage.Url(),
	})
	// The exact URL to register with the provider (stage.Url() ends in "/").
	awscdk.NewCfnOutput(stack, jsii.String("WebhookUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("URL to register as the provider's webhook (" + p.Provider + ")"),
		Value:       awscdk.Fn_Join(jsii.String(""), jsii.Strings(*stage.Url(), "v1/webhooks/"+p.Provider)),
	})
	awscdk.NewCfnOutput(stack, jsii.String("WebSocketUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("URL of the client channel (WebSocket API); client-token answers carry it as ws_url"),
		Value:       wsStage.Url(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Name of the sessions table"),
		Value:       table.TableName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Name of the lifecycle event bus"),
		Value:       bus.EventBusName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveBucketName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Name of the bucket of workspace archives (checkpoints of kind archive)"),
		Value:       archives.bucket.BucketName(),
	})
	awscdk.NewCfnOutput(stack, jsii.String("DashboardName"), &awscdk.CfnOutputProps{
		Description: jsii.String("Name of the CloudWatch dashboard (metrics in namespace Sandman, every alarm)"),
		Value:       dashboard.DashboardName(),
	})
	return stack
}

// newTable creates the sessions table exactly as internal/dynamo/tabledef describes
// it. An attribute type tabledef uses but this function does not know fails
// synthesis with an error annotation.
func newTable(stack awscdk.Stack, p SandmanStackProps) awsdynamodb.Table {
	table := awsdynamodb.NewTable(stack, jsii.String("SessionsTable"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(tabledef.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(tabledef.SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(tabledef.TTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(!p.DisablePointInTimeRecovery),
		},
		DeletionProtection: jsii.Bool(!p.DisableDeletionProtection),
		RemovalPolicy:      p.TableRemovalPolicy,
		// The outbox: the publisher function reads every write's old and
		// new image (docs/DESIGN.md "Events out").
		Stream: awsdynamodb.StreamViewType(tabledef.StreamViewType),
	})
	var indexes []tabledef.Index
	for _, ix := range tabledef.Indexes {
		if !slices.Contains(p.HoldBackIndexes, ix.Name) {
			indexes = append(indexes, ix)
		}
	}
	if p.KeepLegacyOwnerIndex {
		indexes = append(indexes, tabledef.LegacyOwnerIndex)
	}
	for _, ix := range indexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   attribute(stack, ix.PartitionKey, ix.PartitionType),
			ProjectionType: awsdynamodb.ProjectionType(ix.ProjectionType()),
		}
		if len(ix.NonKeyAttributes) > 0 {
			gsi.NonKeyAttributes = jsii.Strings(ix.NonKeyAttributes...)
		}
		if ix.SortKey != "" {
			gsi.SortKey = attribute(stack, ix.SortKey, ix.SortType)
		}
		table.AddGlobalSecondaryIndex(gsi)
	}
	return table
}

// checkHoldBackIndexes reports a held-back index that is not one of
// tabledef.Indexes.
func checkHoldBackIndexes(names []string) error {
	for _, name := range names {
		if !slices.ContainsFunc(tabledef.Indexes, func(ix tabledef.Index) bool { return ix.Name == name }) {
			return fmt.Errorf("infra: held-back index %q is not an index of the sessions table", name)
		}
	}
	return nil
}

// attribute maps a tabledef attribute to its CDK form.
func attribute(stack awscdk.Stack, name, typ string) *awsdynamodb.Attribute {
	a := &awsdynamodb.Attribute{Name: jsii.String(name)}
	switch typ {
	case tabledef.TypeString:
		a.Type = awsdynamodb.AttributeType_STRING
	case tabledef.TypeNumber:
		a.Type = awsdynamodb.AttributeType_NUMBER
	default:
		awscdk.Annotations_Of(stack).AddError(jsii.String(fmt.Sprintf("tabledef: attribute %s has unknown type %q", name, typ)))
		a.Type = awsdynamodb.AttributeType_STRING
	}
	return a
}

// Table actions, exactly the calls internal/dynamo makes (least
// privilege for real). The store writes whole items with PutItem; a session
// write that takes or releases a running slot is a TransactWriteItems of
// that Put and an Update of the account's slot counter (internal/dynamo
// quota.go), which IAM authorises as PutItem and UpdateItem. The list reads
// a page's sessions with BatchGetItem. It never calls Scan on the table or
// reads the table's stream.
const (
	actionGetItem    = "dynamodb:GetItem"      // GetSession, GetAPIKey
	actionPutItem    = "dynamodb:PutItem"      // CreateSession, UpdateSession, Claim
	actionDeleteItem = "dynamodb:DeleteItem"   // ReleaseClaim (an Idempotency-Key given back)
	actionUpdateItem = "dynamodb:UpdateItem"   // the running-slot counter, inside a session write's transaction
	actionQuery      = "dynamodb:Query"        // ListSessions, FindBySandbox, FindDue on indexes; UsageRows, SessionEvents on the table
	actionBatchGet   = "dynamodb:BatchGetItem" // ListSessions: the page's sessions, after the keys-only by_owner_keys index
)

// tableAccess is what one function may do with the sessions table: item
// actions on the table, and Query on the named indexes only.
type tableAccess struct {
	actions []string
	indexes []string
	// queryKeys, when set, bounds Query on the table itself (not on an
	// index) to partition keys matching these patterns (the
	// dynamodb:LeadingKeys condition), so the function cannot read other
	// rows (API keys, claims) by Query.
	queryKeys []string
	// scanIndexes are indexes the function may Scan (sparse ones only).
	scanIndexes []string
}

// runningSlotSettings are the ProviderSettings that govern the running-slot
// counter: every function that writes sessions must see the same values, or
// the counter drifts (a function without SANDMAN_MAX_RUNNING keeps no
// counter at all, so its pauses, resumes and kills skip it).
var runningSlotSettings = []string{envnames.MaxRunning}

// functionSpec is one function's settings and grants.
type functionSpec struct {
	name        string
	description string
	// timeout is the Lambda timeout. API functions stay under API Gateway's
	// 30 s integration limit so they never work on after the client got a
	// 503.
	timeout time.Duration
	// memoryMB is the Lambda memory size in MB (CPU scales with it).
	memoryMB float64
	// table lists the table actions and indexes the function's code calls
	// (read from the store calls each handler reaches); none for the
	// publisher, whose stream read the event source mapping grants.
	table tableAccess
	// publishes is true for the function that publishes lifecycle
	// transitions (PutEvents on the bus): only the stream's publisher; the
	// others write the table and publish nothing.
	publishes bool
	// providerKey and webhookKey say which secret the function may read.
	providerKey bool
	webhookKey  bool
	// reservedConcurrency caps concurrent executions; 0 means unreserved.
	reservedConcurrency float64
	// writesSessions: the function writes sessions, so the running-slot
	// settings (runningSlotSettings) reach it whether or not it holds the
	// provider key: a write that moves a session between running and not
	// running must move the counter, and a store that keeps no counter
	// refuses any write of a session that carries a running limit.
	writesSessions bool
	// pools: the function claims, lists or refills warm pools, so it gets
	// SandmanStackProps.Pools (SANDMAN_POOLS).
	pools bool
}

// functionSpecs lists every function of routes.Functions, in that order.
//
// Timeouts, chosen here (docs/DESIGN.md is silent). An HTTP function's request
// budget is httpapi.RequestBudget: at most 29 s, and it keeps a settle reserve
// (lifecycle.SettleReserve, 12 s) before the Lambda deadline (half the time left when less than
// 24 s remain) to record the outcome and answer, so a Lambda timeout T
// leaves a request min(29 s, T - 12 s) when T >= 24 s, else T/2:
//   - status: 10 s (database only, a few single-item operations: 5 s of
//     request);
//   - webhook: 15 s (database only, like status, but each event is a few
//     reads and conditional writes: 7.5 s of request, room for the SDK's
//     retries under throttling, where 10 s left 5 s);
//   - sessions, resume, pause, reconnect: 29 s, just under API Gateway's
//     30 s integration timeout, for 17 s of request (resume makes two
//     provider attempts with backoff; reconnect's live probe takes up to its
//     15 s default, which a shorter timeout would cut);
//   - sweep: 4 min 50 s, so a run ends before the next rate(5 minutes)
//     tick; the sweeper stops before its deadline and leaves the rest for the
//     next run;
//   - publisher: 1 min: a batch of streamBatchSize records is one usage
//     transaction per record, 10 sessions at a time, and streamBatchSize/10
//     PutEvents calls (up to one per record when one session fills the
//     batch: a call holds one event of a session), each with the SDK's and
//     the publisher's bounded retries (a few seconds at worst);
//   - timer: 1 min: a batch of timerBatchSize timers fired one after
//     another, each at most one provider pause (a few seconds) and two
//     conditional writes; a timer the batch did not reach is delivered
//     again after the queue's visibility timeout.
var functionSpecs = []functionSpec{
	{name: routes.Sessions, description: "Sandman sessions API: create, list, get, heartbeat, delete",
		timeout: 29 * time.Second, memoryMB: 256, providerKey: true,
		// auth and get: GetItem; create, heartbeat, delete: PutItem (and
		// UpdateItem for the running-slot counter); a failed
		// create gives its Idempotency-Key back: DeleteItem; list: the
		// by_owner_keys index (a filtered list: by_owner_state), then
		// BatchGetItem of the page's sessions; usage rows, diagnose's
		// recent events and the timeline: Query on the table.
		// The table Query is bounded to those partitions (LeadingKeys):
		// ACCOUNT#<account> (usage rows), SESSION#<id> (events), and the
		// outbound webhooks' WHEP#<account> (endpoints) and WHDLV#<endpoint>
		// (deliveries) and a warm pool's spares, POOL#<pool id> (a claim
		// lists them, then deletes one in the session's transaction), never
		// API keys or Idempotency-Key claims (internal/dynamo's and
		// internal/delivery/dynamostore's prefixes).
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem, actionDeleteItem, actionQuery, actionBatchGet}, indexes: []string{tabledef.IndexByOwner, tabledef.IndexByOwnerState},
			queryKeys: []string{"ACCOUNT#*", "SESSION#*", "WHEP#*", "WHDLV#*", "POOL#*"}},
		writesSessions: true, pools: true},
	{name: routes.Status, description: "Sandman session status (database only)",
		timeout: 10 * time.Second, memoryMB: 128,
		table: tableAccess{actions: []string{actionGetItem}}},
	{name: routes.Resume, description: "Sandman resume a paused session",
		timeout: 29 * time.Second, memoryMB: 256, providerKey: true, writesSessions: true,
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem}}},
	{name: routes.Pause, description: "Sandman pause now (idempotent)",
		timeout: 29 * time.Second, memoryMB: 256, providerKey: true, writesSessions: true,
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem}}},
	{name: routes.Reconnect, description: "Sandman reconnect probe",
		timeout: 29 * time.Second, memoryMB: 256, providerKey: true, writesSessions: true,
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem}}},
	{name: routes.Webhook, description: "Sandman provider webhook receiver",
		timeout: 15 * time.Second, memoryMB: 256, webhookKey: true, writesSessions: true,
		// the session by sandbox (by_sandbox), then PutItem for the update
		// and the dedupe claim; UpdateItem for the running-slot counter,
		// which a webhook's pause, resume or kill moves in one transaction
		// with its put (used whenever SANDMAN_MAX_RUNNING is set); no
		// GetItem, no DeleteItem.
		table: tableAccess{actions: []string{actionPutItem, actionUpdateItem}, indexes: []string{tabledef.IndexBySandbox}}},
	{name: routes.Sweep, description: "Sandman sweep: scheduled idle pause and reconciler",
		timeout: 4*time.Minute + 50*time.Second, memoryMB: 512, providerKey: true,
		// due sessions (idle, lease, paused), listed sandboxes (by_sandbox),
		// re-reads (GetItem) and transitions (PutItem). No reserved
		// concurrency: it fails stack creation on accounts at the
		// new-account concurrency quota, and the sweep is safe under overlap
		// (every write conditional, docs/DESIGN.md "Idle pause").
		// Connections that lost their socket (internal/channel Reaper): a
		// Scan of the sparse by_conn_session index, DeleteItem, and the
		// session's remaining connections by Query on that index. Warm
		// pools (docs/POOLS.md): a pool's spares by Query on the table,
		// bounded to POOL#<pool id> (LeadingKeys), spares written and
		// dropped (PutItem, DeleteItem), counters (UpdateItem).
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem, actionDeleteItem, actionQuery},
			indexes:     []string{tabledef.IndexIdle, tabledef.IndexLease, tabledef.IndexPaused, tabledef.IndexBySandbox, tabledef.IndexByConnSession},
			scanIndexes: []string{tabledef.IndexByConnSession}, queryKeys: []string{"POOL#*"}},
		writesSessions: true, pools: true},
	{name: routes.Publisher, description: "Sandman lifecycle event publisher (table stream to EventBridge)",
		timeout: time.Minute, memoryMB: 128, publishes: true,
		// RecordTransition's TransactWriteItems (internal/dynamo usage.go):
		// the usage marker and counters (UpdateItem) and the event (PutItem).
		table: tableAccess{actions: []string{actionPutItem, actionUpdateItem}}},
	{name: routes.Timer, description: "Sandman pause timers (timer queue to the provider)",
		timeout: pauserTimeout, memoryMB: 256, providerKey: true,
		// FireTimer: the session (GetItem), then PauseIfDue's conditional
		// transitions (PutItem; UpdateItem for main's running-slot counter,
		// which a pause releases in one transaction with the put, like
		// the sweep's) or a re-armed timer; no index, no delete. The
		// queue's consume actions come from its event source mapping.
		table:          tableAccess{actions: []string{actionGetItem, actionPutItem, "dynamodb:UpdateItem"}},
		writesSessions: true},
	{name: routes.Readiness, description: "Sandman readiness jobs (readiness queue: start the app, probe its preview)",
		timeout: readinessTimeout, memoryMB: 256, providerKey: true,
		// BringUp: the session (GetItem) and the conditional readiness
		// write (PutItem; UpdateItem for the running-slot counter's
		// transaction, like the timer's). The queue's consume actions
		// come from its event source mapping.
		table:          tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem}},
		writesSessions: true},
	// channel: 29 s like the API functions ($default's resume calls the
	// provider; API Gateway's WebSocket integration timeout is 29 s too).
	{name: routes.Channel, description: "Sandman client channel: WebSocket $connect, $disconnect, $default",
		timeout: 29 * time.Second, memoryMB: 256, providerKey: true,
		// connections: PutItem, GetItem, DeleteItem, Query by_conn_session;
		// sessions: GetItem, PutItem (heartbeat, presence, resume) and
		// UpdateItem (a resume's running slot).
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem, actionDeleteItem},
			indexes: []string{tabledef.IndexByConnSession}},
		writesSessions: true},
	// notifier: 30 s, a session's connections pushed one after another, each
	// push bounded by apigwmgmt.DefaultTimeout.
	{name: routes.Notifier, description: "Sandman client channel notifier (lifecycle events to WebSocket pushes)",
		timeout: 30 * time.Second, memoryMB: 128,
		// the session (GetItem), its connections (by_conn_session), gone
		// ones deleted (DeleteItem) and, after a 410, the session's
		// presence recomputed (PutItem: a presence write moves no running
		// slot, so no UpdateItem).
		table:          tableAccess{actions: []string{actionGetItem, actionPutItem, actionDeleteItem}, indexes: []string{tabledef.IndexByConnSession}},
		writesSessions: true},
	// deliver: 1 min (deliverTimeout in webhooks.go); no provider, no
	// secret. An account's endpoints and an endpoint's parked deliveries:
	// Query on the table, bounded to their partitions (WHEP#<account>,
	// WHPARK#<endpoint>, LeadingKeys); a delivery, its endpoint and the
	// endpoint's watch: GetItem; deliveries created and updated, an
	// endpoint's health, a parking and a watch: PutItem (conditional); a
	// parking claimed by a wake: UpdateItem; a parking woken and a watch
	// ended: DeleteItem (internal/delivery/dynamostore park.go). No index.
	{name: routes.Deliver, description: "Sandman outbound webhooks (lifecycle events to the accounts' endpoints)",
		timeout: deliverTimeout, memoryMB: 256,
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem, actionDeleteItem, actionQuery},
			queryKeys: []string{"WHEP#*", "WHPARK#*"}}},
	// checkpoint: checkpointTimeout and checkpointMemoryMB
	// (checkpoints.go): a job may stream a workspace archive.
	{name: routes.Checkpoint, description: "Sandman checkpoint jobs (checkpoint queue: save, restore, fork, delete)",
		timeout: checkpointTimeout, memoryMB: checkpointMemoryMB, providerKey: true, writesSessions: true,
		// RunCheckpointJob: the session and its checkpoint (GetItem), their
		// conditional writes (PutItem; UpdateItem for the running-slot
		// counter of a restore's or a fork's session), a deleted
		// checkpoint's item (DeleteItem), and a session's checkpoints by
		// Query on the table bounded to its partition, SESSION#<id>
		// (LeadingKeys: the automatic ones past checkpoints_keep).
		table: tableAccess{actions: []string{actionGetItem, actionPutItem, actionUpdateItem, actionDeleteItem, actionQuery},
			queryKeys: []string{"SESSION#*"}}},
}

// functionConstructIDs pins each function's construct id: the prefix of
// the logical ids of the function and of everything built for it (its role
// and policy, log group, alarms, error-log filter, API integration, event
// sources and invoke permissions). CloudFormation replaces a resource whose
// logical id changes, dropping a log group's logs with it, so a function
// keeps the id it was first deployed under whatever routes and functions/
// call it now. Three were renamed for what they run: pause (deployed as
// snapshot), sweep (idlepause) and timer (pauser). A new function adds its
// row; NewSandmanStack refuses a function without one.
var functionConstructIDs = map[string]string{
	routes.Sessions:   "SessionsFunction",
	routes.Status:     "StatusFunction",
	routes.Resume:     "ResumeFunction",
	routes.Pause:      "SnapshotFunction",
	routes.Reconnect:  "ReconnectFunction",
	routes.Webhook:    "WebhookFunction",
	routes.Sweep:      "IdlepauseFunction",
	routes.Publisher:  "PublisherFunction",
	routes.Timer:      "PauserFunction",
	routes.Readiness:  "ReadinessFunction",
	routes.Channel:    "ChannelFunction",
	routes.Notifier:   "NotifierFunction",
	routes.Deliver:    "DeliverFunction",
	routes.Checkpoint: "CheckpointFunction",
}

// constructID returns the construct id of function name's resources
// (functionConstructIDs), e.g. "IdlepauseFunction" for the sweep; an
// unpinned name gets "<Name>Function", which NewSandmanStack reports as an
// error.
func constructID(name string) string {
	if id, ok := functionConstructIDs[name]; ok {
		return id
	}
	return strings.ToUpper(name[:1]) + name[1:] + "Function"
}

// newFunction creates one function with its own role, log group and
// environment. The role starts empty: grant adds what the function needs.
func newFunction(stack awscdk.Stack, spec functionSpec, p SandmanStackProps, table awsdynamodb.Table, bus awsevents.EventBus) awslambda.Function {
	id := constructID(spec.name)
	role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Execution role of the Sandman " + spec.name + " function"),
	})
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention,
	})
	logs.GrantWrite(role)
	suppressFunctionRole(role)

	env := map[string]*string{
		EnvTable:    table.TableName(),
		EnvEventBus: bus.EventBusName(),
		EnvProvider: jsii.String(p.Provider),
		EnvShards:   jsii.String(strconv.Itoa(int(p.Shards))),
	}
	if len(p.Providers) > 1 {
		env[EnvProviders] = jsii.String(strings.Join(p.Providers[1:], ","))
	}
	if spec.providerKey {
		for k, v := range p.ProviderSettings {
			env[k] = jsii.String(v)
		}
		if p.GuardHeadroom > 0 {
			env[EnvGuardHeadroom] = jsii.String(p.GuardHeadroom.String())
		}
		env[envnames.GovernorShards] = jsii.String(strconv.Itoa(int(p.GovernorShards)))
	}
	if spec.pools && p.Pools != "" {
		env[EnvPools] = jsii.String(p.Pools)
	}
	if slices.Contains(pageServers, spec.name) {
		for k, v := range brandEnv(p) {
			env[k] = jsii.String(v)
		}
	}
	if spec.name == routes.Publisher && p.EventRetentionDays > 0 {
		env[envnames.EventRetentionDays] = jsii.String(strconv.Itoa(int(p.EventRetentionDays)))
	}
	if spec.writesSessions {
		for _, k := range runningSlotSettings {
			if v, ok := p.ProviderSettings[k]; ok {
				env[k] = jsii.String(v)
			}
		}
	}

	fp := &awslambda.FunctionProps{
		Description:           jsii.String(spec.description),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          awslambda.Architecture_ARM_64(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(filepath.Join(p.FunctionsDir, spec.name)), nil),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(spec.timeout.Seconds())),
		MemorySize:            jsii.Number(spec.memoryMB),
		Role:                  role,
		LogGroup:              logs,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_INFO, // keeps START/REPORT (duration, memory, init)
		Tracing:               awslambda.Tracing_ACTIVE,
		Environment:           &env,
	}
	if spec.reservedConcurrency > 0 {
		fp.ReservedConcurrentExecutions = jsii.Number(spec.reservedConcurrency)
	}
	return awslambda.NewFunction(stack, jsii.String(id), fp)
}

// grant gives fn exactly the access spec lists, and points it at the
// secrets it may read.
func grant(spec functionSpec, fn awslambda.Function, table awsdynamodb.Table, bus awsevents.EventBus, secrets providerSecrets) {
	actions := spec.table.actions
	if len(spec.table.queryKeys) > 0 && slices.Contains(actions, actionQuery) {
		actions = slices.DeleteFunc(slices.Clone(actions), func(a string) bool { return a == actionQuery })
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(actionQuery),
			Resources: jsii.Strings(*table.TableArn()),
			Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
				"dynamodb:LeadingKeys": spec.table.queryKeys}},
		}))
	}
	if len(actions) > 0 {
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(actions...),
			Resources: jsii.Strings(*table.TableArn()),
		}))
	}
	if len(spec.table.scanIndexes) > 0 {
		arns := make([]string, len(spec.table.scanIndexes))
		for i, ix := range spec.table.scanIndexes {
			arns[i] = *table.TableArn() + "/index/" + ix
		}
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:Scan"),
			Resources: jsii.Strings(arns...),
		}))
	}
	if len(spec.table.indexes) > 0 {
		arns := make([]string, len(spec.table.indexes))
		for i, ix := range spec.table.indexes {
			arns[i] = *table.TableArn() + "/index/" + ix
		}
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(actionQuery),
			Resources: jsii.Strings(arns...),
		}))
	}
	if spec.publishes {
		bus.GrantPutEventsTo(fn, nil)
	}
	for _, s := range secrets.of(spec) {
		fn.AddEnvironment(jsii.String(s.env), jsii.String(s.name), nil)
		grantSecretValue(fn, s.secret)
	}
}

// accessLogFormat is the API's access log line: one JSON object of HTTP API
// context variables ($context.* as API Gateway documents them for HTTP APIs).
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"userAgent":"$context.identity.userAgent","requestTime":"$context.requestTime",` +
	`"requestTimeEpoch":"$context.requestTimeEpoch","httpMethod":"$context.httpMethod",` +
	`"routeKey":"$context.routeKey","path":"$context.path","status":"$context.status",` +
	`"protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"responseLatency":"$context.responseLatency","integrationLatency":"$context.integrationLatency",` +
	`"integrationStatus":"$context.integrationStatus","integrationError":"$context.integrationErrorMessage",` +
	`"errorMessage":"$context.error.message"}`

// accessLogSettings implements awsapigatewayv2.IAccessLogSettings.
type accessLogSettings struct {
	destination awsapigatewayv2.IAccessLogDestination
	format      awsapigateway.AccessLogFormat
}

var _ awsapigatewayv2.IAccessLogSettings = (*accessLogSettings)(nil)

// Destination returns where access logs go.
func (s *accessLogSettings) Destination() awsapigatewayv2.IAccessLogDestination { return s.destination }

// Format returns the access log line format.
func (s *accessLogSettings) Format() awsapigateway.AccessLogFormat { return s.format }

// newHTTPAPI creates the HTTP API with every route of routes.Table, each to
// its function through a payload v2 Lambda integration, and its $default
// stage with throttling and JSON access logs. It returns the stage.
func newHTTPAPI(stack awscdk.Stack, p SandmanStackProps, functions map[string]awslambda.Function) awsapigatewayv2.HttpStage {
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("Sandman control plane API"),
		CreateDefaultStage: jsii.Bool(false),
		// API Gateway answers preflights itself and replaces the functions'
		// CORS headers with these (internal/routes' one configuration).
		CorsPreflight: &awsapigatewayv2.CorsPreflightOptions{
			AllowOrigins:  jsii.Strings(p.CORSAllowOrigins...),
			AllowHeaders:  jsii.Strings(routes.CORSAllowHeaders...),
			AllowMethods:  corsMethods(),
			ExposeHeaders: jsii.Strings(routes.CORSExposeHeaders...),
			MaxAge:        awscdk.Duration_Seconds(jsii.Number(routes.CORSMaxAgeSeconds)),
		},
	})

	accessLogs := awslogs.NewLogGroup(stack, jsii.String("HttpApiAccessLogs"), &awslogs.LogGroupProps{
		Retention: p.LogRetention,
	})
	stage := awsapigatewayv2.NewHttpStage(stack, jsii.String("HttpApiDefaultStage"), &awsapigatewayv2.HttpStageProps{
		HttpApi:    api,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(p.ThrottleRateLimit),
			BurstLimit: jsii.Number(p.ThrottleBurstLimit),
		},
		AccessLogSettings: &accessLogSettings{
			destination: awsapigatewayv2.NewLogGroupLogDestination(accessLogs),
			format:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
		},
	})

	integrations := make(map[string]awsapigatewayv2integrations.HttpLambdaIntegration)
	for _, r := range routes.Table {
		fn, ok := functions[r.Function]
		if !ok {
			awscdk.Annotations_Of(stack).AddError(jsii.String(fmt.Sprintf("infra: route %s: unknown function %s", r.Key(), r.Function)))
			continue
		}
		integration, ok := integrations[r.Function]
		if !ok {
			integration = awsapigatewayv2integrations.NewHttpLambdaIntegration(
				jsii.String(constructID(r.Function)+"Integration"), fn,
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
					PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
				})
			integrations[r.Function] = integration
		}
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.Method)},
			Integration: integration,
		})
	}
	suppressRoutes(api)
	return stage
}

// corsMethods returns routes.CORSAllowMethods as CDK CORS methods.
func corsMethods() *[]awsapigatewayv2.CorsHttpMethod {
	out := make([]awsapigatewayv2.CorsHttpMethod, len(routes.CORSAllowMethods))
	for i, m := range routes.CORSAllowMethods {
		out[i] = awsapigatewayv2.CorsHttpMethod(m)
	}
	return &out
}

// newSchedule invokes fn on routes.ScheduleExpression and returns the
// encrypted, SSL-only dead-letter queue of events EventBridge could not
// deliver.
func newSchedule(stack awscdk.Stack, fn awslambda.Function) awssqs.Queue {
	dlq := awssqs.NewQueue(stack, jsii.String("IdlePauseScheduleDLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppressDLQ(dlq)
	// A failed or throttled sweep is not retried: the next tick, five
	// minutes later, does the same work with fresher data. A sweep that
	// errors goes to the same queue (on-failure destination), so
	// the DLQ alarm covers undelivered ticks and failed sweeps alike.
	fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(4)),
		OnFailure:     awslambdadestinations.NewSqsDestination(dlq),
	})
	awsevents.NewRule(stack, jsii.String("IdlePauseSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Invokes the Sandman idle pause sweep"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(routes.ScheduleExpression)),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
				DeadLetterQueue: dlq,
				// An undelivered tick is worthless after the next one.
				MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(5)),
				RetryAttempts: jsii.Number(2),
			}),
		},
	})
	return dlq
}

// newAlarms creates an alarm on each function's errors and throttles and on
// the schedule DLQ's depth. Each fires on any occurrence in a 5 minute period;
// missing data (no invocations) is not breaching. The alarms have no actions:
// wire them to a topic or an incident tool per deployment.
func newAlarms(stack awscdk.Stack, functions map[string]awslambda.Function, dlq awssqs.Queue) {
	period := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5))}
	for _, spec := range functionSpecs {
		fn := functions[spec.name]
		id := constructID(spec.name)
		awscloudwatch.NewAlarm(stack, jsii.String(id+"ErrorsAlarm"), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("Sandman " + spec.name + " function errors"),
			Metric:             fn.MetricErrors(period),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		awscloudwatch.NewAlarm(stack, jsii.String(id+"ThrottlesAlarm"), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("Sandman " + spec.name + " function throttles"),
			Metric:             fn.MetricThrottles(period),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	awscloudwatch.NewAlarm(stack, jsii.String("IdlePauseScheduleDLQAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman idle pause schedule events in the dead-letter queue"),
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}

// Settings of the publisher's event source mapping on the table's stream
// (ours; docs/DESIGN.md "Events out" asks for at least once, in order per
// session).
const (
	// streamBatchSize is the most records per invocation.
	streamBatchSize = 100
	// streamRetryAttempts bounds the retries of a failing batch (bisected
	// on each error) before its records go to the dead-letter queue.
	streamRetryAttempts = 10
	// streamMaxRecordAge is how old a record may get before it goes to
	// the dead-letter queue unpublished: the stream's own retention.
	streamMaxRecordAge = 24 * time.Hour
	// iteratorAgeAlarmMS is the iterator age (milliseconds) the publisher
	// may fall behind the stream before its alarm fires: one minute.
	iteratorAgeAlarmMS = 60_000
)

// newOutbox connects the table's stream to the publisher function: an event
// source mapping from the oldest record (TRIM_HORIZON), one batch per shard
// at a time per parallel slot (ParallelizationFactor
// SandmanStackProps.PublisherParallelization; Lambda keeps each partition
// key's, so each session's, events in order), batch item failures reported (the function names the first record
// it could not publish, so retries start there), bisect-on-error, bounded
// retries, and an on-failure destination: an encrypted, SSL-only SQS queue
// receiving the description of every batch given up on. Alarms fire on the
// iterator age (the publisher falling behind) and on anything in that
// queue; errors and throttles have their alarms in newAlarms.
func newOutbox(stack awscdk.Stack, fn awslambda.Function, table awsdynamodb.Table, parallelization float64) {
	dlq := awssqs.NewQueue(stack, jsii.String("PublisherStreamDLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(dlq, nagStreamDLQ)
	fn.AddEventSource(awslambdaeventsources.NewDynamoEventSource(table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(streamBatchSize),
		ParallelizationFactor:   jsii.Number(parallelization),
		BisectBatchOnError:      jsii.Bool(true),
		ReportBatchItemFailures: jsii.Bool(true),
		RetryAttempts:           jsii.Number(streamRetryAttempts),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(streamMaxRecordAge.Seconds())),
		OnFailure:               awslambdaeventsources.NewSqsDlq(dlq),
	}))
	period := awscdk.Duration_Minutes(jsii.Number(5))
	awscloudwatch.NewAlarm(stack, jsii.String("PublisherIteratorAgeAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman publisher behind the table's stream (iterator age over 1 min)"),
		Metric: fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(iteratorAgeAlarmMS),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	awscloudwatch.NewAlarm(stack, jsii.String("PublisherStreamDLQAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman stream records the publisher gave up on (dead-letter queue)"),
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
