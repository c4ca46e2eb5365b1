package infra

import (
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// checkLease refuses settings (SandmanStackProps.ProviderSettings, the
// variables set on the functions that call providers) whose lease is
// shorter than the longest operation holding one: lifecycle.MinLeaseDuration
// of the provider call timeout they set, the bound the functions apply at
// cold start too (internal/app). NewSandmanStack reports it as an error
// annotation, so `cdk synth` fails instead of deploying functions that
// refuse to start. docs/DESIGN.md "Session states".
func checkLease(settings map[string]string) error {
	lease := lifecycle.DefaultPolicy().LeaseDuration
	var call time.Duration
	for _, o := range []struct {
		name string
		dst  *time.Duration
	}{{envnames.LeaseDuration, &lease}, {envnames.ProviderCallTimeout, &call}} {
		v, ok := settings[o.name]
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("context %s: %s=%q: want a positive duration such as 90s or 10m", ContextProviderSettings, o.name, v)
		}
		*o.dst = d
	}
	if least := lifecycle.MinLeaseDuration(call); lease < least {
		return fmt.Errorf("context %s: %s=%v is shorter than the longest operation holding a lease (%v request, or provider call and settle write, plus margin): set at least %v",
			ContextProviderSettings, envnames.LeaseDuration, lease, lifecycle.MaxRequestDuration, least)
	}
	return nil
}
