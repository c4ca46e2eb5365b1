package localstack

import (
	"context"
	"log/slog"
	"maps"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// Deps returns what the local stack composes into app.New on top of log:
// every provider it can run (the Lambda functions' e2b and fake, plus the
// local provider whose sandboxes are processes) and the JSON-lines events
// file. The Lambda functions link none of the local ones.
func Deps(log *slog.Logger) app.Deps {
	all := maps.Clone(provider.Lambda())
	all[app.ProviderLocal] = Local
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
