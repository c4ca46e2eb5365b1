package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/envnames"
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
	queueID, dlqID := checkJobQueue(t, s, jobQueueWant{
		name: "Webhook", visibility: webhookVisibility, maxReceives: webhookMaxReceives,
		consumer: routes.Deliver, batchSize: deliverBatchSize, concurrency: DefaultDeliverConcurrency,
		senders: webhookSenders, urlEnv: envnames.WebhookQueueURL, oldestAge: webhookOldestAgeAlarm,
	})
	dlqArn := canonical(getAtt(dlqID, "Arn"))

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

	t.Run("DeliverGrants", func(t *testing.T) {
		all := s.statements(t)
		for _, name := range routes.Functions {
			var onDLQ []string
			for a, resources := range s.functionActions(t, all, name) {
				if slices.Contains(resources, dlqArn) {
					onDLQ = append(onDLQ, a)
				}
			}
			var wantDLQ []string
			if name == routes.Deliver {
				wantDLQ = []string{"sqs:SendMessage"}
			}
			if !same(sorted(onDLQ), sorted(wantDLQ)) {
				t.Errorf("%s: actions on the webhook dead-letter queue %v, want %v", name, sorted(onDLQ), sorted(wantDLQ))
			}
		}
		// Its Query reaches the accounts' endpoint partitions and the
		// endpoints' parking partitions only.
		for _, st := range all[s.logicalID(t, constructID(routes.Deliver)+"Role")] {
			if !slices.Contains(st.actions, "dynamodb:Query") {
				continue
			}
			if cond := canonical(st.raw["Condition"]); !strings.Contains(cond, "dynamodb:LeadingKeys") ||
				!strings.Contains(cond, "WHEP#*") || !strings.Contains(cond, "WHPARK#*") || strings.Contains(cond, "SESSION#") ||
				strings.Contains(cond, "APIKEY") {
				t.Errorf("deliver may Query the table with condition %s, want LeadingKeys WHEP#* and WHPARK#* only", cond)
			}
		}
		for a := range s.functionActions(t, all, routes.Deliver) {
			if strings.HasPrefix(a, "secretsmanager:") || strings.HasPrefix(a, "events:") {
				t.Errorf("deliver may %s: it holds no secret and publishes nothing", a)
			}
		}
	})

}
