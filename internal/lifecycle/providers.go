package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// chooseProvider returns the name of the provider a create asked for: name
// when this service holds it, the default when name is "". Errors: invalid,
// naming the configured providers (docs/DESIGN.md "Providers": a create may name
// "provider"; otherwise the deployment's default).
func (s *Service) chooseProvider(name string) (string, error) {
	if name == "" {
		return s.ProviderName(), nil
	}
	if _, ok := s.providers[name]; ok {
		return name, nil
	}
	return "", Errorf(CodeInvalid, "provider %q is not configured in this deployment; configured: %s",
		clipName(name), strings.Join(s.names, ", "))
}

// clipName shortens a caller-supplied provider name before it goes into a
// message.
func clipName(s string) string {
	const max = 32
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// unconfiguredProvider stands for a provider a session names but this
// service was not configured with: every call fails with an error that says
// so (a configuration problem, not a provider failure).
type unconfiguredProvider struct{ name string }

var _ Provider = unconfiguredProvider{}

func (p unconfiguredProvider) err() error {
	return fmt.Errorf("provider %q is not configured in this deployment", p.name)
}

func (p unconfiguredProvider) Name() string { return p.name }
func (p unconfiguredProvider) Create(context.Context, CreateRequest) (Sandbox, error) {
	return Sandbox{}, p.err()
}
func (p unconfiguredProvider) Get(context.Context, string) (Sandbox, error) {
	return Sandbox{}, p.err()
}
func (p unconfiguredProvider) List(context.Context, ListRequest) (SandboxPage, error) {
	return SandboxPage{}, p.err()
}
func (p unconfiguredProvider) Pause(context.Context, string) error { return p.err() }
func (p unconfiguredProvider) Resume(context.Context, string, time.Duration) (Sandbox, error) {
	return Sandbox{}, p.err()
}
func (p unconfiguredProvider) SetTimeout(context.Context, string, time.Duration) error {
	return p.err()
}
func (p unconfiguredProvider) Probe(context.Context, string) (Probe, error) { return Probe{}, p.err() }
func (p unconfiguredProvider) Kill(context.Context, string) error           { return p.err() }
