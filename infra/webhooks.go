package infra

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// Outbound webhooks in AWS (docs/WEBHOOKS.md "How it runs"): a rule on the bus
// sends every lifecycle event to the webhook queue; the deliver function
// consumes it (internal/delivery/sqsqueue), puts each retry back on the
// same queue with a delay (never sleeping) and copies an exhausted
// delivery to the dead-letter queue, which also takes any message the
// function keeps failing on (redrive). The sessions function may send to
// the queue too: a replay (POST …/deliveries/{id}/retry) is a job message.

// Settings of the webhook queue and the deliver function (ours).
const (
	// deliverTimeout is the deliver function's Lambda timeout: a batch's
	// messages run deliverConcurrency at a time, each attempt at most 15 s
	// (delivery.AttemptTimeout) plus a few table operations.
	deliverTimeout = time.Minute
	// deliverBatchSize is the most messages per deliver invocation.
	deliverBatchSize = 10
	// webhookVisibility is 6 × the deliver timeout, as Lambda recommends
	// for SQS event sources.
	webhookVisibility = 6 * deliverTimeout
	// webhookMaxReceives: a message that failed this often (a store
	// outage, a bug) moves to the dead-letter queue.
	webhookMaxReceives = 5
	// webhookOldestAgeAlarm: the longest delay a message carries (15 min)
	// plus 5 minutes of the function falling behind.
	webhookOldestAgeAlarm = 20 * time.Minute
	// DefaultDeliverConcurrency is the queue event source's maximum
	// concurrency: deliver invocations at once (ours; one endpoint's slow
	// answers hold at most its own messages for 15 s each).
	DefaultDeliverConcurrency = 10
)

// webhookQueueSpec is the webhook queue, fed to the deliver function.
var webhookQueueSpec = jobQueueSpec{
	name:        "Webhook",
	visibility:  webhookVisibility,
	maxReceives: webhookMaxReceives,
	dlqAlarm:    "Sandman webhook deliveries that ran out of retries or failed to run (dead-letter queue)",
	ageAlarm:    "Sandman deliver function behind the webhook queue (oldest message over 20 min)",
	oldestAge:   webhookOldestAgeAlarm,
}

// webhookSenders may send to the webhook queue: the deliver function
// (retries) and the sessions function (replays).
var webhookSenders = []string{routes.Deliver, routes.Sessions}

// newWebhooks creates the webhook queue, its dead-letter queue, the rule
// feeding it, the deliver function's event source, the grants and the
// alarms (dead letters, the oldest message's age).
func newWebhooks(stack awscdk.Stack, functions map[string]awslambda.Function, bus awsevents.EventBus) {
	q := newJobQueue(stack, webhookQueueSpec)
	queue, dlq := q.queue, q.dlq
	awsevents.NewRule(stack, jsii.String("WebhookRule"), &awsevents.RuleProps{
		Description:  jsii.String("Hands every Sandman lifecycle event to the webhook delivery queue"),
		EventBus:     bus,
		EventPattern: &awsevents.EventPattern{Source: jsii.Strings(lifecycle.EventSource)},
		Targets:      &[]awsevents.IRuleTarget{awseventstargets.NewSqsQueue(queue, &awseventstargets.SqsQueueProps{})},
	})
	for _, name := range webhookSenders {
		q.grantSend(functions[name], envnames.WebhookQueueURL)
	}
	deliver := functions[routes.Deliver]
	grantSendTo(deliver, dlq, envnames.WebhookDLQURL)
	q.feed(stack, deliver, deliverBatchSize, DefaultDeliverConcurrency)
}
