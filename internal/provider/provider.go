// Package provider holds Lambda, the one list of the adapters a deployment
// can run (each declared in its own package's register.go), which the
// Lambda functions that call a sandbox provider link. Only the functions
// that need a provider import it (functions/status links none of it); the
// local stack adds the local provider and the fake
// (internal/localstack.Adapters). It imports the adapters and their
// declarations only: the provider hook handler is internal/providerhook's.
package provider

import (
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
)

// Lambda returns the adapters the Lambda functions link and a deployment
// may run: adding a provider to Sandman is adding it here
// (docs/DEVELOPMENT.md "Adding a provider"). The in-memory fake and the
// local provider are not among them, so no production function links them.
func Lambda() registry.Set {
	return registry.Set{e2b.Adapter, daytona.Adapter, vercel.Adapter}
}
