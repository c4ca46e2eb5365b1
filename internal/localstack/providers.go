package localstack

import (
	"log/slog"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// Adapters returns every provider the local stack can run: the Lambda
// functions' (internal/provider.Lambda), plus the local provider whose
// sandboxes are processes and the in-memory fake, which no deployment may
// run (the Lambda functions link neither).
func Adapters() registry.Set {
	return append(provider.Lambda(), local.Adapter, fake.Adapter)
}

// Fakes returns the providers' stand-in APIs the local stack can run on
// (SANDMAN_PROVIDER=<name>-fake) and `sandman fake <name>` serves, each
// declared beside its adapter's fake (internal/provider/<name>/<name>test).
// The Lambda functions link none of them.
func Fakes() []registry.Fake {
	return []registry.Fake{e2btest.Fake, daytonatest.Fake, verceltest.Fake}
}

// Deps returns what the local stack composes into app.New on top of log:
// every adapter it can run (Adapters).
func Deps(log *slog.Logger) app.Deps {
	return app.Deps{Log: log, Adapters: Adapters()}
}
