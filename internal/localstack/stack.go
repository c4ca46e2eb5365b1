package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/dirstore"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/checkpointjobs"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/jsonl"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/providerhook"
	"github.com/sandmanhq/sandman/internal/readiness"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/sweep"
	"github.com/sandmanhq/sandman/internal/timer/localtimer"
	"github.com/sandmanhq/sandman/internal/webclient"
)

// Environment variables of the local stack, on top of internal/app's.
const (
	EnvAddr          = envnames.Addr          // listen address, default 127.0.0.1:8080
	EnvSweepInterval = envnames.SweepInterval // idle-pause schedule, default 5m
	EnvInMemory      = envnames.InMemory      // "1": DynamoDB Local keeps nothing
	EnvDDBPort       = envnames.DDBPort       // DynamoDB Local's port; default a free one
	EnvStateDir      = envnames.StateDir      // default .sandman
	EnvDevAPIKey     = envnames.DevAPIKey     // the dev key; default generated once and kept in the state dir
)

// Defaults of the local stack.
const (
	DefaultAddr          = "127.0.0.1:8080"
	DefaultSweepInterval = 5 * time.Minute
	DefaultStateDir      = ".sandman"
	DefaultTable         = "sandman"
	// DefaultWebhookSecret signs the local provider's webhooks when
	// SANDMAN_WEBHOOK_SECRET is unset. It is printed in the banner: a dev
	// secret, never a production one.
	DefaultWebhookSecret = "whsec_sandman_dev"
	// DevAccountID owns the dev API key.
	DevAccountID = "dev"
)

// Config is what Run starts the stack with. Every zero field means the
// default named on it; the settings themselves come from the environment
// (Getenv), then the defaults.
type Config struct {
	Getenv func(string) string // default os.Getenv
	Out    io.Writer           // the banner; default os.Stdout
	Log    *slog.Logger        // default JSON to stderr
	// Ready, when set, receives the API's base URL once it serves.
	Ready func(baseURL string)
	// Compose, when set, adjusts what the stack composes into app.New just
	// before it is built: tests set Deps.Clock to a lifecycle.ManualClock
	// (tier deadlines, idle deadlines and the sweep's now move only when
	// the test says) or wrap a queue. `sandman run` leaves it nil.
	Compose func(*app.Deps)
}

// Run starts the local stack and serves until ctx ends: DynamoDB Local
// (started with scripts/dynamodb-local.sh unless DYNAMODB_ENDPOINT is set,
// on SANDMAN_DDB_PORT or a free port; data kept under the state dir unless
// SANDMAN_DDB_IN_MEMORY=1), the table
// (created if missing), the local process provider (webhooks to its own
// /v1/webhooks/e2b), every HTTP function behind the local API Gateway, the
// idle-pause function every SANDMAN_SWEEP_INTERVAL, and the outbox: a
// poller on the table's stream (every outbox.DefaultPollInterval) writing
// lifecycle events as JSON lines to SANDMAN_EVENTS_FILE (default
// <state dir>/events.jsonl), its position kept in
// <state dir>/events.checkpoint.json. On return everything it started is
// stopped; sandboxes keep their state.
func Run(ctx context.Context, opts Config) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	env := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	interval, err := time.ParseDuration(env(EnvSweepInterval, DefaultSweepInterval.String()))
	if err != nil || interval <= 0 {
		return fmt.Errorf("%s=%q is not a positive duration", EnvSweepInterval, getenv(EnvSweepInterval))
	}
	stateDir := env(EnvStateDir, DefaultStateDir)
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	release, err := lockStateDir(stateDir)
	if err != nil {
		return err
	}
	defer release()

	ln, err := net.Listen("tcp", env(EnvAddr, DefaultAddr))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", env(EnvAddr, DefaultAddr), err)
	}
	defer ln.Close()
	baseURL := "http://" + ln.Addr().String()

	endpoint := getenv(app.EnvDynamoEndpoint)
	if endpoint == "" {
		port, err := DDBPort(getenv)
		if err != nil {
			return err
		}
		ddb, err := StartDynamoDBLocal(ctx, stateDir, getenv(EnvInMemory) == "1", port)
		if err != nil {
			return err
		}
		defer ddb.Stop()
		endpoint = ddb.Endpoint
	}

	defaults := map[string]string{
		app.EnvTable:          DefaultTable,
		app.EnvDynamoEndpoint: endpoint,
		app.EnvProvider:       local.ProviderName,
		local.EnvDir:          filepath.Join(stateDir, "sandboxes"),
		local.EnvWebhookURL:   baseURL + "/v1/webhooks/e2b",
		e2b.EnvWebhookSecret:  DefaultWebhookSecret,
		app.EnvEventsFile:     filepath.Join(stateDir, "events.jsonl"),
		app.EnvWSURL:          "ws://" + ln.Addr().String() + "/v1/ws",
		// Local receivers listen on 127.0.0.1 over http (docs/WEBHOOKS.md
		// "Safe targets"); the stack never sets it.
		app.EnvWebhookAllowPrivateTargets: "true",
	}
	if getenv(app.EnvClientTokenKeysSecret) == "" {
		defaults[app.EnvClientTokenKeysFile] = filepath.Join(stateDir, clienttoken.DefaultFileName)
	}
	appEnv := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return defaults[k]
	}
	deps := Deps(opts.Log)
	// Pause timers (docs/DESIGN.md "Precise pausing"): in process, armed for
	// deadlines before the next tick plus a minute.
	timers := localtimer.New(localtimer.Config{Log: opts.Log})
	deps.Timers, deps.TimerHorizon = timers, interval+time.Minute
	// Readiness jobs (docs/READINESS.md "Where it runs"): an in-process
	// worker behind the interface the SQS queue implements in AWS.
	jobs := readiness.New(readiness.Config{Log: opts.Log})
	deps.ReadinessJobs = jobs
	// The resumes an open or a return hands off run on a worker of their
	// own, so a user coming back never waits for a slot behind slow apps.
	resumes := readiness.New(readiness.Config{Log: opts.Log})
	deps.ResumeJobs = resumes
	// Checkpoints (docs/CHECKPOINTS.md): their jobs on an in-process
	// worker, archives in a folder under the state folder; a local
	// sandbox's whole files folder is its workspace.
	ckpts, err := checkpointArchives(&deps, env(envnames.ArchiveDir, filepath.Join(stateDir, "archives")), opts.Log)
	if err != nil {
		return err
	}
	// Outbound webhooks run in process, one lane per endpoint.
	hooks := delivery.NewLocal(delivery.LocalConfig{Log: opts.Log})
	deps.WebhookDispatcher = hooks
	// Warm pools (docs/POOLS.md): a claim refills its pool at once, in
	// this long-lived process; the boot and every sweep tick fill too.
	deps.RefillPoolsAfterClaim = true
	if name, ok := fakeOf(getenv(app.EnvProvider)); ok {
		log := opts.Log
		if log == nil {
			log = slog.Default()
		}
		run, err := startFake(name, baseURL, appEnv, log)
		if err != nil {
			return err
		}
		defer run.stop()
		appEnv = run.getenv
		if run.provider != nil {
			deps.Provider = run.provider
		}
	}
	if opts.Compose != nil {
		opts.Compose(&deps)
	}
	cfg, err := app.ConfigFromEnv(appEnv, deps.Adapters...)
	if err != nil {
		return err
	}
	client, err := dynamo.NewClient(ctx, cfg.DynamoEndpoint)
	if err != nil {
		return err
	}
	if err := EnsureTable(ctx, client, cfg.Table); err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, app.Needs{Provider: true, WebhookSecret: true}, deps)
	if err != nil {
		return err
	}
	defer func() {
		// Flushes the local provider's webhooks; bounded so a stop never hangs.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = a.Close(cctx)
	}()

	ws := NewWSGateway(a.Log)
	chh, err := channel.New(a.Service, a.Tokens, a.Store, ws, a.Log)
	if err != nil {
		return err
	}
	ws.Handler = chh
	chh.GatewayAdmits() // the gateway counts each message before coalescing heartbeats
	// The sockets of a previous process died with it (kill -9 delivers no
	// $disconnect): drop their records so they stop counting as present.
	reaper, err := channel.NewReaper(a.Service, a.Store, a.Log)
	if err != nil {
		return err
	}
	if _, err := reaper.DropAll(ctx); err != nil {
		a.Log.WarnContext(ctx, "drop the previous process's connections", "err", err)
	}

	engine, err := a.WebhookEngine(hooks, nil)
	if err != nil {
		return err
	}
	// The console's live feed hears every event after the channel's pushes.
	feed := NewConsoleFeed(DevAccountID)
	notify := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		err := chh.Publish(ctx, evs...)
		_ = feed.Publish(ctx, evs...) // never fails
		return err
	})
	poller, closeEvents, err := newOutbox(ctx, client, cfg, stateDir, a.Log, notify, a.Store, engine)
	if err != nil {
		return err
	}
	defer closeEvents()

	gw, err := NewGateway(a)
	if err != nil {
		return err
	}
	devKey, err := ensureDevKey(ctx, a.Store, getenv(EnvDevAPIKey), stateDir)
	if err != nil {
		return err
	}
	sweepCfg, err := sweep.ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	sweepCfg.Conns = reaper // as in AWS: connections silent past the bound stop counting
	idle := sweep.NewHandler(sweep.New(a.Service, sweepCfg, a.Log), a.Log)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hooks.Start(ctx, engine)
	defer hooks.Wait()
	if lister, ok := a.WebhookStore.(delivery.PendingLister); ok {
		if n, err := hooks.Recover(ctx, lister); err != nil {
			a.Log.Warn("webhook deliveries: pending ones not recovered", "err", err)
		} else if n > 0 {
			a.Log.Info("webhook deliveries: pending ones picked up again", "count", n)
		}
	}
	timers.Start(ctx, func(ctx context.Context, id string) error {
		_, err := a.Service.FireTimer(ctx, id)
		return err
	})
	defer func() { cancel(); timers.Close() }()
	jobs.Start(ctx, a.Service.BringUp)
	defer func() { cancel(); jobs.Close() }()
	resumes.Start(ctx, a.Service.FinishResume)
	defer func() { cancel(); resumes.Close() }()
	ckpts.Start(ctx, a.Service.RunCheckpointJob)
	defer func() { cancel(); ckpts.Close() }()
	var wg sync.WaitGroup
	if lp, ok := a.Provider.(*local.Provider); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lp.Run(ctx); err != nil {
				a.Log.Error("local provider timeouts stopped", "err", err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Spares of a pool taken out of SANDMAN_POOLS go at once, not at
		// the sweep's reconcile (docs/POOLS.md "Reconcile").
		if n, err := a.Service.DrainRemovedPools(ctx); err != nil {
			a.Log.Warn("warm pools: spares of removed pools not all drained", "killed", n, "err", err)
		} else if n > 0 {
			a.Log.Info("warm pools: spares of removed pools drained", "killed", n)
		}
		if len(cfg.Pools) > 0 {
			sum := a.Service.FillPools(ctx)
			a.Log.Info("warm pools filled at boot", "made", sum.Made, "failed", sum.Failed)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		RunSchedule(ctx, interval, idle.Handle, a.Log)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = poller.Run(ctx, outbox.DefaultPollInterval)
	}()

	srv := &http.Server{Handler: NewMux(gw, ws, devKey, feed), ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(feed.Close)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	printBanner(out, baseURL, devKey, a.WebhookSecrets[cfg.Provider], interval, cfg, stateDir)
	if opts.Ready != nil {
		opts.Ready(baseURL)
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	a.Log.Info("local stack stopping")
	shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer stop()
	_ = srv.Shutdown(shutdownCtx)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// checkpointArchives gives deps the local stack's checkpoint worker and
// an archive store in the folder dir, archiving a sandbox's whole files
// folder (the local provider's "/", with internal/archive's default
// excludes). Start the worker returned once the service exists.
func checkpointArchives(deps *app.Deps, dir string, log *slog.Logger) (*checkpointjobs.Worker, error) {
	store, err := dirstore.New(dir)
	if err != nil {
		return nil, err
	}
	w := checkpointjobs.New(readiness.Config{Log: log})
	deps.CheckpointJobs, deps.Archives = w, archive.NewArchives(store)
	deps.ArchiveWorkspace = lifecycle.Workspace{Dir: "/", Excludes: archive.DefaultExcludes()}
	return w, nil
}

// NewMux returns the local stack's HTTP handler: the client channel at
// WSPath, the browser files (internal/webclient) at /sandman.js and
// /console/, the console's dev routes (ConsoleAPI, forwarding with devKey;
// feed, when not nil, its live feed) under /console/api/, and every other
// path to the API gateway api.
func NewMux(api http.Handler, ws http.Handler, devKey string, feed http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(WSPath, ws)
	web := webclient.Handler()
	mux.Handle("GET /sandman.js", web)
	mux.Handle("GET /console/", web)
	mux.Handle("GET /console", web)
	console := ConsoleAPI(api, devKey, feed)
	for _, m := range []string{"GET", "POST", "DELETE"} {
		mux.Handle(m+" /console/api/", console)
	}
	mux.Handle("/", api)
	return mux
}

// NewGateway returns the local API Gateway serving every HTTP function of a.
func NewGateway(a *app.App) (*Gateway, error) {
	fns := map[string]HTTPHandler{}
	for _, rt := range routes.Table {
		if _, done := fns[rt.Function]; done {
			continue
		}
		h, err := FunctionHandler(a, rt.Function)
		if err != nil {
			return nil, err
		}
		fns[rt.Function] = h
	}
	return &Gateway{Functions: fns, CORSOrigin: a.Config.CORSOrigin, Log: a.Log}, nil
}

// FunctionHandler returns the handler of one HTTP function, as its Lambda
// main builds it. The webhook function needs a loaded with the webhook
// secret (app.Needs.WebhookSecret).
func FunctionHandler(a *app.App, function string) (HTTPHandler, error) {
	if function == routes.Webhook {
		formats, err := providerhook.Formats(a.Config.Providers, a.Adapters, a.WebhookSecrets, a.Service.Config().Clock)
		if err != nil {
			return nil, err
		}
		h, err := providerhook.New(providerhook.Config{Applier: a.Service, Formats: formats, Log: a.Log, AllowOrigin: a.Config.CORSOrigin})
		if err != nil {
			return nil, err
		}
		return h.Handle, nil
	}
	h, err := a.HTTPHandler(function)
	if err != nil {
		return nil, err
	}
	return h.Handle, nil
}

// scheduleTimeout is the deadline of one scheduled invocation, the idle-pause
// function's Lambda timeout in the stack (infra: 4 min 50 s).
const scheduleTimeout = 4*time.Minute + 50*time.Second

// RunSchedule invokes fn with an EventBridge scheduled event every interval
// until ctx ends, as the stack's rate() rule does. Each invocation gets a
// deadline of scheduleTimeout (the function's Lambda timeout), and runs never
// overlap (like reserved concurrency 1): a tick that comes while a run is
// under way is dropped.
func RunSchedule[T any](ctx context.Context, interval time.Duration, fn func(context.Context, events.CloudWatchEvent) (T, error), log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ictx, cancel := context.WithTimeout(ctx, scheduleTimeout)
			if _, err := fn(ictx, ScheduledEvent(now)); err != nil && ctx.Err() == nil {
				log.Error("scheduled invocation failed", "err", err)
			}
			cancel()
		}
	}
}

// ScheduledEvent returns the EventBridge "Scheduled Event" the idle-pause
// rule sends at t.
func ScheduledEvent(t time.Time) events.CloudWatchEvent {
	return events.CloudWatchEvent{
		Version: "0", ID: newRequestID(), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: t.UTC(), Region: "local",
		Resources: []string{"arn:aws:events:local:000000000000:rule/sandman-sweep"},
		Detail:    []byte("{}"),
	}
}

// newOutbox returns the local publisher of lifecycle events: a poller on
// the table's stream (enabled if the table predates it) writing JSON lines
// to cfg.EventsFile and handing every event to notify (the client
// channel's notifier) and to hooks (the outbound webhooks' engine, which
// makes the deliveries; a failure there is retried with the batch), after
// recording each in usage (outbox.Recording: the usage counters and recent
// events), and a func closing the file.
func newOutbox(ctx context.Context, client *dynamodb.Client, cfg app.Config, stateDir string, log *slog.Logger, notify lifecycle.Publisher, usage lifecycle.UsageStore, hooks lifecycle.Publisher) (*outbox.Poller, func(), error) {
	arn, err := dynamo.EnableStream(ctx, client, cfg.Table)
	if err != nil {
		return nil, nil, err
	}
	streams, err := dynamo.NewStreamsClient(ctx, cfg.DynamoEndpoint)
	if err != nil {
		return nil, nil, err
	}
	pub, err := jsonl.Open(jsonl.Config{Path: cfg.EventsFile})
	if err != nil {
		return nil, nil, err
	}
	both := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		if err := pub.Publish(ctx, evs...); err != nil {
			return err
		}
		if err := notify.Publish(ctx, evs...); err != nil {
			log.WarnContext(ctx, "client channel push", "err", err) // pushes are best effort
		}
		return hooks.Publish(ctx, evs...)
	})
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: outbox.Recording(usage, both), Log: log,
		CheckpointFile: filepath.Join(stateDir, "events.checkpoint.json")})
	return poller, func() { _ = pub.Close() }, nil
}

// EnsureTable creates the sessions table unless it exists, and adds to an
// existing one the indexes it lacks (a data folder kept from an older
// version; dynamo.EnsureIndexes). A by_owner_state index added to a table
// with sessions is backfilled at once (dynamo.Store.BackfillStateIndex: a
// local table is small).
func EnsureTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
		added, err := dynamo.EnsureIndexes(ctx, client, table)
		if err != nil || !slices.Contains(added, tabledef.IndexByOwnerState) {
			return err
		}
		_, err = dynamo.New(dynamo.Config{Client: client, Table: table}).BackfillStateIndex(ctx, 0)
		return err
	case errors.As(err, &nf):
		return dynamo.CreateTable(ctx, client, table)
	default:
		return fmt.Errorf("describe table %s: %w", table, err)
	}
}

// ensureDevKey stores the dev API key for account "dev" and returns it: the
// given one, else the one kept in <state dir>/dev_api_key, else a new one
// (then kept there so restarts print the same key).
func ensureDevKey(ctx context.Context, store lifecycle.Store, key, stateDir string) (string, error) {
	path := filepath.Join(stateDir, "dev_api_key")
	if key == "" {
		if b, err := os.ReadFile(path); err == nil {
			key = strings.TrimSpace(string(b))
		}
	}
	if key == "" {
		key, _ = apigw.NewAPIKey()
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("keep dev api key: %w", err)
		}
	}
	err := store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(key), AccountID: DevAccountID, CreatedAt: time.Now().UTC()})
	if err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		return "", fmt.Errorf("store dev api key: %w", err)
	}
	return key, nil
}

func printBanner(w io.Writer, baseURL, key, secret string, interval time.Duration, cfg app.Config, stateDir string) {
	fmt.Fprintf(w, `
Sandman is ready on %[1]s
  console          %[1]s/console/  (the dev account's sessions, live)
  DynamoDB Local   %[5]s (table %[6]s)
  provider         %[7]s (sandboxes in %[8]s)
  idle pause       every %[4]s
  events           %[9]s
  webhook secret   %[3]s
  dev API key      %[2]s  (account %[10]s)

Try:
  curl -s -X POST %[1]s/v1/sessions -H 'x-api-key: %[2]s' -H 'content-type: application/json' -d '{"template":"web","idle_timeout_seconds":120}'
  curl -s %[1]s/v1/sessions -H 'x-api-key: %[2]s'
  curl -s %[1]s/v1/sessions/SESSION_ID/status -H 'x-api-key: %[2]s'

Ctrl-C stops the stack; sandboxes keep their state.
`, baseURL, key, secret, interval, cfg.DynamoEndpoint, cfg.Table, cfg.Provider, localDir(cfg), cfg.EventsFile, DevAccountID)
}

// DynamoDBLocal is a DynamoDB Local started by scripts/dynamodb-local.sh.
type DynamoDBLocal struct {
	Endpoint string
	script   string
	pidfile  string
}

// DDBPort reads SANDMAN_DDB_PORT through getenv: the port DynamoDB Local is
// started on, 0 (a free port) when unset. Errors: a value that is not a
// port number from 1 to 65535.
func DDBPort(getenv func(string) string) (int, error) {
	v := getenv(EnvDDBPort)
	if v == "" {
		return 0, nil
	}
	port, err := strconv.Atoi(v)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%s=%q is not a port number (1-65535)", EnvDDBPort, v)
	}
	return port, nil
}

// StartDynamoDBLocal starts DynamoDB Local through scripts/dynamodb-local.sh
// (installing it on first use), keeping its data under stateDir/dynamodb
// unless inMemory, on 127.0.0.1:port (0: a free port; a port in use is an
// error). The script is found from the working directory upwards.
func StartDynamoDBLocal(ctx context.Context, stateDir string, inMemory bool, port int) (*DynamoDBLocal, error) {
	script, err := findScript("scripts/dynamodb-local.sh")
	if err != nil {
		return nil, err
	}
	absState, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	d := &DynamoDBLocal{script: script, pidfile: filepath.Join(absState, "dynamodb-local.pid")}
	_ = d.Stop() // a previous run killed hard may have left one behind
	args := []string{script, "start", "--pidfile", d.pidfile}
	if port != 0 {
		args = append(args, "--port", strconv.Itoa(port))
	}
	if inMemory {
		args = append(args, "--in-memory")
	} else {
		args = append(args, "--data-dir", filepath.Join(absState, "dynamodb"))
	}
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		_ = d.Stop() // interrupted while it was starting: leave no Java behind
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	d.Endpoint = strings.TrimSpace(string(b))
	return d, nil
}

// Stop stops the DynamoDB Local instance.
func (d *DynamoDBLocal) Stop() error {
	cmd := exec.Command("bash", d.script, "stop", "--pidfile", d.pidfile)
	cmd.Stderr = io.Discard
	return cmd.Run()
}

func findScript(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found from the working directory up: run from the repository", rel)
		}
		dir = parent
	}
}

// localDir is the local provider's state folder in cfg.
func localDir(cfg app.Config) string {
	c, _ := cfg.Settings[local.ProviderName].(local.Config)
	return c.Dir
}
