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
// Secrets: SANDMAN_PROVIDER_API_KEY_SECRET and SANDMAN_WEBHOOK_SECRET_SECRET
// (the names infra/stack.go sets, internal/envnames) name Secrets Manager
// secrets whose SecretString is the value itself (plain text, surrounding
// whitespace trimmed). Locally SANDMAN_PROVIDER_API_KEY
// and SANDMAN_WEBHOOK_SECRET hold the values. Only the secrets a function
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
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/channel/clienttoken"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/readiness/sqsjobs"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

// secretTimeout bounds fetching one secret at cold start.
const secretTimeout = 10 * time.Second

// Needs says which credentials a function uses; Load fetches only those and
// fails when one of them is missing.
type Needs struct {
	// Provider: the function calls the sandbox provider (sessions, resume,
	// snapshot, reconnect, idlepause).
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
	// instead of the one its factory would build.
	Provider lifecycle.Provider
	// Providers builds each enabled provider (SANDMAN_PROVIDER and
	// SANDMAN_PROVIDERS) when the function needs them (Needs.Provider).
	Providers map[string]ProviderFactory
	// Timers arms pause timers (lifecycle.Config.Timers; nil: none) and
	// TimerHorizon is how far ahead (default lifecycle.DefaultTimerHorizon).
	Timers       lifecycle.Timers
	TimerHorizon time.Duration
	// ReadinessJobs queues readiness jobs (lifecycle.Config.ReadinessJobs;
	// nil: an SQS queue when SANDMAN_READINESS_QUEUE_URL is set, else none).
	ReadinessJobs lifecycle.ReadinessJobs
	// Metrics receives the service's pauses, resumes, provider errors and
	// pause lag (lifecycle.Config.Metrics; nil: none). The Lambda mains pass
	// an internal/metrics Emitter writing EMF to stdout.
	Metrics lifecycle.Metrics
	// WebhookDispatcher runs outbound webhook jobs (the local stack's
	// delivery.Local); nil: an SQS queue when SANDMAN_WEBHOOK_QUEUE_URL is
	// set, else none (replays answer 503).
	WebhookDispatcher delivery.Dispatcher
	// RefillPoolsAfterClaim is lifecycle.Config.RefillAfterClaim: a claim
	// refills its pool in the background at once, under New's context (the
	// local stack, a long-lived process; a Lambda function is frozen after
	// its answer, so the sweep refills there).
	RefillPoolsAfterClaim bool
}

// ProviderParams is what a ProviderFactory builds a provider from: the
// configuration, the secrets New fetched, the clock and the logger.
type ProviderParams struct {
	Config        Config
	APIKey        string // the provider's API key or token (e2b, daytona, vercel); "" for the others
	WebhookSecret string // the webhook signing secret, when the function has it
	Clock         lifecycle.Clock
	Log           *slog.Logger
}

// ProviderFactory builds one provider. close, when not nil, is called by
// App.Close. Errors: the provider's configuration is unusable.
type ProviderFactory func(p ProviderParams) (provider lifecycle.Provider, close func(context.Context) error, err error)

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
	// WebhookSecret is the E2B-format webhook signing secret (E2B, the
	// local provider); "" unless Needs.WebhookSecret and one of those is
	// enabled, or the local provider sends webhooks.
	WebhookSecret string
	// DaytonaWebhookSecret is Daytona's Svix endpoint secret ("whsec_…");
	// "" unless Needs.WebhookSecret and daytona is enabled.
	DaytonaWebhookSecret string
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
	keys    apigw.KeyStore // the store, behind a KeyCache unless turned off
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
// lambda.Start. Errors: ConfigFromEnv's, a provider outside LambdaProviders
// (the fake and the local provider run only in the local stack), New's.
func Load(ctx context.Context, needs Needs, deps Deps) (*App, error) {
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	for _, name := range cfg.Providers {
		if !slices.Contains(LambdaProviders, name) {
			return nil, fmt.Errorf("%s/%s name %q, which a deployed function cannot run: want some of %s (the %s and %s providers run only in the local stack)",
				EnvProvider, EnvProviders, name, strings.Join(LambdaProviders, ", "), ProviderFake, ProviderLocal)
		}
	}
	return New(ctx, cfg, needs, deps)
}

// NewLogger returns the JSON logger every function uses, writing to w at
// level, with the request attributes of apigw.WithLogAttrs.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(apigw.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})))
}

// New builds the App for cfg: logger (JSON on stderr, also made the slog
// default unless deps.Log is given), secrets, DynamoDB store, provider and
// service. Errors name what is missing or failed.
func New(ctx context.Context, cfg Config, needs Needs, deps Deps) (*App, error) {
	if !cfg.Enabled(cfg.Provider) { // a Config built by hand: the default is always enabled
		cfg.Providers = append([]string{cfg.Provider}, cfg.Providers...)
	}
	a := &App{Config: cfg, Log: deps.Log}
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
	secret := src.read
	keys, err := a.loadSecrets(cfg, needs, deps, secret)
	if err != nil {
		return nil, err
	}

	if err := a.loadTokens(ctx, cfg, clock, secret); err != nil {
		return nil, err
	}

	ddb, err := dynamo.NewClient(ctx, cfg.DynamoEndpoint)
	if err != nil {
		return nil, err
	}
	// No quota: keep no per-account slot counter, so session writes stay
	// single PutItems instead of transactions on one hot item per account.
	a.Store = dynamo.New(dynamo.Config{Client: ddb, Table: cfg.Table, Log: a.Log, WithoutRunningSlots: cfg.MaxRunning == 0,
		Shards: cfg.Shards})

	if err := a.buildProviders(cfg, needs, deps, keys, clock); err != nil {
		return nil, err
	}
	timers, jobs, err := queues(src, cfg, deps, clock)
	if err != nil {
		return nil, err
	}
	a.Service = lifecycle.NewService(lifecycle.Config{Store: a.Store, Provider: a.Provider, Providers: a.Providers[1:], Clock: clock,
		Policy: cfg.Policy, Log: a.Log, ProbeTimeout: cfg.ProbeTimeout, CallTimeout: cfg.ProviderCallTimeout, Deployment: cfg.Deployment,
		Timers: timers, TimerHorizon: deps.TimerHorizon, MaxRunning: cfg.MaxRunning, Metrics: deps.Metrics,
		Prices: cfg.Prices, TemplateApps: cfg.TemplateApps, ReadinessJobs: jobs,
		Pools: cfg.Pools, RefillAfterClaim: deps.RefillPoolsAfterClaim, Background: ctx})
	a.WebhookStore, a.WebhookDispatcher = dynamostore.New(ddb, cfg.Table), deps.WebhookDispatcher
	if a.WebhookDispatcher == nil && cfg.WebhookQueueURL != "" {
		c, err := src.aws()
		if err != nil {
			return nil, err
		}
		a.WebhookDispatcher = sqsqueue.New(sqs.NewFromConfig(c), cfg.WebhookQueueURL, clock)
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

// providerKey is where one provider's API key or token comes from: its
// plain and Secrets Manager variables and their values in a Config.
type providerKey struct {
	what                string
	plainEnv, secretEnv string
	values              func(Config) (plain, secretName string)
}

// providerKeys are the keys of the providers that need one (the local
// provider and the fake need none).
var providerKeys = map[string]providerKey{
	ProviderE2B: {"e2b API key", EnvProviderAPIKey, EnvProviderAPIKeySecret,
		func(c Config) (string, string) { return c.ProviderAPIKey, c.ProviderAPIKeySecret }},
	ProviderDaytona: {"daytona API key", EnvDaytonaAPIKey, EnvDaytonaAPIKeySecret,
		func(c Config) (string, string) { return c.DaytonaAPIKey, c.DaytonaAPIKeySecret }},
	ProviderVercel: {"vercel token", EnvVercelToken, EnvVercelTokenSecret,
		func(c Config) (string, string) { return c.VercelToken, c.VercelTokenSecret }},
}

// loadSecrets reads what needs asks for: each enabled provider's key (by
// name; none for deps.Provider's) when the function calls providers, and
// the webhook secrets when it verifies webhooks (the E2B-format one also
// when the local provider signs its webhooks).
func (a *App) loadSecrets(cfg Config, needs Needs, deps Deps, secret secretFunc) (map[string]string, error) {
	keys := map[string]string{} // provider name → its API key or token
	for _, name := range cfg.Providers {
		k, ok := providerKeys[name]
		if !needs.Provider || !ok || (name == cfg.Provider && deps.Provider != nil) {
			continue
		}
		plain, secretName := k.values(cfg)
		v, err := secret(k.what, plain, secretName, k.plainEnv, k.secretEnv)
		if err != nil {
			return nil, err
		}
		keys[name] = v
	}
	// E2B-format webhooks come from E2B, the local provider and the fake.
	e2bFormat := cfg.Enabled(ProviderE2B) || cfg.Enabled(ProviderLocal) || cfg.Enabled(ProviderFake)
	if (needs.WebhookSecret && e2bFormat) || (needs.Provider && cfg.Enabled(ProviderLocal) && cfg.LocalWebhookURL != "") {
		var err error
		if a.WebhookSecret, err = secret("webhook secret", cfg.WebhookSecret, cfg.WebhookSecretSecret,
			EnvWebhookSecret, EnvWebhookSecretSecret); err != nil {
			return nil, err
		}
	}
	if needs.WebhookSecret && cfg.Enabled(ProviderDaytona) {
		var err error
		if a.DaytonaWebhookSecret, err = secret("daytona webhook secret", cfg.DaytonaWebhookSecret,
			cfg.DaytonaWebhookSecretSecret, EnvDaytonaWebhookSecret, EnvDaytonaWebhookSecretSecret); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// buildProviders sets a.Providers, the default first, and a.Provider: the
// default is deps.Provider when given; a function that calls no provider
// gets noProvider for each; the others are built by their factories.
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
			if p, err = a.newProvider(cfg, name, deps.Providers, keys[name], clock); err != nil {
				return err
			}
		}
		a.Providers = append(a.Providers, p)
	}
	a.Provider = a.Providers[0]
	return nil
}

// queues returns the service's pause timers and readiness jobs: deps' when
// given, else SQS queues when their URLs are configured, else nil (none).
func queues(src *secretSource, cfg Config, deps Deps, clock lifecycle.Clock) (lifecycle.Timers, lifecycle.ReadinessJobs, error) {
	timers, jobs := deps.Timers, deps.ReadinessJobs
	if timers == nil && cfg.TimerQueueURL != "" {
		c, err := src.aws()
		if err != nil {
			return nil, nil, err
		}
		timers = sqstimer.New(sqs.NewFromConfig(c), cfg.TimerQueueURL, clock)
	}
	if jobs == nil && cfg.ReadinessQueueURL != "" {
		c, err := src.aws()
		if err != nil {
			return nil, nil, err
		}
		jobs = sqsjobs.New(sqs.NewFromConfig(c), cfg.ReadinessQueueURL)
	}
	return timers, jobs, nil
}

// newProvider builds the provider named name with its factory.
func (a *App) newProvider(cfg Config, name string, factories map[string]ProviderFactory, apiKey string, clock lifecycle.Clock) (lifecycle.Provider, error) {
	build, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("provider %q (%s/%s) is not one this build knows", name, EnvProvider, EnvProviders)
	}
	p, closeFn, err := build(ProviderParams{Config: cfg, APIKey: apiKey, WebhookSecret: a.WebhookSecret, Clock: clock, Log: a.Log})
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
		Tokens: a.Tokens, WSURL: a.Config.WSURL, Webhooks: a.Webhooks})
}

// loadTokens builds a.Tokens from the key set the configuration names: a
// Secrets Manager secret whose SecretString is the key-set JSON, or a local
// file generated on first use (internal/channel/clienttoken). Neither set: nil.
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
