package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestReadinessJobs pins the AWS side of docs/READINESS.md "Where it
// runs": the encrypted readiness queue with its dead-letter queue, the
// readiness function on it one job at a time with batch item failures and a
// maximum concurrency, sqs:SendMessage and the queue URL for exactly the
// functions that may queue a job, and the alarms on the queue.
func TestReadinessJobs(t *testing.T) {
	s := MustDefaultStack(t)
	queueID, dlqID := s.logicalID(t, "ReadinessQueue"), s.logicalID(t, "ReadinessDLQ")
	queueArn := canonical(getAtt(queueID, "Arn"))

	t.Run("Queue", func(t *testing.T) {
		queue := s.resource(t, queueID, "AWS::SQS::Queue")
		if got, want := prop(queue, "VisibilityTimeout"), readinessVisibility.Seconds(); got != want {
			t.Errorf("VisibilityTimeout: got %v s, want %v s", got, want)
		}
		if got := prop(queue, "VisibilityTimeout").(float64); got <= readinessTimeout.Seconds() {
			t.Errorf("VisibilityTimeout %v s is not above the function's timeout %v: a running job would be delivered twice", got, readinessTimeout)
		}
		want := map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(readinessMaxReceives)}
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
				"FunctionName":          ref(s.functionID(t, routes.Readiness)),
				"BatchSize":             float64(readinessBatchSize),
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": float64(DefaultReadinessConcurrency)},
			} {
				if got := prop(m, key); !same(got, want) {
					t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(want))
				}
			}
		}
		if found != 1 {
			t.Fatalf("event source mappings on the readiness queue: got %d, want 1", found)
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
			if slices.Contains(readinessArmers, name) {
				want = []string{"sqs:SendMessage"}
			}
			if name == routes.Readiness {
				want = append(want, "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
					"sqs:GetQueueUrl", "sqs:ReceiveMessage")
			}
			if !same(sorted(got), sorted(want)) {
				t.Errorf("%s: actions on the readiness queue %v, want %v", name, sorted(got), sorted(want))
			}
			env := canonical(prop(s.resource(t, s.functionID(t, name), "AWS::Lambda::Function"), "Environment"))
			if has := strings.Contains(env, envnames.ReadinessQueueURL); has != slices.Contains(readinessArmers, name) {
				t.Errorf("%s: %s set %v, want %v", name, envnames.ReadinessQueueURL, has, !has)
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
				age = prop(a, "Threshold") == readinessOldestAgeAlarm.Seconds()
			}
		}
		if !depth || !age {
			t.Errorf("alarms: DLQ depth %v, oldest job age %v; want both", depth, age)
		}
	})
}
