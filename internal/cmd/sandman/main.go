// Command sandman is Sandman on one machine.
//
//	sandman run                        the local stack (make run)
//	sandman stop                       pause every sandbox of the state folder (make stop)
//	sandman reset                      kill every sandbox, remove the state folder (make reset)
//	sandman apikey -account ID [-max-running N] [-archive-after D] [-delete-after D]  mint an API key for an account (make apikey)
//	sandman invoke -fn NAME -event F   run one function's handler once on an event (make invoke)
//	sandman sandbox ...                a local sandbox process (started by the local provider)
//	sandman sessions list|get|...      the API's client for operators and scripts (internal/cli)
//	sandman client-tokens create ID    a client token for a browser (internal/cli)
//	sandman fake e2b [-addr HOST:PORT] a provider's fake on its own, state in memory
//
// Configuration is environment variables: internal/app's (SANDMAN_TABLE,
// DYNAMODB_ENDPOINT, SANDMAN_PROVIDER, ...) and internal/localstack's
// (SANDMAN_ADDR, SANDMAN_SWEEP_INTERVAL, SANDMAN_DDB_IN_MEMORY, ...).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandmanhq/sandman/internal/cli"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

const usage = `usage: sandman <command> [flags]

commands:
  run       serve every function locally on DynamoDB Local and the local provider
  stop      pause every sandbox of the state folder (SANDMAN_STATE_DIR, default .sandman); data kept
  reset     kill every sandbox of the state folder, then remove the folder (everything)
  apikey    print a new API key for an account (-account ID, -max-running N, -archive-after D, -delete-after D)
  invoke    run one function's handler once (-fn NAME -event FILE)
  reshard   move every session into its due-index shard after SANDMAN_SHARDS changed (docs/CAPACITY.md)
  reindex   give sessions written before the by_owner_state index their key (docs/CAPACITY.md)
  migrate   tiers: rekey paused sessions written before the retention tiers (docs/DEPLOY.md, -cursor C to resume)
  sandbox   (internal) a local sandbox process
  sessions  list|get|create|open|events|delete|resume|pause|status|reconnect|watch|restore|fork over the
            HTTP API (SANDMAN_URL, SANDMAN_API_KEY; sandman sessions help)
  client-tokens  create <session id>: a client token for a browser (sandman client-tokens help)
  checkpoints create|list|get|delete: a session's checkpoints (sandman checkpoints help)
  webhooks  list|create|delete|deliveries|retry: the account's webhook endpoints and delivery logs
            (SANDMAN_URL, SANDMAN_API_KEY; sandman webhooks help)
  pools     the deployment's warm pools: spares, hit rate, health (SANDMAN_URL, SANDMAN_API_KEY)
            (every API command takes --url and --api-key; next to make run, .sandman/dev_api_key)
  fake      serve a provider's fake API on its own (fake e2b -addr 127.0.0.1:PORT)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
	}()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = localstack.Run(ctx, localstack.Config{})
	case "stop":
		err = localstack.StopCommand(ctx, args, os.Stdout)
	case "reset":
		err = localstack.ResetCommand(ctx, args, os.Stdout)
	case "apikey":
		err = localstack.APIKeyCommand(ctx, args, os.Stdout)
	case "invoke":
		err = localstack.InvokeCommand(ctx, args, os.Stdout)
	case "reshard":
		err = localstack.ReshardCommand(ctx, args, os.Stdout)
	case "reindex":
		err = localstack.ReindexCommand(ctx, args, os.Stdout)
	case "migrate":
		err = localstack.MigrateCommand(ctx, args, os.Stdout)
	case "sandbox":
		err = local.RunSandbox(args)
	case "sessions":
		code := cli.Main(ctx, args, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	case "webhooks":
		code := cli.WebhooksMain(ctx, args, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	case "checkpoints":
		code := cli.CheckpointsMain(ctx, args, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	case "pools":
		code := cli.PoolsMain(ctx, args, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	case "client-tokens":
		code := cli.ClientTokensMain(ctx, args, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
		stop()
		os.Exit(code)
	case "fake":
		err = fakeCommand(ctx, args, os.Stdout, os.Stderr)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "sandman: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandman %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
