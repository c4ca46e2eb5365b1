package fake

import (
	"context"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/registry"
)

// Adapter is the in-memory fake's declaration (internal/provider/registry):
// sandboxes live in one process's memory, so no deployment may run it. It
// has no settings, and its webhooks (tests send them) are in E2B's format
// with E2B's secret.
var Adapter = registry.Adapter{
	Name:    DefaultName,
	Webhook: &e2bhook.Webhook,
	Read:    func(func(string) string) (any, error) { return nil, nil },
	New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
		p.Log.Warn("using the in-memory fake provider: sandboxes live only in this process")
		return New(Config{Clock: p.Clock}), nil, nil
	},
}
