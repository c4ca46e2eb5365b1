package infra

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// jobQueueSpec describes one of the stack's job queues (timers, readiness
// jobs, webhook deliveries, pool refills): an SQS queue with a dead-letter
// queue, fed to one function, with two alarms.
type jobQueueSpec struct {
	// name prefixes the logical ids: <name>Queue, <name>DLQ,
	// <name>DLQAlarm and <name>QueueAgeAlarm. Changing it replaces the
	// deployed queues.
	name string
	// fifo makes a FIFO queue (and dead-letter queue), deduplicated by the
	// sender's ids: messages of one group go to one invocation at a time.
	fifo bool
	// visibility is the queue's visibility timeout.
	visibility time.Duration
	// maxReceives is how many times a message is delivered before it
	// moves to the dead-letter queue.
	maxReceives int
	// dlqAlarm and ageAlarm describe the two alarms; oldestAge is the age
	// of the oldest message past which the second fires.
	dlqAlarm, ageAlarm string
	oldestAge          time.Duration
}

// jobQueue is a job queue and its dead-letter queue, both SQS-encrypted
// (SQS-managed keys, so no KMS grants) and SSL-only.
type jobQueue struct {
	queue, dlq awssqs.Queue
	spec       jobQueueSpec
}

// newJobQueue creates spec's queue and its dead-letter queue, which keeps
// messages 14 days.
func newJobQueue(stack awscdk.Stack, spec jobQueueSpec) jobQueue {
	var fifo *bool
	if spec.fifo {
		fifo = jsii.Bool(true) // the CDK names both queues ….fifo
	}
	dlq := awssqs.NewQueue(stack, jsii.String(spec.name+"DLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Fifo:            fifo,
	})
	// No SQS3 suppression: cdk-nag sees dlq is the queue's dead-letter queue.
	queue := awssqs.NewQueue(stack, jsii.String(spec.name+"Queue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(spec.visibility.Seconds())),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(spec.maxReceives)},
		Fifo:              fifo,
	})
	return jobQueue{queue: queue, dlq: dlq, spec: spec}
}

// grantSend lets fn send to the queue (sqs:SendMessage on it only) and
// puts the queue's URL in fn's environment variable urlEnv.
func (q jobQueue) grantSend(fn awslambda.Function, urlEnv string) {
	grantSendTo(fn, q.queue, urlEnv)
}

// grantSendTo lets fn send to queue and puts its URL in urlEnv.
func grantSendTo(fn awslambda.Function, queue awssqs.Queue, urlEnv string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(*queue.QueueArn()),
	}))
	fn.AddEnvironment(jsii.String(urlEnv), queue.QueueUrl(), nil)
}

// feed makes the queue fn's event source (batches of batchSize, batch item
// failures reported, at most maxConcurrency invocations at once) and adds
// the two alarms: anything in the dead-letter queue, and the oldest message
// older than spec.oldestAge. Errors and throttles have theirs in newAlarms.
func (q jobQueue) feed(stack awscdk.Stack, fn awslambda.Function, batchSize int, maxConcurrency float64) {
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(batchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(maxConcurrency),
	}))
	period := awscdk.Duration_Minutes(jsii.Number(5))
	awscloudwatch.NewAlarm(stack, jsii.String(q.spec.name+"DLQAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(q.spec.dlqAlarm),
		Metric: q.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	awscloudwatch.NewAlarm(stack, jsii.String(q.spec.name+"QueueAgeAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(q.spec.ageAlarm),
		Metric: q.queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(q.spec.oldestAge.Seconds()),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
