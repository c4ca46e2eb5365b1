package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/checkpoint/sqscheckpoint"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/sqsqueue"
	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/jsonl"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/readiness/sqsjobs"
	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/sweep"
	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
	"github.com/sandmanhq/sandman/internal/timer/sqstimer"
)

// target is the table a one-off command (apikey, invoke) works on.
type target struct {
	getenv  func(string) string // app configuration with local defaults
	cleanup func()
	where   string // for messages
	local   bool   // DynamoDB Local (not a real AWS table)
}

// resolveTarget picks the table the configuration points at: DYNAMODB_ENDPOINT
// when set; the real table when AWS configuration is present (AWS_REGION or
// AWS_PROFILE, and SANDMAN_TABLE); else DynamoDB Local: the instance a
// running `make run` started, or a temporary one over the same data folder.
func resolveTarget(ctx context.Context, getenv func(string) string) (*target, error) {
	stateDir := getenv(EnvStateDir)
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	defaults := map[string]string{
		app.EnvTable:      DefaultTable,
		app.EnvProvider:   local.ProviderName,
		local.EnvDir:      filepath.Join(stateDir, "sandboxes"),
		app.EnvEventsFile: filepath.Join(stateDir, "events.jsonl"),
	}
	t := &target{cleanup: func() {}}
	endpoint := getenv(app.EnvDynamoEndpoint)
	awsConfigured := (getenv("AWS_REGION") != "" || getenv("AWS_PROFILE") != "") && getenv(app.EnvTable) != ""
	switch {
	case endpoint != "":
		t.where, t.local = "DynamoDB at "+endpoint, true
	case awsConfigured:
		t.where = "DynamoDB table " + getenv(app.EnvTable) + " (AWS)"
	default:
		if ep, err := runningEndpoint(stateDir); err == nil {
			endpoint = ep
		} else {
			port, err := DDBPort(getenv)
			if err != nil {
				return nil, err
			}
			ddb, err := StartDynamoDBLocal(ctx, stateDir, getenv(EnvInMemory) == "1", port)
			if err != nil {
				return nil, err
			}
			t.cleanup = func() { _ = ddb.Stop() }
			endpoint = ddb.Endpoint
		}
		t.where, t.local = "DynamoDB Local at "+endpoint, true
		client, err := dynamo.NewClient(ctx, endpoint)
		if err != nil {
			t.cleanup()
			return nil, err
		}
		table := getenv(app.EnvTable)
		if table == "" {
			table = DefaultTable
		}
		if err := EnsureTable(ctx, client, table); err != nil {
			t.cleanup()
			return nil, err
		}
	}
	defaults[app.EnvDynamoEndpoint] = endpoint
	if t.local && getenv(app.EnvClientTokenKeysSecret) == "" {
		// The local stack's client-token keys, so `invoke -fn channel`
		// accepts the tokens it minted.
		defaults[app.EnvClientTokenKeysFile] = filepath.Join(stateDir, clienttoken.DefaultFileName)
	}
	t.getenv = func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return defaults[k]
	}
	return t, nil
}

// openApp resolves the table the process environment points at
// (resolveTarget), reads the app configuration with the target's defaults
// and builds the app with needs and deps. When needs.WebhookSecret and no
// secret is configured it uses DefaultWebhookSecret, the local stack's. The
// caller closes the app, then calls t.cleanup; on error both are done.
func openApp(ctx context.Context, needs app.Needs, deps app.Deps) (*target, *app.App, error) {
	t, err := resolveTarget(ctx, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := app.ConfigFromEnv(t.getenv, deps.Adapters...)
	if err != nil {
		t.cleanup()
		return nil, nil, err
	}
	if s := e2bhook.Webhook.Secret; needs.WebhookSecret && cfg.Secrets[s.Env] == "" && cfg.Secrets[s.SecretEnv] == "" {
		if cfg.Secrets == nil {
			cfg.Secrets = map[string]string{}
		}
		cfg.Secrets[s.Env] = DefaultWebhookSecret
	}
	a, err := app.New(ctx, cfg, needs, deps)
	if err != nil {
		t.cleanup()
		return nil, nil, err
	}
	return t, a, nil
}

// runningEndpoint returns the endpoint of the DynamoDB Local that a running
// local stack started.
func runningEndpoint(stateDir string) (string, error) {
	script, err := findScript("scripts/dynamodb-local.sh")
	if err != nil {
		return "", err
	}
	pid, err := filepath.Abs(filepath.Join(stateDir, "dynamodb-local.pid"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", script, "endpoint", "--pidfile", pid)
	cmd.Stderr = io.Discard
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("no running DynamoDB Local: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// APIKeyCommand is `sandman apikey -account ID [-max-running N]
// [-archive-after D] [-delete-after D]`: it stores a new API key for the
// account (hashed) in the table the configuration points at and prints the
// key on w. -max-running gives the key its own running limit
// (lifecycle.APIKey.MaxRunning; 0, the default: the deployment's
// SANDMAN_MAX_RUNNING). -archive-after and -delete-after are the account's
// retention tiers for the sessions created with this key
// (lifecycle.APIKey.Tiers; a Go duration, or 0/off for never; unset: the
// deployment's SANDMAN_ARCHIVE_AFTER / SANDMAN_DELETE_AFTER): an account
// has no record of its own, so its settings live on its keys.
func APIKeyCommand(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("apikey", flag.ContinueOnError)
	account := fs.String("account", "", "account id the key belongs to (required)")
	maxRunning := fs.Int("max-running", 0, "the key's own running-sandbox limit for its creates and resumes (0: the deployment's SANDMAN_MAX_RUNNING)")
	archiveAfter := fs.String("archive-after", "", "archive the sessions created with this key this long after their pause (Go duration; 0 or off: never; unset: the deployment's SANDMAN_ARCHIVE_AFTER)")
	deleteAfter := fs.String("delete-after", "", "delete the sessions created with this key this long after their pause (Go duration; 0 or off: never; unset: the deployment's SANDMAN_DELETE_AFTER)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *account == "" {
		return errors.New("-account is required, e.g. make apikey ACCOUNT=acme")
	}
	if *maxRunning < 0 {
		return errors.New("-max-running must not be negative")
	}
	k := lifecycle.APIKey{AccountID: *account, CreatedAt: time.Now().UTC(), MaxRunning: *maxRunning}
	var err error
	if k.Tiers.ArchiveAfter, err = app.ParseTierAfter(*archiveAfter); err != nil {
		return fmt.Errorf("-archive-after %q: %w", *archiveAfter, err)
	}
	if k.Tiers.DeleteAfter, err = app.ParseTierAfter(*deleteAfter); err != nil {
		return fmt.Errorf("-delete-after %q: %w", *deleteAfter, err)
	}
	if err := lifecycle.ValidTiers(k.Tiers); err != nil {
		return fmt.Errorf("-archive-after/-delete-after: %w", err)
	}
	t, a, err := openApp(ctx, app.Needs{}, Deps(app.NewLogger(io.Discard, 0)))
	if err != nil {
		return err
	}
	defer t.cleanup()
	defer a.Close(ctx)
	key, err := apigw.IssueAPIKeyWith(ctx, a.Store, k)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "stored in %s, table %s, for account %s\n", t.where, a.Config.Table, *account)
	fmt.Fprintln(w, key)
	return nil
}

// ReshardCommand is `sandman reshard [-segments N]`, the backfill that goes
// with a change of SANDMAN_SHARDS on a table with data (docs/CAPACITY.md
// "Changing the shard count"): it moves every session item of the table the
// configuration points at into its due-index shard at the configured count
// (dynamo.Store.Reshard) and prints what it did on w. Safe to run while the
// functions serve, and again.
func ReshardCommand(ctx context.Context, args []string, w io.Writer) error {
	return backfillCommand(ctx, "reshard", args, w, func(a *app.App, segments int) (string, error) {
		res, err := a.Store.Reshard(ctx, segments)
		return fmt.Sprintf("%d session items in a due index, %d moved to their shard of %d, %d rewritten meanwhile by a session write",
			res.Scanned, res.Moved, a.Store.Shards(), res.Raced), err
	})
}

// ReindexCommand is `sandman reindex [-segments N]`: it gives every session
// written before the by_owner_state index existed its key, so filtered
// lists (GET /v1/sessions?state=…) find it (dynamo.Store.BackfillStateIndex;
// docs/CAPACITY.md "The by_owner_state index"), on the table the
// configuration points at, and prints what it did on w. Safe to run while
// the functions serve, and again.
func ReindexCommand(ctx context.Context, args []string, w io.Writer) error {
	return backfillCommand(ctx, "reindex", args, w, func(a *app.App, segments int) (string, error) {
		res, err := a.Store.BackfillStateIndex(ctx, segments)
		return fmt.Sprintf("%d session items without a by_owner_state key, %d given one, %d rewritten meanwhile by a session write",
			res.Scanned, res.Filled, res.Raced), err
	})
}

// backfillCommand runs a backfill of the table the configuration points at
// (-segments N: parallel scan segments) and prints what it says it did.
func backfillCommand(ctx context.Context, name string, args []string, w io.Writer, run func(a *app.App, segments int) (string, error)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	segments := fs.Int("segments", 4, "parallel scan segments, 1 to 64")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return onTable(ctx, func(a *app.App, where string) error {
		did, err := run(a, *segments)
		fmt.Fprintf(w, "table %s (%s): %s\n", a.Config.Table, where, did)
		return err
	})
}

// onTable runs f on the app of the table the configuration points at (a
// one-off maintenance command: backfills, migrate), where saying which
// table that is (DynamoDB Local or the configured endpoint), and closes it.
func onTable(ctx context.Context, f func(a *app.App, where string) error) error {
	t, a, err := openApp(ctx, app.Needs{}, Deps(app.NewLogger(io.Discard, 0)))
	if err != nil {
		return err
	}
	defer t.cleanup()
	defer a.Close(ctx)
	return f(a, t.where)
}

// InvokeCommand is `sandman invoke -fn NAME -event FILE`: it runs one
// function's handler once with the JSON event in FILE against the table the
// configuration points at, and prints the handler's response as JSON on w,
// like `sam local invoke -e`.
func InvokeCommand(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fn := fs.String("fn", "", "function: "+strings.Join(routes.Functions, ", "))
	eventFile := fs.String("event", "", "JSON event file, e.g. events/api/status.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *fn == "" || *eventFile == "" {
		return errors.New("-fn and -event are required, e.g. make invoke FN=status EVENT=events/api/status.json")
	}
	if !slices.Contains(routes.Functions, *fn) {
		return fmt.Errorf("unknown function %q (one of %s)", *fn, strings.Join(routes.Functions, ", "))
	}
	raw, err := os.ReadFile(*eventFile)
	if err != nil {
		return err
	}
	needs := app.Needs{Provider: *fn != routes.Status && *fn != routes.Webhook && *fn != routes.Publisher && *fn != routes.Notifier && *fn != routes.Deliver, WebhookSecret: *fn == routes.Webhook}
	t, a, err := openApp(ctx, needs, Deps(nil))
	if err != nil {
		return err
	}
	defer t.cleanup()
	defer a.Close(ctx)

	var resp any
	switch *fn {
	case routes.Publisher:
		// The stream's records go where the local stack's poller writes:
		// the events file (functions/publisher puts them on the bus).
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("decode DynamoDB Streams event %s: %w", *eventFile, err)
		}
		pub, err := jsonl.Open(jsonl.Config{Path: a.Config.EventsFile})
		if err != nil {
			return err
		}
		defer pub.Close()
		if resp, err = outbox.NewHandler(outbox.Recording(a.Store, pub), a.Log).Handle(ctx, ev); err != nil {
			return err
		}
	case routes.Timer, routes.Readiness, routes.Checkpoint:
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("decode SQS event %s: %w", *eventFile, err)
		}
		handle := map[string]func(context.Context, events.SQSEvent) (events.SQSEventResponse, error){
			routes.Timer:      sqstimer.NewHandler(a.Service, a.Log).Handle,
			routes.Readiness:  sqsjobs.NewHandler(a.Service, nil, a.Log).Handle,
			routes.Checkpoint: sqscheckpoint.NewHandler(a.Service, a.Log).Handle,
		}[*fn]
		if resp, err = handle(ctx, ev); err != nil {
			return err
		}
	case routes.Sweep:
		// A scheduled event runs a sweep; an SQS batch of the pool refill
		// queue (events/queue/poolrefill.json) fills the pools it names.
		scfg, err := sweep.ConfigFromEnv(t.getenv)
		if err != nil {
			return err
		}
		h := sweep.NewHandler(sweep.New(a.Service, scfg, a.Log), a.Log)
		h.Refills = sqsrefill.NewHandler(a.Service, a.Log)
		if resp, err = h.Invoke(ctx, raw); err != nil {
			return fmt.Errorf("%s: %w", *eventFile, err)
		}
	case routes.Deliver:
		// Attempts run in process (delivery.Local) instead of through the
		// queue; invoke waits for them, retries included.
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("decode SQS event %s: %w", *eventFile, err)
		}
		local := delivery.NewLocal(delivery.LocalConfig{Log: a.Log})
		engine, err := a.WebhookEngine(local, nil)
		if err != nil {
			return err
		}
		lctx, stop := context.WithCancel(ctx)
		defer stop()
		local.Start(lctx, engine)
		if resp, err = sqsqueue.NewHandler(engine, a.Log).Handle(ctx, ev); err != nil {
			return err
		}
		local.Idle()
	case routes.Channel, routes.Notifier:
		if resp, err = invokeChannel(ctx, a, *fn, raw); err != nil {
			return err
		}
	default:
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("decode API Gateway v2 event %s: %w", *eventFile, err)
		}
		if t.local {
			// The fixtures in events/api authenticate with the documented
			// dev key; make it valid on a local table, as sam local would.
			err := a.Store.PutAPIKey(ctx, lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
				AccountID: apigw.DevAccountID, CreatedAt: time.Now().UTC()})
			if err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) {
				return err
			}
		}
		h, err := FunctionHandler(a, *fn)
		if err != nil {
			return err
		}
		if resp, err = h(ctx, ev); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}
