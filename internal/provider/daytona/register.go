package daytona

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// The environment variables of the Daytona adapter (docs/CONFIGURATION.md).
const (
	EnvBaseURL             = "SANDMAN_DAYTONA_BASE_URL"              // the control API's URL (default DefaultBaseURL)
	EnvOrganizationID      = "SANDMAN_DAYTONA_ORGANIZATION_ID"       // X-Daytona-Organization-ID (only with a user JWT as key)
	EnvTarget              = "SANDMAN_DAYTONA_TARGET"                // the region sandboxes are created in
	EnvPauseMode           = "SANDMAN_DAYTONA_PAUSE_MODE"            // PauseStop (default) or PausePause
	EnvAutoArchive         = "SANDMAN_DAYTONA_AUTO_ARCHIVE"          // autoArchiveInterval, a duration
	EnvAutoDelete          = "SANDMAN_DAYTONA_AUTO_DELETE"           // autoDeleteInterval, a duration
	EnvAPIKey              = "SANDMAN_DAYTONA_API_KEY"               // the API key in plain text (local use)
	EnvAPIKeySecret        = "SANDMAN_DAYTONA_API_KEY_SECRET"        // the secret holding it; set by the stack
	EnvWebhookSecret       = "SANDMAN_DAYTONA_WEBHOOK_SECRET"        // the Svix endpoint secret (whsec_…) in plain text
	EnvWebhookSecretSecret = "SANDMAN_DAYTONA_WEBHOOK_SECRET_SECRET" // the secret holding it; set by the stack for webhook
	EnvCallsPerSecond      = "SANDMAN_DAYTONA_CALLS_PER_SECOND"      // the call budget's rate (Adapter.Calls)
)

// Adapter is Daytona's declaration (internal/provider/registry).
//
// Calls: 10,000 per minute (167/s), the smallest tier's limit of
// Daytona's general ("authenticated") and lifecycle buckets
// (docs/providers/daytona.md, its rate limits); creates have their own,
// smaller bucket (300 per minute on that tier), which the adapter's retries
// on 429 absorb.
//
// Price: 1 vCPU + 1 GiB at $0.0504 per vCPU-hour and $0.0162 per GiB-hour,
// stopped (disk only) about $0.0004 per hour (Daytona's list prices,
// 2025): an estimate.
//
// PausedRetention: none. Daytona's auto-archive (7 days by default) moves
// a stopped sandbox's disk to object storage, which a start restores: no
// loss; its auto-delete is off unless SANDMAN_DAYTONA_AUTO_DELETE sets it
// (docs/providers/daytona.md). A deployment that sets it should set
// SANDMAN_ARCHIVE_AFTER shorter.
var Adapter = registry.Adapter{
	Name:       Name,
	Deployable: true,
	Env:        []string{EnvBaseURL, EnvOrganizationID, EnvTarget, EnvPauseMode, EnvAutoArchive, EnvAutoDelete},
	Key: &registry.Secret{What: "daytona API key", Env: EnvAPIKey, SecretEnv: EnvAPIKeySecret,
		DefaultName: "sandman/daytona-api-key", ContextKey: "sandman:daytonaApiKeySecretName", ConstructID: "DaytonaApiKeySecret"},
	Webhook: &registry.Webhook{Format: "daytona", Secret: registry.Secret{What: "daytona webhook secret",
		Env: EnvWebhookSecret, SecretEnv: EnvWebhookSecretSecret, DefaultName: "sandman/daytona-webhook-secret",
		ContextKey: "sandman:daytonaWebhookSecretName", ConstructID: "DaytonaWebhookSecret"}},
	Calls:    calllimit.Limit{PerSecond: 10000.0 / 60},
	CallsEnv: EnvCallsPerSecond,
	Price:    lifecycle.Price{RunningPerHour: 0.0666, PausedPerHour: 0.0004, PausedGB: 3.22}, // PausedGB: the default disk, 3 GiB
	Read:     readConfig,
	New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
		cfg, _ := p.Settings.(Config)
		cfg.APIKey, cfg.Clock, cfg.Logger = p.APIKey, p.Clock, p.Log
		prov, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return prov, nil, nil
	},
}

// readConfig reads the adapter's settings. Errors: an unknown pause mode,
// an unparsable interval; each names its variable.
func readConfig(getenv func(string) string) (any, error) {
	c := Config{BaseURL: getenv(EnvBaseURL), OrganizationID: getenv(EnvOrganizationID), Target: getenv(EnvTarget),
		PauseMode: strings.ToLower(getenv(EnvPauseMode))}
	switch c.PauseMode {
	case "", PauseStop, PausePause:
	default:
		return nil, fmt.Errorf("%s=%q: want %s or %s", EnvPauseMode, c.PauseMode, PauseStop, PausePause)
	}
	var err error
	if c.AutoArchive, err = registry.Duration(getenv, EnvAutoArchive); err != nil {
		return nil, err
	}
	if c.AutoDelete, err = registry.Duration(getenv, EnvAutoDelete); err != nil {
		return nil, err
	}
	return c, nil
}
