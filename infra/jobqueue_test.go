package infra

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/routes"
)

// jobQueueWant is what checkJobQueue expects of one job queue (jobqueue.go):
// the queue and its dead-letter queue, the one function it feeds, who may
// send to it, and its age alarm.
type jobQueueWant struct {
	// name is the jobQueueSpec's name (<name>Queue, <name>DLQ).
	name string
	// visibility and maxReceives are the queue's.
	visibility  time.Duration
	maxReceives int
	// consumer is the function the queue feeds, in batches of batchSize
	// with at most concurrency invocations at once.
	consumer    string
	batchSize   int
	concurrency float64
	// senders are the functions that may sqs:SendMessage to the queue;
	// urlEnv, when set, is the variable that gives each of them (and no
	// other function) its URL.
	senders []string
	urlEnv  string
	// oldestAge is the age alarm's threshold.
	oldestAge time.Duration
}

// checkJobQueue pins the parts every job queue shares, as subtests: both
// queues SQS-encrypted and SSL-only with the redrive policy; one event
// source mapping to the consumer with batch item failures and a maximum
// concurrency; the consumer's and the senders' actions on the queue and no
// other function's; the dead-letter depth and oldest message age alarms.
// It returns the queue's and the dead-letter queue's logical ids for the
// caller's own checks.
func checkJobQueue(t *testing.T, s *synthesized, want jobQueueWant) (queueID, dlqID string) {
	t.Helper()
	queueID, dlqID = s.logicalID(t, want.name+"Queue"), s.logicalID(t, want.name+"DLQ")
	queueArn := canonical(getAtt(queueID, "Arn"))

	t.Run("Queue", func(t *testing.T) {
		queue := s.resource(t, queueID, "AWS::SQS::Queue")
		if got, want := prop(queue, "VisibilityTimeout"), want.visibility.Seconds(); got != want {
			t.Errorf("VisibilityTimeout: got %v s, want %v s", got, want)
		}
		redrive := map[string]any{"deadLetterTargetArn": getAtt(dlqID, "Arn"), "maxReceiveCount": float64(want.maxReceives)}
		if got := prop(queue, "RedrivePolicy"); !same(got, redrive) {
			t.Errorf("RedrivePolicy: got %s, want %s", canonical(got), canonical(redrive))
		}
		for _, id := range []string{queueID, dlqID} {
			if got := prop(s.resource(t, id, "AWS::SQS::Queue"), "SqsManagedSseEnabled"); got != true {
				t.Errorf("%s SqsManagedSseEnabled: got %v, want true", id, got)
			}
			mustMatch(t, id+"'s policy denies requests without TLS", func() {
				s.template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
					"Queues": []any{ref(id)},
					"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
						"Effect": "Deny", "Action": "sqs:*",
						"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
						"Principal": map[string]any{"AWS": "*"}, "Resource": getAtt(id, "Arn"),
					}})},
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
			for key, value := range map[string]any{
				"FunctionName":          ref(s.functionID(t, want.consumer)),
				"BatchSize":             float64(want.batchSize),
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"ScalingConfig":         map[string]any{"MaximumConcurrency": want.concurrency},
			} {
				if got := prop(m, key); !same(got, value) {
					t.Errorf("%s: got %s, want %s", key, canonical(got), canonical(value))
				}
			}
		}
		if found != 1 {
			t.Fatalf("event source mappings on %s: got %d, want 1", queueID, found)
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
			var actions []string
			sender := slices.Contains(want.senders, name)
			if sender {
				actions = []string{"sqs:SendMessage"}
			}
			if name == want.consumer {
				actions = append(actions, "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
					"sqs:GetQueueUrl", "sqs:ReceiveMessage")
			}
			if !same(sorted(got), sorted(actions)) {
				t.Errorf("%s: actions on %s %v, want %v", name, queueID, sorted(got), sorted(actions))
			}
			if want.urlEnv == "" {
				continue
			}
			env := canonical(prop(s.resource(t, s.functionID(t, name), "AWS::Lambda::Function"), "Environment"))
			if has := strings.Contains(env, want.urlEnv); has != sender {
				t.Errorf("%s: %s set %v, want %v", name, want.urlEnv, has, sender)
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
				age = prop(a, "Threshold") == want.oldestAge.Seconds()
			}
		}
		if !depth || !age {
			t.Errorf("alarms: dead-letter depth %v, oldest message age %v; want both", depth, age)
		}
	})
	return queueID, dlqID
}
