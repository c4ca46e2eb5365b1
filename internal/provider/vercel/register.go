package vercel

import (
	"context"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// The environment variables of the Vercel Sandbox adapter
// (docs/CONFIGURATION.md).
const (
	EnvBaseURL           = "SANDMAN_VERCEL_BASE_URL"            // the REST API's URL (default DefaultBaseURL)
	EnvTeamID            = "SANDMAN_VERCEL_TEAM_ID"             // teamId=<team_…> on every call
	EnvProjectID         = "SANDMAN_VERCEL_PROJECT_ID"          // the project sandboxes live in (required)
	EnvMaxSessionTimeout = "SANDMAN_VERCEL_MAX_SESSION_TIMEOUT" // the plan's maximum session length (default DefaultMaxSessionTimeout)
	EnvToken             = "SANDMAN_VERCEL_TOKEN"               // an access token in plain text (local use)
	EnvTokenSecret       = "SANDMAN_VERCEL_TOKEN_SECRET"        // the secret holding it; set by the stack
	EnvCallsPerSecond    = "SANDMAN_VERCEL_CALLS_PER_SECOND"    // the call budget's rate (Adapter.Calls)
)

// Adapter is Vercel Sandbox's declaration (internal/provider/registry).
// Vercel sends no webhooks.
//
// Calls: 10 per second, a conservative default of ours: Vercel publishes
// no per-call limit of the Sandbox API; what it publishes, the vCPU
// allocation rate (Pro: 200 vCPUs per minute, about 100 starts of a
// 2-vCPU sandbox), bounds creates and resumes further
// (docs/providers/vercel.md "Session length and the idle guard").
//
// Price: 2 vCPU + 4 GB at $0.128 per active vCPU-hour and $0.0106 per
// GB-hour, stopped free (Vercel's list prices, 2025): an estimate.
//
// PausedRetention: a stopped sandbox's snapshot expires 30 days after its
// last use by default (docs/providers/vercel.md "Retention"), and a pause
// is its last use: the default archive deadline is 27 days after it.
var Adapter = registry.Adapter{
	Name:       Name,
	Deployable: true,
	Env:        []string{EnvBaseURL, EnvTeamID, EnvProjectID, EnvMaxSessionTimeout},
	Key: &registry.Secret{What: "vercel token", Env: EnvToken, SecretEnv: EnvTokenSecret,
		DefaultName: "sandman/vercel-token", ContextKey: "sandman:vercelTokenSecretName", ConstructID: "VercelTokenSecret"},
	Calls:    calllimit.Limit{PerSecond: 10},
	CallsEnv: EnvCallsPerSecond,
	Price:    lifecycle.Price{RunningPerHour: 0.2984, PausedPerHour: 0},
	// 30 days (see above).
	PausedRetention: 30 * 24 * time.Hour,
	Read: func(getenv func(string) string) (any, error) {
		c := Config{BaseURL: getenv(EnvBaseURL), TeamID: getenv(EnvTeamID), ProjectID: getenv(EnvProjectID)}
		var err error
		if c.MaxSessionTimeout, err = registry.Duration(getenv, EnvMaxSessionTimeout); err != nil {
			return nil, err
		}
		return c, nil
	},
	New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
		cfg, _ := p.Settings.(Config)
		cfg.Token, cfg.Clock, cfg.Logger = p.APIKey, p.Clock, p.Log
		prov, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return prov, nil, nil
	},
}
