package infra

import (
	"strings"
	"sync"
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
// claim, list and refill pools (sessions, sweep) and on no other; both
// may query a pool's partition; the stopped-pool alarm watches PoolsStopped.
func TestPoolsReachTheirFunctions(t *testing.T) {
	s := mustPoolsStack(t)
	for _, name := range routes.Functions {
		fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, set := vars[envnames.Pools]
		want := name == routes.Sessions || name == routes.Sweep
		if set != want || (set && got != testPools) {
			t.Errorf("%s: %s = %v (set %v), want set %v", name, envnames.Pools, got, set, want)
		}
	}
	policies := canonical(s.ofType("AWS::IAM::Policy"))
	if n := strings.Count(policies, `"POOL#*"`); n < 2 {
		t.Errorf("POOL#* query keys granted %d times, want sessions and sweep", n)
	}
	alarm := s.resource(t, s.logicalID(t, "PoolStoppedAlarm"), "AWS::CloudWatch::Alarm")
	if doc := canonical(alarm.Properties); !strings.Contains(doc, `"`+metrics.PoolsStopped+`"`) {
		t.Errorf("PoolStoppedAlarm = %s, want it on %s", doc, metrics.PoolsStopped)
	}
}

// testPools is the pools of mustPoolsStack.
const testPools = `[{"template":"web","size":2}]`

var poolsStack struct {
	once sync.Once
	s    *synthesized
}

// mustPoolsStack returns the stack synthesized with testPools, built once.
func mustPoolsStack(tb testing.TB) *synthesized {
	tb.Helper()
	poolsStack.once.Do(func() { poolsStack.s = MustSynth(tb, &SandmanStackProps{Pools: testPools}) })
	if poolsStack.s == nil {
		tb.Fatal("the pools stack failed to synthesize in an earlier test")
	}
	return poolsStack.s
}

// TestPoolRefillQueue pins the AWS side of docs/POOLS.md "Refill": with
// pools, the job queue shape (checkJobQueue) with the sessions function as
// its only sender and the sweep function as its consumer; FIFO, the
// dead-letter queue too; a visibility that outlasts the sweep's timeout.
// Without pools, none of it.
func TestPoolRefillQueue(t *testing.T) {
	s := mustPoolsStack(t)
	queueID, dlqID := checkJobQueue(t, s, jobQueueWant{
		name: "PoolRefill", visibility: poolRefillVisibility, maxReceives: poolRefillMaxReceives,
		consumer: routes.Sweep, batchSize: poolRefillBatchSize, concurrency: poolRefillConcurrency,
		senders: []string{routes.Sessions}, urlEnv: envnames.PoolRefillQueueURL, oldestAge: poolRefillOldestAgeAlarm,
	})
	for _, id := range []string{queueID, dlqID} {
		if got := prop(s.resource(t, id, "AWS::SQS::Queue"), "FifoQueue"); got != true {
			t.Errorf("%s FifoQueue: got %v, want true (one message group per pool)", id, got)
		}
	}
	for _, f := range functionSpecs {
		if f.name == routes.Sweep && poolRefillVisibility <= f.timeout {
			t.Errorf("refill queue visibility %v is not above the sweep's timeout %v: a refill under way would be delivered twice", poolRefillVisibility, f.timeout)
		}
	}

	t.Run("NoneWithoutPools", func(t *testing.T) {
		d := MustDefaultStack(t)
		for id, q := range d.ofType("AWS::SQS::Queue") {
			if prop(q, "FifoQueue") == true || strings.Contains(id, "PoolRefill") {
				t.Errorf("queue %s in a stack without pools", id)
			}
		}
		env := canonical(prop(d.resource(t, d.functionID(t, routes.Sessions), "AWS::Lambda::Function"), "Environment"))
		if strings.Contains(env, envnames.PoolRefillQueueURL) {
			t.Errorf("%s set on sessions without pools", envnames.PoolRefillQueueURL)
		}
	})
}
