// Package lambdamain is the one main of the Lambda functions: each
// functions/<name>/main.go states only what differs (its name, what it needs
// loaded and how its handler is built from the App), and Start does the rest
// the same way for all: the JSON logger first, then the metrics emitter, the
// App (app.Load) and the handler, served by lambda.Start behind
// metrics.Handler.
//
// The logger comes before anything can fail, so a cold-start error (a
// missing or invalid variable, an unreadable secret) is one JSON line with
// level ERROR that the stack's ErrorLogs metric filter counts
// (docs/DESIGN.md "Operators"), not slog's plain-text default.
package lambdamain

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Function is what a function's main states.
type Function struct {
	// Name is the function's name (internal/routes: routes.Sessions, ...),
	// the metrics' Function dimension and the "function" of its logs.
	Name string
	// Needs is what app.Load loads for it.
	Needs app.Needs
	// Adapters are the providers it calls or verifies webhooks of
	// (internal/provider.Lambda()); nil for a function that does neither.
	Adapters registry.Set
}

// Build returns a function's handler from its App and its metrics emitter:
// a func lambda.Start accepts, wrapped in metrics.Handler(m, ...) so the
// invocation's metrics are flushed before it returns. Errors are cold-start
// errors.
type Build func(ctx context.Context, a *app.App, m *metrics.Emitter) (handler any, err error)

// HTTP is the Build of an HTTP API function: App.HTTPHandler(name).
func HTTP(name string) Build {
	return func(_ context.Context, a *app.App, m *metrics.Emitter) (any, error) {
		h, err := a.HTTPHandler(name)
		if err != nil {
			return nil, err
		}
		return metrics.Handler(m, h.Handle), nil
	}
}

// Start runs f in Lambda: Init on the process's environment, stdout
// (metrics) and stderr (logs), then lambda.Start. A cold-start error has
// been logged by Init; the process exits 1. Start does not return.
func Start(f Function, build Build) {
	h, err := Init(context.Background(), f, os.Stdout, os.Stderr, build)
	if err != nil {
		os.Exit(1)
	}
	lambda.Start(h)
}

// Init is Start's cold start: the JSON logger on stderr at SANDMAN_LOG_LEVEL
// (an unknown level keeps info; app.ConfigFromEnv reports it) made the slog
// default, the metrics emitter on stdout, app.Load, then build. It returns
// build's handler, or the first error, which it has logged as one JSON line
// {"level":"ERROR","msg":"cold start failed","function":...,"err":...}.
func Init(ctx context.Context, f Function, stdout, stderr io.Writer, build Build) (any, error) {
	var level slog.Level
	if v := os.Getenv(app.EnvLogLevel); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	log := app.NewLogger(stderr, level)
	slog.SetDefault(log)
	failed := func(err error) error {
		log.ErrorContext(ctx, "cold start failed", "function", f.Name, "err", err)
		return err
	}
	m := metrics.New(metrics.Config{Writer: stdout, Function: f.Name, Log: log})
	a, err := app.Load(ctx, f.Needs, app.Deps{Adapters: f.Adapters, Metrics: m, Log: log})
	if err != nil {
		return nil, failed(err)
	}
	h, err := build(ctx, a, m)
	if err != nil {
		return nil, failed(err)
	}
	return h, nil
}
