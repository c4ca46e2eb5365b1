package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/metrics"
)

// alarmPeriod is the period of the service alarms: the sweep's interval.
var alarmPeriod = awscdk.Duration_Minutes(jsii.Number(5))

// newServiceAlarms adds the alarms on the services the functions stand on,
// each firing on any occurrence in a 5-minute period (missing data is not
// breaching):
//   - TableThrottlesAlarm: DynamoDB throttled requests on the table, every
//     operation the store makes (the hot-key symptom on an on-demand table);
//   - HttpApi5xxAlarm: the HTTP API's 5xx answers;
//   - WebSocketApiErrorsAlarm: the WebSocket API's integration and execution
//     errors (its counterpart of 5xx: WebSocket APIs report no 5xx metric);
//   - ErrorLogsAlarm: the functions' ERROR log lines (ErrorLogsMetric);
//   - PoolStoppedAlarm: a warm pool stopped refilling after three spares
//     failed in a row (metrics.PoolsStopped, docs/POOLS.md): GET /v1/pools
//     says why.
func newServiceAlarms(stack awscdk.Stack, table awsdynamodb.Table, http awsapigatewayv2.HttpStage, ws awsapigatewayv2.WebSocketStage) {
	alarm := func(id, description string, metric awscloudwatch.IMetric) {
		awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}
	alarm("TableThrottlesAlarm", "Sandman sessions table: DynamoDB throttled requests (a hot key, or capacity)",
		table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{
			Period: alarmPeriod,
			Operations: &[]awsdynamodb.Operation{
				awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM,
				awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_QUERY, awsdynamodb.Operation_SCAN,
				awsdynamodb.Operation_TRANSACT_WRITE_ITEMS,
			},
		}))
	alarm("HttpApi5xxAlarm", "Sandman HTTP API: 5xx answers",
		http.MetricServerError(&awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}))
	wsMetric := func(name string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:  jsii.String("AWS/ApiGateway"),
			MetricName: jsii.String(name),
			DimensionsMap: &map[string]*string{
				"ApiId": ws.Api().ApiId(),
				"Stage": ws.StageName(),
			},
			Statistic: jsii.String("Sum"),
			Period:    alarmPeriod,
		})
	}
	alarm("WebSocketApiErrorsAlarm", "Sandman WebSocket API: integration and execution errors (its 5xx)",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("integration + execution"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"integration": wsMetric("IntegrationError"),
				"execution":   wsMetric("ExecutionError"),
			},
			Label:  jsii.String("WebSocket errors"),
			Period: alarmPeriod,
		}))
	alarm("ErrorLogsAlarm", "Sandman functions: ERROR log lines (the "+ErrorLogsMetric+" metric)",
		sandmanMetric(ErrorLogsMetric, "Sum", "error log lines", nil))
	alarm("PoolStoppedAlarm", "Sandman warm pools: a pool stopped refilling after failures in a row (GET /v1/pools shows the last error)",
		sandmanMetric(metrics.PoolsStopped, "Sum", "pools stopped", nil))
}

// wireAlarmTopic makes the SNS topic topicArn the alarm and OK action of
// every alarm in stack (SandmanStackProps.AlarmTopicArn). Call it after
// every alarm exists.
func wireAlarmTopic(stack awscdk.Stack, topicArn string) {
	if topicArn == "" {
		return
	}
	action := awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(stack, jsii.String("AlarmTopic"), jsii.String(topicArn)))
	for _, c := range *stack.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if a, ok := c.(awscloudwatch.Alarm); ok {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
	}
}
