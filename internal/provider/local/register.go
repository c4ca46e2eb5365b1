package local

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// The environment variables of the local provider (docs/CONFIGURATION.md).
const (
	EnvDir           = "SANDMAN_LOCAL_DIR"            // the state folder (default DefaultDir)
	EnvWebhookURL    = "SANDMAN_LOCAL_WEBHOOK_URL"    // where it sends E2B-format webhooks; "" sends none
	EnvKeepProcesses = "SANDMAN_LOCAL_KEEP_PROCESSES" // "false": a pause kills the app's processes (docs/READINESS.md)
)

// Adapter is the local provider's declaration (internal/provider/registry):
// sandboxes are processes of the local stack, so no deployment may run it.
// It speaks E2B's webhook format and signs with E2B's secret when it has a
// URL to send to. No call budget (its calls cost nothing) and no price.
var Adapter = registry.Adapter{
	Name:          ProviderName,
	Env:           []string{EnvDir, EnvWebhookURL, EnvKeepProcesses},
	Webhook:       &e2bhook.Webhook,
	SignsWebhooks: func(settings any) bool { c, _ := settings.(Config); return c.WebhookURL != "" },
	Read: func(getenv func(string) string) (any, error) {
		c := Config{Dir: getenv(EnvDir), WebhookURL: getenv(EnvWebhookURL)}
		switch v := strings.ToLower(getenv(EnvKeepProcesses)); v {
		case "", "true", "1":
		case "false", "0":
			c.DropProcesses = true
		default:
			return nil, fmt.Errorf("%s=%q: want true or false", EnvKeepProcesses, v)
		}
		return c, nil
	},
	New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
		cfg, _ := p.Settings.(Config)
		cfg.WebhookSecret, cfg.Clock, cfg.Logger = p.WebhookSecret, p.Clock, p.Log
		prov, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return prov, prov.Close, nil
	},
}
