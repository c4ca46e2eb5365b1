package infra

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// TestGuardHeadroomReachesTheProviderCallers: SandmanStackProps.GuardHeadroom
// reaches every function that calls a provider (they create, resume and
// refresh the guard) as SANDMAN_GUARD_HEADROOM, and no other; the default
// stack sets it nowhere (the functions' own default).
func TestGuardHeadroomReachesTheProviderCallers(t *testing.T) {
	s := optionsStack(t)
	for _, spec := range functionSpecs {
		fn := s.resource(t, s.functionID(t, spec.name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, ok := vars[envnames.GuardHeadroom]
		if spec.providerKey && got != optionsHeadroom.String() {
			t.Errorf("%s: %s = %v, want %v", spec.name, envnames.GuardHeadroom, got, optionsHeadroom)
		}
		if !spec.providerKey && ok {
			t.Errorf("%s calls no provider but gets %s", spec.name, envnames.GuardHeadroom)
		}
	}
	for id, fn := range MustDefaultStack(t).ofType("AWS::Lambda::Function") {
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		if v, ok := vars[envnames.GuardHeadroom]; ok {
			t.Errorf("default stack: %s sets %s = %v, want it unset", id, envnames.GuardHeadroom, v)
		}
	}
}

// TestGuardHeadroomFromContext: sandman:guardHeadroom is read as a Go
// duration; anything else is refused naming the key.
func TestGuardHeadroomFromContext(t *testing.T) {
	newApp := func(t *testing.T, ctx map[string]any) awscdk.App {
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	}
	_, props, err := PropsFromContext(newApp(t, map[string]any{ContextGuardHeadroom: "15m"}))
	if err != nil || props.GuardHeadroom != 15*time.Minute {
		t.Fatalf("PropsFromContext(15m) = %v, %v; want 15m", props.GuardHeadroom, err)
	}
	for _, v := range []any{"0s", "-5m", "soon", 900} {
		if _, _, err := PropsFromContext(newApp(t, map[string]any{ContextGuardHeadroom: v})); err == nil || !strings.Contains(err.Error(), ContextGuardHeadroom) {
			t.Errorf("PropsFromContext(%#v) = %v, want an error naming %s", v, err, ContextGuardHeadroom)
		}
	}
}

// TestStackRefusesGuardHeadroomBeyondCap: a headroom that does not fit under
// the max provider timeout with the default idle timeout (both possibly from
// the provider settings) is refused before deploy, as the functions would
// refuse it at cold start.
func TestStackRefusesGuardHeadroomBeyondCap(t *testing.T) {
	for _, tc := range []struct {
		headroom time.Duration
		settings map[string]string
		refused  bool
	}{
		{headroom: 0},
		{headroom: 47*time.Minute + 30*time.Second}, // 10 + 0:30 + 2 + 47:30 = 1 h
		{headroom: 48 * time.Minute, refused: true},
		{headroom: 48 * time.Minute, settings: map[string]string{envnames.MaxProviderTimeout: "24h"}},
		{headroom: 20 * time.Minute, settings: map[string]string{envnames.IdleTimeout: "40m"}, refused: true},
		{headroom: 20 * time.Minute, settings: map[string]string{envnames.ProviderGrace: "later"}, refused: true},
	} {
		err := checkGuardHeadroom(SandmanStackProps{GuardHeadroom: tc.headroom, ProviderSettings: tc.settings})
		if (err != nil) != tc.refused {
			t.Errorf("headroom %v, settings %v: %v, want refused %v", tc.headroom, tc.settings, err, tc.refused)
		}
	}
}

// TestGovernorShardsReachTheProviderCallers: every function that calls a
// provider gets SANDMAN_GOVERNOR_SHARDS (DefaultGovernorShards), the
// others none.
func TestGovernorShardsReachTheProviderCallers(t *testing.T) {
	s := MustDefaultStack(t)
	for _, spec := range functionSpecs {
		fn := s.resource(t, s.functionID(t, spec.name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, ok := vars[envnames.GovernorShards]
		if spec.providerKey && got != strconv.Itoa(DefaultGovernorShards) {
			t.Errorf("%s: %s = %v, want %d", spec.name, envnames.GovernorShards, got, DefaultGovernorShards)
		}
		if !spec.providerKey && ok {
			t.Errorf("%s calls no provider but gets %s", spec.name, envnames.GovernorShards)
		}
	}
}
