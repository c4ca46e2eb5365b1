package infra

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestTimers pins the AWS side of docs/DESIGN.md "Precise pausing":
// the encrypted, SSL-only timer queue with its dead-letter queue, the timer function
// on it with batch item failures and the maximum concurrency that bounds the
// provider's pause rate, sqs:SendMessage on that queue for exactly the
// functions that arm timers, and the alarms on the queue.
func TestTimers(t *testing.T) {
	s := MustDefaultStack(t)
	checkJobQueue(t, s, jobQueueWant{
		name: "Timer", visibility: timerVisibility, maxReceives: timerMaxReceives,
		consumer: routes.Timer, batchSize: timerBatchSize, concurrency: DefaultPauserConcurrency,
		senders: timerFunctions, urlEnv: envnames.TimerQueueURL, oldestAge: timerOldestAgeAlarm,
	})

	t.Run("ConcurrencyProp", func(t *testing.T) {
		custom := MustSynth(t, &SandmanStackProps{PauserConcurrency: 40})
		var got []any
		queueID := custom.logicalID(t, "TimerQueue")
		for _, m := range custom.ofType("AWS::Lambda::EventSourceMapping") {
			if c := prop(m, "ScalingConfig"); c != nil && same(prop(m, "EventSourceArn"), getAtt(queueID, "Arn")) {
				got = append(got, c)
			}
		}
		if want := []any{map[string]any{"MaximumConcurrency": 40.0}}; !same(got, want) {
			t.Errorf("ScalingConfig: got %s, want %s", canonical(got), canonical(want))
		}
	})
}

// TestSweepFailureGoesToDLQ: a sweep that errors (not retried) is sent to
// the schedule's dead-letter queue by an on-failure destination, so the DLQ
// alarm covers failed sweeps as well as undelivered ticks.
func TestSweepFailureGoesToDLQ(t *testing.T) {
	s := MustDefaultStack(t)
	dlq := canonical(getAtt(s.logicalID(t, "IdlePauseScheduleDLQ"), "Arn"))
	configs := map[string]cfnResource{} // the idle pause function's (the notifier has its own, TestClientChannel)
	for id, c := range s.ofType("AWS::Lambda::EventInvokeConfig") {
		if same(prop(c, "FunctionName"), ref(s.functionID(t, routes.Sweep))) {
			configs[id] = c
		}
	}
	if len(configs) != 1 {
		t.Fatalf("%d EventInvokeConfig, want 1 (the idle pause function's)", len(configs))
	}
	for id, c := range configs {
		dest, _ := c.Properties["DestinationConfig"].(map[string]any)
		onFailure, _ := dest["OnFailure"].(map[string]any)
		if got := canonical(onFailure["Destination"]); got != dlq {
			t.Errorf("%s: on-failure destination %s, want the schedule DLQ %s", id, got, dlq)
		}
	}
	role := s.functionActions(t, s.statements(t), routes.Sweep)
	if got := role["sqs:SendMessage"]; !slices.Contains(got, dlq) {
		t.Errorf("idle pause may sqs:SendMessage on %v, want the DLQ", got)
	}
}
