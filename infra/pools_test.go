package infra

import (
	"slices"
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
// claim, list and refill pools (sessions, idlepause) and on no other; both
// may query a pool's partition; the stopped-pool alarm watches PoolsStopped.
func TestPoolsReachTheirFunctions(t *testing.T) {
	s := mustPoolsStack(t)
	for _, name := range routes.Functions {
		fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
		vars, _ := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		got, set := vars[envnames.Pools]
		want := name == routes.Sessions || name == routes.IdlePause
		if set != want || (set && got != testPools) {
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
// pools, a FIFO refill queue (and FIFO dead-letter queue) whose visibility
// outlasts the idlepause function, fed to it in batches with a maximum
// concurrency and batch item failures; sqs:SendMessage and the queue's URL
// for the sessions function only; its two alarms. Without pools, none of it.
func TestPoolRefillQueue(t *testing.T) {
	s := mustPoolsStack(t)
	queueID, dlqID := s.logicalID(t, "PoolRefillQueue"), s.logicalID(t, "PoolRefillDLQ")
	queueArn := canonical(getAtt(queueID, "Arn"))

	t.Run("Queue", func(t *testing.T) {
		queue := s.resource(t, queueID, "AWS::SQS::Queue")
		dlq := s.resource(t, dlqID, "AWS::SQS::Queue")
		if prop(queue, "FifoQueue") != true || prop(dlq, "FifoQueue") != true {
			t.Errorf("FifoQueue: queue %v, dead-letter queue %v; want both FIFO", prop(queue, "FifoQueue"), prop(dlq, "FifoQueue"))
		}
		var idle functionSpec
		for _, f := range functionSpecs {
			if f.name == routes.IdlePause {
				idle = f
			}
		}
		if got := prop(queue, "VisibilityTimeout").(float64); got <= idle.timeout.Seconds() {
			t.Errorf("VisibilityTimeout %v s is not above idlepause's timeout %v: a refill under way would be delivered twice", got, idle.timeout)
		}
		want := map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(poolRefillMaxReceives)}
		if got := prop(queue, "RedrivePolicy"); !same(got, want) {
			t.Errorf("RedrivePolicy: got %s, want %s", canonical(got), canonical(want))
		}
	})

	t.Run("EventSource", func(t *testing.T) {
		var found int
		for _, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
			if !same(prop(m, "EventSourceArn"), getAtt(queueID, "Arn")) {
				continue
			}
			found++
			for key, want := range map[string]any{
				"FunctionName":          ref(s.functionID(t, routes.IdlePause)),
				"BatchSize":             float64(poolRefillBatchSize),
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": float64(poolRefillConcurrency)},
			} {
				if got := prop(m, key); !same(got, want) {
					t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(want))
				}
			}
		}
		if found != 1 {
			t.Fatalf("event source mappings on the refill queue: got %d, want 1", found)
		}
	})

	t.Run("Grants", func(t *testing.T) {
		all := s.statements(t)
		for _, name := range routes.Functions {
			var got []string
			for a, resources := range s.functionActions(t, all, name) {
				if slices.Contains(resources, queueArn) {
					got = append(got, a)
				}
			}
			var want []string
			switch name {
			case routes.Sessions:
				want = []string{"sqs:SendMessage"}
			case routes.IdlePause:
				want = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
					"sqs:GetQueueUrl", "sqs:ReceiveMessage"}
			}
			if !same(sorted(got), sorted(want)) {
				t.Errorf("%s: actions on the refill queue %v, want %v", name, sorted(got), sorted(want))
			}
			env := canonical(prop(s.resource(t, s.functionID(t, name), "AWS::Lambda::Function"), "Environment"))
			if has := strings.Contains(env, envnames.PoolRefillQueueURL); has != (name == routes.Sessions) {
				t.Errorf("%s: %s set %v, want %v", name, envnames.PoolRefillQueueURL, has, !has)
			}
		}
	})

	t.Run("Alarms", func(t *testing.T) {
		var depth, age bool
		for _, a := range s.ofType("AWS::CloudWatch::Alarm") {
			dims := canonical(prop(a, "Dimensions"))
			switch {
			case prop(a, "MetricName") == "ApproximateNumberOfMessagesVisible" && strings.Contains(dims, dlqID):
				depth = prop(a, "Threshold") == 0.0
			case prop(a, "MetricName") == "ApproximateAgeOfOldestMessage" && strings.Contains(dims, queueID) && !strings.Contains(dims, dlqID):
				age = prop(a, "Threshold") == poolRefillOldestAgeAlarm.Seconds()
			}
		}
		if !depth || !age {
			t.Errorf("alarms: DLQ depth %v, oldest request age %v; want both", depth, age)
		}
	})

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
