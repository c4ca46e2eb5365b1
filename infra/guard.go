package infra

import (
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// checkGuardHeadroom refuses a SandmanStackProps.GuardHeadroom that the
// functions would refuse at cold start (internal/app): one that does not
// fit under the max provider timeout with the default idle timeout,
// activity granularity and provider grace, each taken from ProviderSettings
// when set there, else lifecycle.DefaultPolicy
// (lifecycle.Policy.CheckGuardHeadroom). NewSandmanStack reports it as an
// error annotation, so `cdk synth` fails instead of deploying functions
// that refuse to start. docs/DESIGN.md "Belt and braces".
func checkGuardHeadroom(p SandmanStackProps) error {
	if p.GuardHeadroom == 0 {
		return nil
	}
	pol := lifecycle.DefaultPolicy()
	pol.GuardHeadroom = p.GuardHeadroom
	for _, o := range []struct {
		name string
		dst  *time.Duration
	}{
		{envnames.IdleTimeout, &pol.DefaultIdleTimeout},
		{envnames.ActivityGranularity, &pol.ActivityGranularity},
		{envnames.ProviderGrace, &pol.ProviderGrace},
		{envnames.MaxProviderTimeout, &pol.MaxProviderTimeout},
	} {
		v, ok := p.ProviderSettings[o.name]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("context %s: %s=%q: want a positive duration such as 90s or 10m", ContextProviderSettings, o.name, v)
		}
		*o.dst = d
	}
	if err := pol.CheckGuardHeadroom(); err != nil {
		return fmt.Errorf("context %s: %w", ContextGuardHeadroom, err)
	}
	return nil
}
