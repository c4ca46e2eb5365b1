package infra

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestPoolsFromContext: sandman:pools is read as a JSON array from
// cdk.json or as its text from the command line; anything else is refused
// naming the key.
func TestPoolsFromContext(t *testing.T) {
	newApp := func(t *testing.T, ctx map[string]any) awscdk.App {
		t.Helper()
		return awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	}
	for name, v := range map[string]any{
		"List": []any{map[string]any{"template": "web", "size": 2}},
		"Text": `[{"size":2,"template":"web"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			_, props, err := PropsFromContext(newApp(t, map[string]any{ContextPools: v}))
			if err != nil || props.Pools != `[{"size":2,"template":"web"}]` {
				t.Errorf("Pools = %q, %v", props.Pools, err)
			}
		})
	}
	for name, v := range map[string]any{"NotJSON": "[{", "NotAList": 3} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := PropsFromContext(newApp(t, map[string]any{ContextPools: v})); err == nil || !strings.Contains(err.Error(), ContextPools) {
				t.Errorf("error %v, want one naming %s", err, ContextPools)
			}
		})
	}
}

// TestPoolsReachTheirFunctions: SANDMAN_POOLS is set on the functions that
// claim, list and refill pools (sessions, idlepause) and on no other; both
// may query a pool's partition; the stopped-pool alarm watches PoolsStopped.
func TestPoolsReachTheirFunctions(t *testing.T) {
	const pools = `[{"template":"web","size":2}]`
	s := MustSynth(t, &SandmanStackProps{Pools: pools})
	for _, name := range routes.Functions {
		fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, set := vars[envnames.Pools]
		want := name == routes.Sessions || name == routes.IdlePause
		if set != want || (set && got != pools) {
			t.Errorf("%s: %s = %v (set %v), want set %v", name, envnames.Pools, got, set, want)
		}
	}
	policies := canonical(s.ofType("AWS::IAM::Policy"))
	if n := strings.Count(policies, `"POOL#*"`); n < 2 {
		t.Errorf("POOL#* query keys granted %d times, want sessions and idlepause", n)
	}
	alarm := s.resource(t, s.logicalID(t, "PoolStoppedAlarm"), "AWS::CloudWatch::Alarm")
	if doc := canonical(alarm.Properties); !strings.Contains(doc, `"`+metrics.PoolsStopped+`"`) {
		t.Errorf("PoolStoppedAlarm = %s, want it on %s", doc, metrics.PoolsStopped)
	}
}
