package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestWebhooks pins the AWS side of docs/WEBHOOKS.md: the rule from the bus
// to the encrypted webhook queue with its dead-letter queue, the deliver
// function on it with batch item failures and bounded concurrency,
// sqs:SendMessage on the queue for exactly the deliver and sessions
// functions and on the dead-letter queue for deliver alone, and the alarms.
func TestWebhooks(t *testing.T) {
	s := MustDefaultStack(t)
	queueID, dlqID := s.logicalID(t, "WebhookQueue"), s.logicalID(t, "WebhookDLQ")
	queueArn, dlqArn := canonical(getAtt(queueID, "Arn")), canonical(getAtt(dlqID, "Arn"))
	fnID := s.functionID(t, routes.Deliver)

	t.Run("Queue", func(t *testing.T) {
		queue := s.resource(t, queueID, "AWS::SQS::Queue")
		if got, want := prop(queue, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("SqsManagedSseEnabled: got %v, want %v", got, want)
		}
		if got, want := prop(queue, "VisibilityTimeout"), webhookVisibility.Seconds(); got != want {
			t.Errorf("VisibilityTimeout: got %v s, want %v s", got, want)
		}
		want := map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(webhookMaxReceives)}
		if got := prop(queue, "RedrivePolicy"); !same(got, want) {
			t.Errorf("RedrivePolicy: got %s, want %s", canonical(got), canonical(want))
		}
		if got, want := prop(s.resource(t, dlqID, "AWS::SQS::Queue"), "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("DLQ SqsManagedSseEnabled: got %v, want %v", got, want)
		}
	})

	t.Run("Rule", func(t *testing.T) {
		rule := s.resource(t, s.logicalID(t, "WebhookRule"), "AWS::Events::Rule")
		if got, want := prop(rule, "EventPattern"), map[string]any{"source": []any{lifecycle.EventSource}}; !same(got, want) {
			t.Errorf("EventPattern: got %s, want %s", canonical(got), canonical(want))
		}
		targets, _ := prop(rule, "Targets").([]any)
		if len(targets) != 1 || !same(targets[0].(map[string]any)["Arn"], getAtt(queueID, "Arn")) {
			t.Errorf("Targets: got %s, want the webhook queue", canonical(targets))
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
				"BatchSize":             float64(deliverBatchSize),
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": float64(DefaultDeliverConcurrency)},
			} {
				if got := prop(m, key); !same(got, want) {
					t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(want))
				}
			}
		}
		if found != 1 {
			t.Fatalf("event source mappings on the webhook queue: got %d, want 1", found)
		}
	})

	t.Run("Grants", func(t *testing.T) {
		all := s.statements(t)
		for _, name := range routes.Functions {
			var onQueue, onDLQ []string
			for a, resources := range s.functionActions(t, all, name) {
				if slices.Contains(resources, queueArn) {
					onQueue = append(onQueue, a)
				}
				if slices.Contains(resources, dlqArn) {
					onDLQ = append(onDLQ, a)
				}
			}
			var wantQueue, wantDLQ []string
			if slices.Contains(webhookSenders, name) {
				wantQueue = []string{"sqs:SendMessage"}
			}
			if name == routes.Deliver {
				wantQueue = append(wantQueue, "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
					"sqs:GetQueueUrl", "sqs:ReceiveMessage")
				wantDLQ = []string{"sqs:SendMessage"}
			}
			if !same(sorted(onQueue), sorted(wantQueue)) {
				t.Errorf("%s: actions on the webhook queue %v, want %v", name, sorted(onQueue), sorted(wantQueue))
			}
			if !same(sorted(onDLQ), sorted(wantDLQ)) {
				t.Errorf("%s: actions on the webhook dead-letter queue %v, want %v", name, sorted(onDLQ), sorted(wantDLQ))
			}
		}
		// Its Query reaches the accounts' endpoint partitions only.
		for _, st := range all[s.logicalID(t, constructID(routes.Deliver)+"Role")] {
			if !slices.Contains(st.actions, "dynamodb:Query") {
				continue
			}
			if cond := canonical(st.raw["Condition"]); !strings.Contains(cond, "dynamodb:LeadingKeys") ||
				!strings.Contains(cond, "WHEP#*") || strings.Contains(cond, "SESSION#") || strings.Contains(cond, "APIKEY") {
				t.Errorf("deliver may Query the table with condition %s, want LeadingKeys WHEP#* only", cond)
			}
		}
		for a := range s.functionActions(t, all, routes.Deliver) {
			if strings.HasPrefix(a, "secretsmanager:") || strings.HasPrefix(a, "events:") {
				t.Errorf("deliver may %s: it holds no secret and publishes nothing", a)
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
				age = prop(a, "Threshold") == webhookOldestAgeAlarm.Seconds()
			}
		}
		if !depth || !age {
			t.Errorf("alarms: DLQ depth %v, oldest message age %v; want both", depth, age)
		}
	})
}
