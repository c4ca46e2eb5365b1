// Package app is the cold-start wiring every Lambda main shares: read the
// configuration from the environment once (ConfigFromEnv), fetch secrets
// once (Secrets Manager in AWS, plain environment variables locally), build
// the SDK clients once, and return a ready lifecycle.Service with its Store
// and Provider. A main then builds its handler from the App and
// calls lambda.Start; nothing is loaded per request.
//
// A function states what it needs (Needs): the status function reads the
// table only and is given no provider credentials by the stack, so it loads
// with Needs{} and its Service gets a provider that refuses every call with
// an error (a 500 that names the missing access) instead of a provider
// built without a key. Functions that call the provider say
// Needs{Provider: true} and fail at cold start when its key is missing.
//
// Providers: a main passes the adapters it links (Deps.Adapters,
// internal/provider/registry declarations); their settings, secrets, call
// budgets and prices come from those declarations, so nothing here names a
// provider. Each provider New builds is put behind its call budget: the
// fleet's governor (internal/governor: one bucket per provider in the
// table, leased by every process, with a per-process bucket as its
// fallback), one per provider per process.
//
// Secrets: each adapter's secret is a Secrets Manager secret named by its
// *_SECRET variable (which the stack sets), whose SecretString is the value
// itself (plain text, surrounding whitespace trimmed), or locally the value
// in its plain variable (registry.Secret). Only the secrets a function
// needs are fetched.
//
// Functions publish no events: the table's stream does (internal/outbox;
// functions/publisher puts them on SANDMAN_EVENT_BUS, the local stack writes
// SANDMAN_EVENTS_FILE).
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/governor"
	govstore "github.com/sandmanhq/sandman/internal/governor/dynamostore"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/readiness/sqsjobs"
	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

// secretTimeout bounds fetching one secret at cold start.
const secretTimeout = 10 * time.Second

// Needs says which credentials a function uses; Load fetches only those and
// fails when one of them is missing.
type Needs struct {
	// Provider: the function calls the sandbox provider (sessions, resume,
	// pause, reconnect, sweep).
	Provider bool
	// WebhookSecret: the function verifies provider webhooks (webhook).
	WebhookSecret bool
}

// SecretsAPI is the part of the Secrets Manager client Load uses;
// *secretsmanager.Client implements it.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Deps is what a main composes into New; every field is optional. A
// function that calls the provider passes the Providers it links
// (internal/provider for the Lambda functions, internal/localstack for the
// local stack), so a function that does not, links none. Tests inject a
// clock, a provider or a fake Secrets Manager.
type Deps struct {
	Log     *slog.Logger
	Clock   lifecycle.Clock // default lifecycle.SystemClock
	Secrets SecretsAPI      // default a client from the AWS default config
	// Provider, when set, is the default provider (SANDMAN_PROVIDER's)
	// instead of the one its adapter would build.
	Provider lifecycle.Provider
	// Adapters are the providers the function links (internal/provider.Lambda
	// for the Lambda functions, internal/localstack.Adapters locally): Load
	// reads their settings, and New builds each enabled one (SANDMAN_PROVIDER
	// and SANDMAN_PROVIDERS) when the function calls providers
	// (Needs.Provider) and reads their webhook secrets when it verifies
	// webhooks.
	Adapters registry.Set
	// Timers arms pause timers (lifecycle.Config.Timers; nil: none) and
	// TimerHorizon is how far ahead (default lifecycle.DefaultTimerHorizon).
	Timers       lifecycle.Timers
	TimerHorizon time.Duration
	// ReadinessJobs queues readiness jobs (lifecycle.Config.ReadinessJobs;
	// nil: an SQS queue when SANDMAN_READINESS_QUEUE_URL is set, else none).
	ReadinessJobs lifecycle.ReadinessJobs
	// ResumeJobs queues the jobs that finish a handed-off resume
	// (lifecycle.Config.ResumeJobs; nil: an SQS queue when
	// SANDMAN_RESUME_QUEUE_URL is set, else ReadinessJobs).
	ResumeJobs lifecycle.ReadinessJobs
	// Metrics receives the service's pauses, resumes, provider errors and
	// pause lag (lifecycle.Config.Metrics; nil: none), and, when it is also a
	// calllimit.Metrics, each provider call limiter's grants, waits and
	// refusals. The Lambda mains pass an internal/metrics Emitter writing
	// EMF to stdout.
	Metrics lifecycle.Metrics
	// WebhookDispatcher runs outbound webhook jobs (the local stack's
	// delivery.Local); nil: an SQS queue when SANDMAN_WEBHOOK_QUEUE_URL is
	// set, else none (replays answer 503).
	WebhookDispatcher delivery.Dispatcher
	// RefillPoolsAfterClaim is lifecycle.Config.RefillAfterClaim: a claim
	// refills its pool in the background at once, under New's context (the
	// local stack, a long-lived process; a Lambda function is frozen after
	// its answer, so there PoolRefills hands the refill on).
	RefillPoolsAfterClaim bool
	// PoolRefills is lifecycle.Config.PoolRefills; nil: a FIFO SQS queue
	// when SANDMAN_POOL_REFILL_QUEUE_URL is set, else none.
	PoolRefills lifecycle.PoolRefills
	// CheckpointJobs queues checkpoint jobs (lifecycle.Config.CheckpointJobs;
	// the local stack's in-process worker, internal/checkpointjobs); nil: an
	// SQS queue when SANDMAN_CHECKPOINT_QUEUE_URL is set, else none
	// (checkpoint routes answer unavailable).
	CheckpointJobs lifecycle.CheckpointJobs
	// Archives keeps workspace archives (lifecycle.Config.Archives; the
	// local stack's folder store under its state folder); nil: the S3
	// bucket SANDMAN_ARCHIVE_BUCKET names when set, else none (only
	// provider snapshots).
	Archives lifecycle.Archives
	// ArchiveWorkspace is lifecycle.Config.ArchiveWorkspace
	// (docs/CHECKPOINTS.md): the local stack passes the whole sandbox.
	ArchiveWorkspace lifecycle.Workspace
}

// App is one cold start's wiring. Its fields are ready to use and shared by
// every invocation.
type App struct {
	Config Config
	Log    *slog.Logger
	Store  *dynamo.Store
	// Provider is the default provider; Providers every enabled one
	// (Config.Providers), the default first.
	Provider  lifecycle.Provider
	Providers []lifecycle.Provider
	Service   *lifecycle.Service
	// WebhookSecrets are the enabled providers' webhook secrets by
	// provider name (registry.Adapter.Webhook): read when Needs.WebhookSecret,
	// or when the provider signs its own webhooks (the local provider with a
	// URL); providers sharing a format share its secret.
	WebhookSecrets map[string]string
	// Adapters are Deps.Adapters.
	Adapters registry.Set
	// Tokens mints and verifies client tokens; nil when neither
	// SANDMAN_CLIENT_TOKEN_KEYS_SECRET nor SANDMAN_CLIENT_TOKEN_KEYS_FILE
	// is set.
	Tokens *clienttoken.Tokens
	// Webhooks runs the account-facing webhook endpoint operations, over
	// WebhookStore (the same table) and WebhookDispatcher.
	Webhooks          *delivery.Service
	WebhookStore      delivery.Store
	WebhookDispatcher delivery.Dispatcher

	closers []func(context.Context) error
	keys    apigw.KeyStore   // the store, behind a KeyCache unless turned off
	ddb     *dynamodb.Client // the table's client, the governor's too
	clock   lifecycle.Clock
}

// WebhookGuard returns the target guard of outbound webhooks
// (SANDMAN_WEBHOOK_ALLOW_PRIVATE_TARGETS).
func (a *App) WebhookGuard() delivery.Guard {
	return delivery.Guard{AllowPrivate: a.Config.WebhookAllowPrivate}
}

// WebhookEngine returns the delivery engine over the App's webhook store,
// dispatching through d (nil: a.WebhookDispatcher), with the configured
// schedule and guard; onExhausted may be nil.
func (a *App) WebhookEngine(d delivery.Dispatcher, onExhausted func(context.Context, *delivery.Delivery) error) (*delivery.Engine, error) {
	if d == nil {
		d = a.WebhookDispatcher
	}
	return delivery.NewEngine(delivery.Config{Store: a.WebhookStore, Dispatcher: d, Guard: a.WebhookGuard(), Clock: a.clock,
		Schedule: a.Config.WebhookSchedule, OnExhausted: onExhausted, Log: a.Log})
}

// Load reads the Config from the process environment and builds the App
// from it and what the main composes (New). Call it once, in main, before
// lambda.Start. Errors: ConfigFromEnv's, a provider no deployment may run
// (registry.Adapter.Deployable: the fake and the local provider run only
// in the local stack), New's.
func Load(ctx context.Context, needs Needs, deps Deps) (*App, error) {
	if len(deps.Adapters) > 0 {
		deployable := deps.Adapters.Deployable()
		_, names := providerNames(func(k string) string { return strings.TrimSpace(os.Getenv(k)) })
		for _, name := range names {
			if _, ok := deployable.Find(name); !ok {
				return nil, fmt.Errorf("%s/%s name %q, which a deployed function cannot run: want some of %s (the others, such as the local provider and the in-memory fake, run only in the local stack)",
					EnvProvider, EnvProviders, name, strings.Join(deployable.Names(), ", "))
			}
		}
	}
	cfg, err := ConfigFromEnv(os.Getenv, deps.Adapters...)
	if err != nil {
		return nil, err
	}
	return New(ctx, cfg, needs, deps)
}

// NewLogger returns the JSON logger every function uses, writing to w at
// level, with the request attributes of httpapi.WithLogAttrs.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(httpapi.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})))
}

// New builds the App for cfg: logger (JSON on stderr, also made the slog
// default unless deps.Log is given), secrets, DynamoDB store, provider and
// service. Errors name what is missing or failed.
func New(ctx context.Context, cfg Config, needs Needs, deps Deps) (*App, error) {
	if !cfg.Enabled(cfg.Provider) { // a Config built by hand: the default is always enabled
		cfg.Providers = append([]string{cfg.Provider}, cfg.Providers...)
	}
	a := &App{Config: cfg, Log: deps.Log, Adapters: deps.Adapters, WebhookSecrets: map[string]string{}}
	if a.Log == nil {
		a.Log = NewLogger(os.Stderr, cfg.LogLevel)
		slog.SetDefault(a.Log)
	}
	clock := deps.Clock
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	ok := false
	defer func() {
		if !ok {
			_ = a.Close(context.WithoutCancel(ctx))
		}
	}()

	src := &secretSource{ctx: ctx, api: deps.Secrets}
	keys, err := a.loadSecrets(cfg, needs, deps, src.read)
	if err != nil {
		return nil, err
	}

	if err := a.loadTokens(ctx, cfg, clock, src.read); err != nil {
		return nil, err
	}

	ddb, err := dynamo.NewClient(ctx, cfg.DynamoEndpoint)
	if err != nil {
		return nil, err
	}
	a.ddb = ddb
	// No quota: keep no per-account slot counter, so session writes stay
	// single PutItems instead of transactions on one hot item per account.
	a.Store = dynamo.New(dynamo.Config{Client: ddb, Table: cfg.Table, Log: a.Log, WithoutRunningSlots: cfg.MaxRunning == 0,
		Shards: cfg.Shards, EventRetention: cfg.EventRetention})

	if err := a.buildProviders(cfg, needs, deps, keys, clock); err != nil {
		return nil, err
	}
	timers, jobs, err := queues(src, cfg, deps, clock)
	if err != nil {
		return nil, err
	}
	resumeJobs, err := resumeQueue(src, cfg, deps)
	if err != nil {
		return nil, err
	}
	refills, err := poolRefills(src, cfg, deps)
	if err != nil {
		return nil, err
	}
	ckpt, err := checkpointSeams(ctx, src, cfg, deps)
	if err != nil {
		return nil, err
	}
	a.Service = lifecycle.NewService(lifecycle.Config{Store: a.Store, Provider: a.Provider, Providers: a.Providers[1:], Clock: clock,
		Policy: cfg.Policy, Log: a.Log, ProbeTimeout: cfg.ProbeTimeout, CallTimeout: cfg.ProviderCallTimeout, Deployment: cfg.Deployment,
		Timers: timers, TimerHorizon: deps.TimerHorizon, MaxRunning: cfg.MaxRunning, Metrics: deps.Metrics,
		Prices: prices(deps.Adapters, cfg.Prices), TemplateApps: cfg.TemplateApps, ReadinessJobs: jobs, ResumeJobs: resumeJobs,
		IdlePolicy: cfg.IdlePolicy, IdleUserField: cfg.IdleUserField, IdleHistograms: a.Store,
		Pools: cfg.Pools, PoolRefills: refills, RefillAfterClaim: deps.RefillPoolsAfterClaim, Background: ctx,
		CheckpointJobs: ckpt.jobs, Archives: ckpt.archives, ArchiveReader: ckpt.reader, ArchivesKept: ckpt.kept,
		ArchiveWorkspace: deps.ArchiveWorkspace,
		Tiers:            cfg.Tiers, PausedRetention: deps.Adapters.PausedRetentions()})
	a.WebhookStore, a.WebhookDispatcher = dynamostore.New(ddb, cfg.Table), deps.WebhookDispatcher
	if a.WebhookDispatcher == nil && cfg.WebhookQueueURL != "" {
		c, err := src.sqs()
		if err != nil {
			return nil, err
		}
		a.WebhookDispatcher = sqsqueue.New(c, cfg.WebhookQueueURL, clock)
	}
	a.Webhooks = delivery.NewService(a.WebhookStore, a.WebhookGuard(), a.WebhookDispatcher, clock)
	a.clock = clock
	a.keys = a.Store
	if cfg.APIKeyCacheTTL >= 0 {
		a.keys = apigw.NewKeyCache(a.Store, cfg.APIKeyCacheTTL, clock)
	}
	ok = true
	return a, nil
}

// secretSource reads secrets: a plain value when set, else the named
// Secrets Manager secret, through api (default a client from the AWS
// default config, loaded once on first use).
type secretSource struct {
	ctx    context.Context
	api    SecretsAPI
	awsCfg *aws.Config
}

// aws returns the AWS default config, loaded once.
func (s *secretSource) aws() (aws.Config, error) {
	if s.awsCfg == nil {
		c, err := config.LoadDefaultConfig(s.ctx)
		if err != nil {
			return aws.Config{}, fmt.Errorf("load aws config: %w", err)
		}
		s.awsCfg = &c
	}
	return *s.awsCfg, nil
}

// read returns plain when set, else the secret secretName. Errors: neither
// is set (naming plainEnv and secretEnv), the AWS config's, the read's.
func (s *secretSource) read(what, plain, secretName, plainEnv, secretEnv string) (string, error) {
	if plain != "" {
		return plain, nil
	}
	if secretName == "" {
		return "", fmt.Errorf("the %s is missing: set %s (a Secrets Manager secret) or %s", what, secretEnv, plainEnv)
	}
	if s.api == nil {
		c, err := s.aws()
		if err != nil {
			return "", err
		}
		s.api = secretsmanager.NewFromConfig(c)
	}
	return fetchSecret(s.ctx, s.api, secretName)
}

// secretFunc is secretSource.read.
type secretFunc func(what, plain, secretName, plainEnv, secretEnv string) (string, error)

// loadSecrets reads what needs asks for, each secret once: each enabled
// provider's key (none for deps.Provider's) when the function calls
// providers, and their webhook secrets when it verifies webhooks or the
// provider signs its own. It returns the keys by provider name and sets
// a.WebhookSecrets.
func (a *App) loadSecrets(cfg Config, needs Needs, deps Deps, secret secretFunc) (map[string]string, error) {
	fetched := map[string]string{} // by registry.Secret.SecretEnv
	read := func(s registry.Secret) (string, error) {
		if v, ok := fetched[s.SecretEnv]; ok {
			return v, nil
		}
		v, err := secret(s.What, cfg.Secrets[s.Env], cfg.Secrets[s.SecretEnv], s.Env, s.SecretEnv)
		if err == nil {
			fetched[s.SecretEnv] = v
		}
		return v, err
	}
	keys := map[string]string{} // provider name → its API key or token
	for _, name := range cfg.Providers {
		ad, ok := deps.Adapters.Find(name)
		if !ok {
			continue
		}
		if needs.Provider && ad.Key != nil && (name != cfg.Provider || deps.Provider == nil) {
			v, err := read(*ad.Key)
			if err != nil {
				return nil, err
			}
			keys[name] = v
		}
		signs := needs.Provider && ad.SignsWebhooks != nil && ad.SignsWebhooks(settings(cfg, ad))
		if ad.Webhook != nil && (needs.WebhookSecret || signs) {
			v, err := read(ad.Webhook.Secret)
			if err != nil {
				return nil, err
			}
			a.WebhookSecrets[name] = v
		}
	}
	return keys, nil
}

// settings returns the adapter's settings in cfg, or its defaults (what
// it reads from an empty environment) for a Config built without them.
func settings(cfg Config, ad registry.Adapter) any {
	if v, ok := cfg.Settings[ad.Name]; ok {
		return v
	}
	v, _ := ad.Read(func(string) string { return "" })
	return v
}

// prices returns the adapters' prices with over's on top.
func prices(adapters registry.Set, over map[string]lifecycle.Price) map[string]lifecycle.Price {
	out := adapters.Prices()
	maps.Copy(out, over)
	return out
}

// buildProviders sets a.Providers, the default first, and a.Provider: the
// default is deps.Provider when given; a function that calls no provider
// gets noProvider for each; the others are built by their adapters. Each
// but noProvider is put behind its call budget (Config.CallLimits).
func (a *App) buildProviders(cfg Config, needs Needs, deps Deps, keys map[string]string, clock lifecycle.Clock) error {
	for _, name := range cfg.Providers {
		var p lifecycle.Provider
		switch {
		case name == cfg.Provider && deps.Provider != nil:
			p = deps.Provider
		case !needs.Provider:
			p = noProvider{name: name}
		default:
			var err error
			if p, err = a.newProvider(cfg, name, deps.Adapters, keys[name], clock); err != nil {
				return err
			}
		}
		if _, none := p.(noProvider); !none {
			p = a.limit(p, cfg, name, deps)
		}
		a.Providers = append(a.Providers, p)
	}
	a.Provider = a.Providers[0]
	return nil
}

// limit puts p, the provider named name, behind its call budget: the
// fleet's governor (internal/governor) on the table, unless it is turned off
// (then this process's own limiter, calllimit.Wrap, at the whole limit).
// The budget is the provider's, in real time, whatever clock the service
// runs on. A Metrics that also counts limiter calls (internal/metrics)
// sees the grants, waits, refusals, leases, 429s and fallbacks.
func (a *App) limit(p lifecycle.Provider, cfg Config, name string, deps Deps) lifecycle.Provider {
	if cfg.GovernorOff {
		cm, _ := deps.Metrics.(calllimit.Metrics)
		return calllimit.Wrap(p, calllimit.Config{Limit: cfg.CallLimits[name], Metrics: cm})
	}
	gm, _ := deps.Metrics.(governor.Metrics)
	return governor.Wrap(p, governor.Config{Limit: cfg.CallLimits[name], Table: govstore.New(a.ddb, cfg.Table),
		Shards: cfg.GovernorShards, Fallback: cfg.GovernorFallback, Metrics: gm, Log: a.Log})
}

// queues returns the service's pause timers and readiness jobs: deps' when
// given, else SQS queues when their URLs are configured, else nil (none).
func queues(src *secretSource, cfg Config, deps Deps, clock lifecycle.Clock) (lifecycle.Timers, lifecycle.ReadinessJobs, error) {
	timers, jobs := deps.Timers, deps.ReadinessJobs
	if timers == nil && cfg.TimerQueueURL != "" {
		c, err := src.sqs()
		if err != nil {
			return nil, nil, err
		}
		timers = sqstimer.New(c, cfg.TimerQueueURL, clock)
	}
	if jobs == nil && cfg.ReadinessQueueURL != "" {
		c, err := src.sqs()
		if err != nil {
			return nil, nil, err
		}
		jobs = sqsjobs.New(c, cfg.ReadinessQueueURL)
	}
	return timers, jobs, nil
}

// resumeQueue returns the service's resume jobs: deps' when given, else
// the SQS resume queue when its URL is configured, else nil (they go to
// the readiness jobs).
func resumeQueue(src *secretSource, cfg Config, deps Deps) (lifecycle.ReadinessJobs, error) {
	if deps.ResumeJobs != nil || cfg.ResumeQueueURL == "" {
		return deps.ResumeJobs, nil
	}
	c, err := src.sqs()
	if err != nil {
		return nil, err
	}
	return sqsjobs.NewResumes(c, cfg.ResumeQueueURL), nil
}

// poolRefills returns the service's pool refill requests: deps' when
// given, else the FIFO SQS queue when its URL is configured, else nil.
func poolRefills(src *secretSource, cfg Config, deps Deps) (lifecycle.PoolRefills, error) {
	if deps.PoolRefills != nil || cfg.PoolRefillQueueURL == "" {
		return deps.PoolRefills, nil
	}
	c, err := src.sqs()
	if err != nil {
		return nil, err
	}
	return sqsrefill.New(c, cfg.PoolRefillQueueURL), nil
}

// newProvider builds the provider named name with its adapter.
func (a *App) newProvider(cfg Config, name string, adapters registry.Set, apiKey string, clock lifecycle.Clock) (lifecycle.Provider, error) {
	ad, ok := adapters.Find(name)
	if !ok {
		return nil, fmt.Errorf("provider %q (%s/%s) is not one this build knows", name, EnvProvider, EnvProviders)
	}
	p, closeFn, err := ad.New(registry.Params{Settings: settings(cfg, ad), APIKey: apiKey, WebhookSecret: a.WebhookSecrets[name],
		Clock: clock, Log: a.Log})
	if err != nil {
		return nil, fmt.Errorf("%s provider: %w", name, err)
	}
	if closeFn != nil {
		a.closers = append(a.closers, closeFn)
	}
	return p, nil
}

// HTTPHandler returns the API handler of function (routes.Sessions, ...)
// over the App's service and store, with the configured CORS origin.
func (a *App) HTTPHandler(function string) (*apigw.Handler, error) {
	return apigw.New(apigw.Config{Function: function, Service: a.Service, Keys: a.keys, AllowOrigin: a.Config.CORSOrigin, Log: a.Log,
		Tokens: a.Tokens, WSURL: a.Config.WSURL, Webhooks: a.Webhooks, Brand: a.Config.Brand})
}

// loadTokens builds a.Tokens from the key set the configuration names: a
// Secrets Manager secret whose SecretString is the key-set JSON, or a local
// file generated on first use (internal/clienttoken). Neither set: nil.
func (a *App) loadTokens(ctx context.Context, cfg Config, clock lifecycle.Clock,
	secret func(what, plain, secretName, plainEnv, secretEnv string) (string, error)) error {
	var keys clienttoken.KeySet
	switch {
	case cfg.ClientTokenKeysSecret != "":
		raw, err := secret("client-token key set", "", cfg.ClientTokenKeysSecret, EnvClientTokenKeysFile, EnvClientTokenKeysSecret)
		if err != nil {
			return err
		}
		if keys, err = clienttoken.ParseKeySet([]byte(raw)); err != nil {
			return fmt.Errorf("client-token key set in %s: %w", cfg.ClientTokenKeysSecret, err)
		}
	case cfg.ClientTokenKeysFile != "":
		var err error
		if keys, err = clienttoken.LoadOrCreateFile(cfg.ClientTokenKeysFile); err != nil {
			return fmt.Errorf("client-token key file: %w", err)
		}
	default:
		return nil
	}
	t, err := clienttoken.New(keys, clock)
	if err != nil {
		return fmt.Errorf("client-token keys: %w", err)
	}
	a.Tokens = t
	return nil
}

// Close releases what New opened (the local provider's webhook sender). Lambda functions never call it; the local stack and
// tests do.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i](ctx))
	}
	a.closers = nil
	return errors.Join(errs...)
}

// fetchSecret reads a secret's SecretString. Errors: the call's, or a
// secret with no string value.
func fetchSecret(ctx context.Context, api SecretsAPI, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, secretTimeout)
	defer cancel()
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", name, err)
	}
	v := strings.TrimSpace(aws.ToString(out.SecretString))
	if v == "" {
		return "", fmt.Errorf("read secret %s: it has no string value", name)
	}
	return v, nil
}

// noProvider is the provider of a function that may not call one (it has no
// credentials): every call fails with an error saying so, which the HTTP
// edge answers as a 500 and logs.
type noProvider struct{ name string }

var _ lifecycle.Provider = noProvider{}

var errNoProvider = errors.New("this function is not configured to call the sandbox provider (app.Needs.Provider is false)")

func (p noProvider) Name() string { return p.name }
func (noProvider) Create(context.Context, lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, errNoProvider
}
func (noProvider) Get(context.Context, string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, errNoProvider
}
func (noProvider) List(context.Context, lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, errNoProvider
}
func (noProvider) Pause(context.Context, string) error { return errNoProvider }
func (noProvider) Resume(context.Context, string, time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, errNoProvider
}
func (noProvider) SetTimeout(context.Context, string, time.Duration) error { return errNoProvider }
func (noProvider) Probe(context.Context, string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, errNoProvider
}
func (noProvider) Kill(context.Context, string) error { return errNoProvider }
