package infra

import (
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestOutbox pins docs/DESIGN.md "Events out" in the stack: the table's stream
// with both images, the publisher function on it with bisect-on-error,
// batch item failures, bounded retries and a dead-letter destination, its
// least-privilege grants, and its alarms.
func TestOutbox(t *testing.T) {
	s := MustDefaultStack(t)
	table := s.resource(t, s.logicalID(t, "SessionsTable"), "AWS::DynamoDB::Table")
	fnID := s.functionID(t, routes.Publisher)

	t.Run("TableStream", func(t *testing.T) {
		spec, _ := prop(table, "StreamSpecification").(map[string]any)
		if got, want := spec["StreamViewType"], tabledef.StreamViewType; got != want {
			t.Fatalf("StreamViewType: got %v, want %v", got, want)
		}
	})

	t.Run("EventSourceMapping", func(t *testing.T) {
		// The publisher's mappings (the timer function's timer queue has its own,
		// pinned by TestTimers).
		esms := map[string]cfnResource{}
		for id, m := range s.ofType("AWS::Lambda::EventSourceMapping") {
			if same(prop(m, "FunctionName"), ref(fnID)) {
				esms[id] = m
			}
		}
		if got, want := len(esms), 1; got != want {
			t.Fatalf("publisher event source mappings: got %d, want %d", got, want)
		}
		for _, m := range esms {
			if got, want := prop(m, "EventSourceArn"), getAtt(s.logicalID(t, "SessionsTable"), "StreamArn"); !same(got, want) {
				t.Errorf("EventSourceArn: got %v, want the table's stream", canonical(got))
			}
			for key, want := range map[string]any{
				"StartingPosition":           "TRIM_HORIZON",
				"BisectBatchOnFunctionError": true,
				"MaximumRetryAttempts":       float64(streamRetryAttempts),
				"ParallelizationFactor":      float64(DefaultPublisherParallelization),
				"BatchSize":                  float64(streamBatchSize),
				"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
			} {
				if got := prop(m, key); !same(got, want) {
					t.Errorf("%s: got %v, want %v", key, canonical(got), canonical(want))
				}
			}
			dest := canonical(prop(m, "DestinationConfig"))
			if !strings.Contains(dest, s.logicalID(t, "PublisherStreamDLQ")) {
				t.Errorf("DestinationConfig: got %s, want the PublisherStreamDLQ queue", dest)
			}
		}
		dlq := s.resource(t, s.logicalID(t, "PublisherStreamDLQ"), "AWS::SQS::Queue")
		if got, want := prop(dlq, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("DLQ SqsManagedSseEnabled: got %v, want %v", got, want)
		}
	})

	t.Run("LeastPrivilege", func(t *testing.T) {
		actions := s.functionActions(t, s.statements(t), routes.Publisher)
		var names []string
		for a := range actions {
			if !strings.HasPrefix(a, "xray:") && !strings.HasPrefix(a, "logs:") {
				names = append(names, a)
			}
		}
		want := []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams",
			"dynamodb:PutItem", "dynamodb:UpdateItem",
			"events:PutEvents", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}
		if !same(sorted(names), sorted(want)) {
			t.Fatalf("publisher actions: got %v, want %v (stream read, the usage transaction's PutItem and UpdateItem, PutEvents, the DLQ)", sorted(names), want)
		}
		stream := canonical(getAtt(s.logicalID(t, "SessionsTable"), "StreamArn"))
		for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"} {
			if !same(actions[a], []string{stream}) {
				t.Errorf("%s on %v, want only the table's stream", a, actions[a])
			}
		}
		bus := canonical(getAtt(s.logicalID(t, "EventBus"), "Arn"))
		if !same(actions["events:PutEvents"], []string{bus}) {
			t.Errorf("events:PutEvents on %v, want only the bus", actions["events:PutEvents"])
		}
		for _, name := range routes.Functions {
			if name == routes.Publisher {
				continue
			}
			fa := s.functionActions(t, s.statements(t), name)
			if _, ok := fa["events:PutEvents"]; ok {
				t.Errorf("%s may still PutEvents: only the publisher publishes", name)
			}
			// GrantReadData lists GetRecords/GetShardIterator on the table
			// and its indexes, which gives no stream access; the stream's
			// own ARN is the publisher's alone.
			for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"} {
				for _, r := range fa[a] {
					if r == stream || strings.Contains(r, "/stream/") {
						t.Errorf("%s may %s on %s: only the publisher reads the stream", name, a, r)
					}
				}
			}
		}
	})

	t.Run("Alarms", func(t *testing.T) {
		var iterator, dlq bool
		for _, a := range s.ofType("AWS::CloudWatch::Alarm") {
			dims := canonical(prop(a, "Dimensions"))
			switch {
			case prop(a, "MetricName") == "IteratorAge" && strings.Contains(dims, fnID):
				iterator = true
				if got, want := prop(a, "Threshold"), float64(iteratorAgeAlarmMS); got != want {
					t.Errorf("IteratorAge threshold: got %v, want %v", got, want)
				}
			case prop(a, "MetricName") == "ApproximateNumberOfMessagesVisible" && strings.Contains(dims, s.logicalID(t, "PublisherStreamDLQ")):
				dlq = true
			}
		}
		if !iterator || !dlq {
			t.Errorf("alarms: iterator age %v, stream DLQ depth %v; want both", iterator, dlq)
		}
	})
}
