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

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/routes"
)

// readinessArmers are the functions whose commits may make a session with
// an app running (create, resume, a pause rolled back, a resumed webhook,
// a reconcile) and so queue its readiness job (lifecycle.ReadinessJobs),
// and the readiness function, which continues a job near its deadline in a
// new message: they may send to the readiness queue (sqs:SendMessage only)
// and get its URL in envnames.ReadinessQueueURL (docs/READINESS.md
// "Where it runs").
var readinessArmers = []string{routes.Sessions, routes.Resume, routes.Snapshot, routes.Reconnect, routes.Webhook,
	routes.IdlePause, routes.Pauser, routes.Channel, routes.Readiness}

// Settings of the readiness queue and the readiness function's event
// source mapping (ours).
const (
	// readinessTimeout is the readiness function's Lambda timeout: a job
	// probes for up to this long, less sqsjobs.DeadlineMargin, then
	// continues in a new message.
	readinessTimeout = 2 * time.Minute
	// readinessBatchSize is one job per invocation: jobs wait on apps, so
	// a batch would make the last job wait for the first.
	readinessBatchSize = 1
	// readinessMaxReceives is how many times a failing job is delivered
	// before it moves to the dead-letter queue.
	readinessMaxReceives = 5
	// readinessVisibility is the queue's visibility timeout: the
	// function's timeout plus a minute, so a job whose function died is
	// delivered again soon (batches of one are never throttled past
	// the event source's maximum concurrency).
	readinessVisibility = readinessTimeout + time.Minute
	// readinessOldestAgeAlarm is the age of the oldest job past which its
	// alarm fires: users wait on these jobs.
	readinessOldestAgeAlarm = 2 * time.Minute
)

// DefaultReadinessConcurrency is SandmanStackProps.ReadinessConcurrency's
// default.
const DefaultReadinessConcurrency = 20

// newReadinessQueue creates the readiness job queue and its dead-letter
// queue, both SQS-encrypted and SSL-only.
func newReadinessQueue(stack awscdk.Stack) (queue, dlq awssqs.Queue) {
	dlq = awssqs.NewQueue(stack, jsii.String("ReadinessDLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	queue = awssqs.NewQueue(stack, jsii.String("ReadinessQueue"), &awssqs.QueueProps{
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(readinessVisibility.Seconds())),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(readinessMaxReceives)},
	})
	return queue, dlq
}

// grantReadinessJobs lets fn send jobs to queue and tells it the queue's URL.
func grantReadinessJobs(fn awslambda.Function, queue awssqs.Queue) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(*queue.QueueArn()),
	}))
	fn.AddEnvironment(jsii.String(envnames.ReadinessQueueURL), queue.QueueUrl(), nil)
}

// newReadiness feeds the readiness queue to the readiness function, one job
// per invocation, batch item failures reported, at most
// p.ReadinessConcurrency at once; alarms fire on anything in the
// dead-letter queue and on a job waiting longer than
// readinessOldestAgeAlarm.
func newReadiness(stack awscdk.Stack, fn awslambda.Function, queue, dlq awssqs.Queue, p SandmanStackProps) {
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(queue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(readinessBatchSize),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(p.ReadinessConcurrency),
	}))
	period := awscdk.Duration_Minutes(jsii.Number(5))
	awscloudwatch.NewAlarm(stack, jsii.String("ReadinessDLQAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman readiness jobs the readiness function gave up on (dead-letter queue)"),
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	awscloudwatch.NewAlarm(stack, jsii.String("ReadinessQueueAgeAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman readiness function behind its queue (oldest job over 2 min)"),
		Metric: queue.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{
			Period: period, Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(readinessOldestAgeAlarm.Seconds()),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
