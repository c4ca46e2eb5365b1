// Package registry is where a provider adapter declares what the rest of
// Sandman needs to know about it, in one value its own package exports
// (register.go of internal/provider/e2b, daytona, vercel, local, fake):
// its name, whether a deployment may run it, the environment variables of
// its settings and how to read them, the secrets it reads (with the names
// the CDK stack gives them), how to build the lifecycle.Provider, its call
// budget and its price. internal/app reads settings and secrets and builds
// providers from these values alone, internal/provider lists the adapters
// the Lambda functions link, and infra sets the stack's secrets from them,
// so adding a provider touches no wiring (docs/DEVELOPMENT.md "Adding a
// provider").
//
// This package holds declarations and helpers only, no adapter: every
// function links it, the status function included, which links no adapter.
package registry

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Secret is one secret an adapter reads: a plain value for local use, or
// the name of a Secrets Manager secret, whose SecretString is the value
// (set by the stack). At most one of the two variables may be set.
type Secret struct {
	// What names the secret in errors, e.g. "daytona API key".
	What string
	// Env holds the value itself (local use), e.g. SANDMAN_DAYTONA_API_KEY.
	Env string
	// SecretEnv holds the Secrets Manager secret's name, e.g.
	// SANDMAN_DAYTONA_API_KEY_SECRET; the stack sets it.
	SecretEnv string
	// DefaultName is the secret's name in Secrets Manager unless the stack
	// is told otherwise (docs/DEPLOY.md), e.g. "sandman/daytona-api-key".
	DefaultName string
	// ContextKey is the CDK context key that overrides DefaultName, e.g.
	// "sandman:daytonaApiKeySecretName".
	ContextKey string
	// ConstructID is the stack's construct id of the imported secret. It is
	// part of the deployed template's logical ids: never change it.
	ConstructID string
}

// Webhook is how a provider's webhooks reach the webhook function.
type Webhook struct {
	// Secret verifies the deliveries; the webhook function reads it.
	Secret Secret
	// Format is the wire format's name, the path segment deliveries come
	// to (/v1/webhooks/<format>): internal/providerhook's E2BName or
	// DaytonaName. Providers that speak one format (E2B, the local provider
	// and the fake) share its route and its secret.
	Format string
}

// Params is what Adapter.New builds a provider from.
type Params struct {
	// Settings is what the adapter's Read returned.
	Settings any
	// APIKey is the value of the adapter's Key ("" when it has none).
	APIKey string
	// WebhookSecret is the value of the adapter's Webhook secret when the
	// function read it (Adapter.SignsWebhooks, or the webhook function);
	// else "".
	WebhookSecret string
	Clock         lifecycle.Clock
	Log           *slog.Logger
}

// Adapter is one provider's declaration. Name, Read and New are required.
type Adapter struct {
	// Name is the provider's name: the value of SANDMAN_PROVIDER and
	// SANDMAN_PROVIDERS, and the name its sessions are stored with.
	Name string
	// Deployable says a deployed function may run it. The local provider
	// (processes of the local stack) and the fake (one process's memory)
	// may not: the Lambda functions do not link them and the stack refuses
	// them.
	Deployable bool
	// Env lists the variables of the adapter's non-secret settings, each
	// read by Read. The stack passes them (sandman:providerSettings) to the
	// functions that call providers; docs/CONFIGURATION.md lists each.
	Env []string
	// Key is the API key or token the functions that call the provider
	// read; nil: none.
	Key *Secret
	// Webhook is how its webhooks are verified; nil: it sends none.
	Webhook *Webhook
	// SignsWebhooks, when set, reports whether a provider built from these
	// settings sends webhooks itself and so needs the Webhook secret to
	// sign them (the local provider, when given a URL).
	SignsWebhooks func(settings any) bool
	// Read reads the adapter's settings from getenv (a value of its own
	// Config type, without secrets, clock or logger). Errors name the
	// variable.
	Read func(getenv func(string) string) (any, error)
	// New builds the provider. close, when not nil, releases what it holds
	// (called by app.App.Close). Errors: unusable settings.
	New func(Params) (p lifecycle.Provider, close func(context.Context) error, err error)
	// Calls is the provider's call budget per process by default
	// (calllimit.Wrap; the zero value: no limit), and CallsEnv the
	// variable that overrides its rate (SANDMAN_<NAME>_CALLS_PER_SECOND),
	// "" for none. docs/CAPACITY.md "Provider call limiter" gives each
	// default's source.
	Calls    calllimit.Limit
	CallsEnv string
	// Price is the provider's default usage price (lifecycle.Config.Prices;
	// SANDMAN_PRICES overrides it).
	Price lifecycle.Price
	// PausedRetention is how long the provider keeps a paused sandbox by
	// itself before deleting it (its sheet in docs/providers/); 0: as long
	// as Sandman wants. A session archives lifecycle.DefaultArchiveAfter
	// of it by default (lifecycle.Config.PausedRetention).
	PausedRetention time.Duration
}

// Secrets returns the adapter's secrets: its Key, then its Webhook's.
func (a Adapter) Secrets() []Secret {
	var out []Secret
	if a.Key != nil {
		out = append(out, *a.Key)
	}
	if a.Webhook != nil {
		out = append(out, a.Webhook.Secret)
	}
	return out
}

// Vars returns every variable the adapter reads: its settings, its call
// budget's, and both variables of each secret.
func (a Adapter) Vars() []string {
	out := slices.Clone(a.Env)
	if a.CallsEnv != "" {
		out = append(out, a.CallsEnv)
	}
	for _, s := range a.Secrets() {
		out = append(out, s.Env, s.SecretEnv)
	}
	return out
}

// Set is a list of adapters, looked up by name.
type Set []Adapter

// Find returns the adapter named name.
func (s Set) Find(name string) (Adapter, bool) {
	i := slices.IndexFunc(s, func(a Adapter) bool { return a.Name == name })
	if i < 0 {
		return Adapter{}, false
	}
	return s[i], true
}

// Names returns the adapters' names, in order.
func (s Set) Names() []string {
	out := make([]string, len(s))
	for i, a := range s {
		out[i] = a.Name
	}
	return out
}

// Deployable returns the adapters a deployment may run.
func (s Set) Deployable() Set {
	return slices.DeleteFunc(slices.Clone(s), func(a Adapter) bool { return !a.Deployable })
}

// Prices returns each adapter's Price by name.
func (s Set) Prices() map[string]lifecycle.Price {
	out := make(map[string]lifecycle.Price, len(s))
	for _, a := range s {
		out[a.Name] = a.Price
	}
	return out
}

// PausedRetentions returns each adapter's PausedRetention by name (those
// that have one).
func (s Set) PausedRetentions() map[string]time.Duration {
	out := make(map[string]time.Duration, len(s))
	for _, a := range s {
		if a.PausedRetention > 0 {
			out[a.Name] = a.PausedRetention
		}
	}
	return out
}

// ReadCalls returns a's call budget: a.Calls, with the rate getenv gives
// a.CallsEnv when set ("0" or "off": no limit; otherwise calls per second,
// a positive decimal, the bucket one second deep). Errors name the
// variable.
func ReadCalls(a Adapter, getenv func(string) string) (calllimit.Limit, error) {
	if a.CallsEnv == "" {
		return a.Calls, nil
	}
	v := strings.ToLower(strings.TrimSpace(getenv(a.CallsEnv)))
	switch v {
	case "":
		return a.Calls, nil
	case "0", "off":
		return calllimit.Limit{}, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n <= 0 || n > 1e6 {
		return calllimit.Limit{}, fmt.Errorf("%s=%q: want calls per second (a positive number such as 300 or 0.5), or 0 for no limit", a.CallsEnv, v)
	}
	return calllimit.Limit{PerSecond: n}, nil
}

// Duration reads name from getenv as a positive Go duration; 0 when unset.
// Errors name the variable. Adapters' Read functions share it.
func Duration(getenv func(string) string, name string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 90s or 10m", name, v)
	}
	return d, nil
}
