package registry

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Fake is a provider's stand-in API, served by the local stack
// (SANDMAN_PROVIDER=<name>-fake runs the real adapter against it) and by
// `sandman fake <name>`. It is declared in the adapter's <name>test
// package, which only the CLI and the local stack import
// (internal/localstack.Fakes), never a Lambda function.
type Fake struct {
	// Name is the provider's name.
	Name string
	// Serve builds the fake: its handler and a function that releases what
	// it holds.
	Serve func(FakeParams) (h http.Handler, close func())
	// Hint says how to aim the provider's own SDK at the fake, printed by
	// `sandman fake`; "<base url>" stands for the fake's URL.
	Hint string
	// BaseURLEnv is the adapter's variable naming the API's URL, which the
	// local stack aims at the fake (or, when the environment sets it
	// already, at a fake running there, whose state then outlives the
	// stack).
	BaseURLEnv string
	// Env are the adapter's settings the fake expects (its credentials),
	// set for the adapter unless the environment has them.
	Env map[string]string
	// Adapter, when set, builds the adapter aimed at a fake at base, for
	// an adapter that the environment alone cannot aim (E2B's sandbox URLs
	// are not on its API's host).
	Adapter func(base string, log *slog.Logger) (lifecycle.Provider, error)
}

// FakeParams is what Fake.Serve builds a fake from.
type FakeParams struct {
	Log *slog.Logger
	// Base is the fake's own URL.
	Base string
	// WebhookURL is where the fake sends the provider's webhooks, as the
	// provider would; "" for none (`sandman fake`).
	WebhookURL string
	// Getenv gives the adapter's settings (Env's defaults included), e.g.
	// the webhook secret to sign with.
	Getenv func(string) string
	// BootDelay is how long after its start a command the fake "runs"
	// listens on its port (the fakes run nothing; their previews answer
	// once it has). 0: at once.
	BootDelay time.Duration
	// LocalPreviews asks a fake whose provider's preview hosts do not
	// resolve (Daytona) to hand out preview URLs on Base instead, so a
	// local stack's readiness probes reach them. The local stack sets it;
	// `sandman fake -local-previews` does.
	LocalPreviews bool
}
