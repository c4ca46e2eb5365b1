package localstack

import (
	"context"
	"log/slog"
	"maps"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// Deps returns what the local stack composes into app.New on top of log:
// every provider it can run (the Lambda functions' e2b, daytona and vercel,
// plus the local provider whose sandboxes are processes and the in-memory
// fake) and the JSON-lines events file. The Lambda functions link neither
// of the local ones.
func Deps(log *slog.Logger) app.Deps {
	all := maps.Clone(provider.Lambda())
	all[app.ProviderLocal] = Local
	all[app.ProviderFake] = Fake
	return app.Deps{Log: log, Providers: all}
}

// Local builds the local provider (internal/provider/local) under the
// configured directory, sending E2B-format webhooks to the configured URL
// signed with the webhook secret.
func Local(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	prov, err := local.New(local.Config{Dir: p.Config.LocalDir, WebhookURL: p.Config.LocalWebhookURL,
		WebhookSecret: p.WebhookSecret, Clock: p.Clock, Logger: p.Log, DropProcesses: p.Config.LocalDropProcesses})
	if err != nil {
		return nil, nil, err
	}
	return prov, prov.Close, nil
}

// Fake builds the in-memory fake provider (internal/provider/fake):
// sandboxes live only in this process.
func Fake(p app.ProviderParams) (lifecycle.Provider, func(context.Context) error, error) {
	p.Log.Warn("using the in-memory fake provider: sandboxes live only in this process")
	return fake.New(fake.Config{Clock: p.Clock}), nil, nil
}
