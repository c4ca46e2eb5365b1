package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/routes"
)

// TestTimers pins the AWS side of docs/DESIGN.md "Precise pausing":
// the encrypted, SSL-only timer queue with its dead-letter queue, the pauser
// on it with batch item failures and the maximum concurrency that bounds the
// provider's pause rate, sqs:SendMessage on that queue for exactly the
// functions that arm timers, and the alarms on the queue.
func TestTimers(t *testing.T) {
	s := MustDefaultStack(t)
	queueID, dlqID := s.logicalID(t, "TimerQueue"), s.logicalID(t, "TimerDLQ")
	queueArn := canonical(getAtt(queueID, "Arn"))
	fnID := s.functionID(t, routes.Pauser)

	t.Run("Queue", func(t *testing.T) {
		queue := s.resource(t, queueID, "AWS::SQS::Queue")
		if got, want := prop(queue, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("SqsManagedSseEnabled: got %v, want %v", got, want)
		}
		if got, want := prop(queue, "VisibilityTimeout"), (6 * pauserTimeout).Seconds(); got != want {
			t.Errorf("VisibilityTimeout: got %v s, want %v s (6 x the pauser's timeout)", got, want)
		}
		want := map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(timerMaxReceives)}
		if got := prop(queue, "RedrivePolicy"); !same(got, want) {
			t.Errorf("RedrivePolicy: got %s, want %s", canonical(got), canonical(want))
		}
		dlq := s.resource(t, dlqID, "AWS::SQS::Queue")
		if got, want := prop(dlq, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("DLQ SqsManagedSseEnabled: got %v, want %v", got, want)
		}
		for _, id := range []string{queueID, dlqID} {
			mustMatch(t, id+"'s policy denies requests without TLS", func() {
				s.template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
					"Queues": []any{ref(id)},
					"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
						"Effect": "Deny", "Action": "sqs:*",
						"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
						"Principal": map[string]any{"AWS": "*"}, "Resource": getAtt(id, "Arn"),
					}}},
				})
			})
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
				"FunctionName":          ref(fnID),
				"BatchSize":             float64(timerBatchSize),
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": float64(DefaultPauserConcurrency)},
			} {
				if got := prop(m, key); !same(got, want) {
					t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(want))
				}
			}
		}
		if found != 1 {
			t.Fatalf("event source mappings on the timer queue: got %d, want 1", found)
		}
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

	// Exactly the timer functions may send to the queue, SendMessage only;
	// the pauser alone consumes it.
	t.Run("Grants", func(t *testing.T) {
		all := s.statements(t)
		for _, name := range routes.Functions {
			sqs := map[string][]string{}
			for a, resources := range s.functionActions(t, all, name) {
				for _, r := range resources {
					if r == queueArn {
						sqs[a] = append(sqs[a], r)
					}
				}
			}
			var got []string
			for a := range sqs {
				got = append(got, a)
			}
			var want []string
			if slices.Contains(timerFunctions, name) {
				want = []string{"sqs:SendMessage"}
			}
			if name == routes.Pauser {
				want = append(want, "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
					"sqs:GetQueueUrl", "sqs:ReceiveMessage")
			}
			if !same(sorted(got), sorted(want)) {
				t.Errorf("%s: actions on the timer queue %v, want %v", name, sorted(got), sorted(want))
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
				age = prop(a, "Threshold") == timerOldestAgeAlarm.Seconds()
			}
		}
		if !depth || !age {
			t.Errorf("alarms: DLQ depth %v, oldest timer age %v; want both", depth, age)
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
		if same(prop(c, "FunctionName"), ref(s.functionID(t, routes.IdlePause))) {
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
	role := s.functionActions(t, s.statements(t), routes.IdlePause)
	if got := role["sqs:SendMessage"]; !slices.Contains(got, dlq) {
		t.Errorf("idle pause may sqs:SendMessage on %v, want the DLQ", got)
	}
}
