package infra

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

// The operator's view in AWS (docs/DESIGN.md "Operators"): the
// functions' EMF metrics (internal/metrics, namespace metrics.Namespace), a
// log-derived count of error lines, and one dashboard with those and every
// alarm of the stack.
const (
	// ErrorLogsMetric counts the functions' log lines at level ERROR
	// (namespace metrics.Namespace, unit Count, no dimension: one metric
	// filter per function's log group feeds it; which function logged them
	// is in the dashboard's log query). The functions log JSON through
	// log/slog, whose level member is "ERROR", and Lambda's JSON log format
	// keeps a line that is already JSON as it is.
	ErrorLogsMetric = "ErrorLogs"
	// dashboardPeriod is every graph's period: the sweep's interval
	// (routes.ScheduleExpression), so each sweep is one point.
	dashboardPeriodSeconds = 300
	// maxAlarmsPerWidget is how many alarms one alarm status widget shows
	// (CloudWatch's limit for the widget).
	maxAlarmsPerWidget = 100
)

// breakPoints is the dashboard's text widget: where this deployment's
// settings break, from the capacity model (docs/CAPACITY.md "The break
// points"), beside the symptoms the alarms above watch.
func breakPoints(p SandmanStackProps) string {
	shards := int(p.Shards)
	// Each written heartbeat costs 2 WCU on its idle shard; 1,000 WCU/s per
	// shard, one heartbeat per 30 s, and the busiest shard about 10 % over
	// the mean.
	sessions := float64(shards) * 1000 / 2 * 30 / 1.1
	pauses := p.PauserConcurrency * timerBatchSize / 2 // at about 2 s per pause
	return fmt.Sprintf("### Break points (docs/CAPACITY.md)\n"+
		"- **Idle index shards** (%d): about %.1f million running sessions heartbeating every 30 s "+
		"(1,000 WCU/s per shard); watch DynamoDB throttles.\n"+
		"- **Account index** (by_owner_keys, keys only): written by creates only (2 WCU each): about 500 creates/s on one account.\n"+
		"- **Pauser** (concurrency %d × batches of %d): about %.0f pauses/s at 2 s per pause; "+
		"watch *Pauser behind the timer queue*.\n"+
		"- **Publisher** (parallelization %d): about %d transitions/s per stream shard; "+
		"watch *Publisher behind the table's stream* (alarm at 1 min).\n"+
		"- **HTTP stage**: %d requests/s (burst %d), about %d tabs heartbeating every 30 s.",
		shards, sessions/1e6, int(p.PauserConcurrency), timerBatchSize, pauses,
		int(p.PublisherParallelization), int(p.PublisherParallelization)*60,
		int(p.ThrottleRateLimit), int(p.ThrottleBurstLimit), int(p.ThrottleRateLimit)*30)
}

// errorLogPattern matches a JSON log line whose level is ERROR.
func errorLogPattern() awslogs.IFilterPattern {
	return awslogs.FilterPattern_StringValue(jsii.String("$.level"), jsii.String("="), jsii.String("ERROR"))
}

// newErrorLogFilters adds to each function's log group a metric filter
// counting its ERROR lines as ErrorLogsMetric.
func newErrorLogFilters(stack awscdk.Stack, functions map[string]awslambda.Function) {
	for _, spec := range functionSpecs {
		fn, ok := functions[spec.name]
		if !ok {
			continue
		}
		awslogs.NewMetricFilter(stack, jsii.String(constructID(spec.name)+"ErrorLogsFilter"), &awslogs.MetricFilterProps{
			LogGroup:        fn.LogGroup(),
			FilterPattern:   errorLogPattern(),
			MetricNamespace: jsii.String(metrics.Namespace),
			MetricName:      jsii.String(ErrorLogsMetric),
			MetricValue:     jsii.String("1"),
			Unit:            awscloudwatch.Unit_COUNT,
		})
	}
}

// sandmanMetric is one of the functions' EMF metrics with the given
// dimensions (none: rolled up over the functions) and statistic.
func sandmanMetric(name, statistic, label string, dims map[string]string) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace:  jsii.String(metrics.Namespace),
		MetricName: jsii.String(name),
		Statistic:  jsii.String(statistic),
		Period:     awscdk.Duration_Seconds(jsii.Number(dashboardPeriodSeconds)),
		Label:      jsii.String(label),
	}
	if len(dims) > 0 {
		m := make(map[string]*string, len(dims))
		for k, v := range dims {
			m[k] = jsii.String(v)
		}
		props.DimensionsMap = &m
	}
	return awscloudwatch.NewMetric(props)
}

// searchSum graphs every series of metric name published with exactly the
// dimension keys dims (the rolled-up set, without Function), summed per
// period: one line per value (each reason, each provider and kind).
func searchSum(name, label string, dims ...string) awscloudwatch.MathExpression {
	return searchStat(name, "Sum", label, dims...)
}

// searchStat is searchSum with another statistic (e.g. "p99", "Maximum").
func searchStat(name, statistic, label string, dims ...string) awscloudwatch.MathExpression {
	schema := metrics.Namespace
	for _, d := range dims {
		schema += "," + d
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s} MetricName="%s"', '%s', %d)`, schema, name, statistic, dashboardPeriodSeconds)),
		Label:      jsii.String(label),
		Period:     awscdk.Duration_Seconds(jsii.Number(dashboardPeriodSeconds)),
	})
}

// graph is a GraphWidget of half the dashboard's width.
func graph(title string, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title), Left: &left, Width: jsii.Number(12), Height: jsii.Number(6),
	})
}

// stackAlarms returns every alarm defined in scope, in construct order: the
// ones newAlarms, newOutbox and newTimers create and any added later.
func stackAlarms(scope constructs.IConstruct) []interfacesawscloudwatch.IAlarmRef {
	var out []interfacesawscloudwatch.IAlarmRef
	for _, c := range *scope.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if a, ok := c.(awscloudwatch.IAlarm); ok {
			out = append(out, a)
		}
	}
	return out
}

// newDashboard creates the stack's CloudWatch dashboard, named after the
// stack. Call it after every alarm exists. Rows, top to bottom: the state of
// every alarm; pauses by reason and resumes; provider errors by provider and
// kind, and the sweep lag of the sweep and the timers
// as p50, p99 and maximum; the provider call limiter's calls and refusals
// by provider and class, and its wait by provider and class as p99 and
// maximum (docs/OPERATIONS.md "Provider call limiter"); events published and pushes, and error log lines
// with each function's Lambda errors; the publisher's and the timer function's
// backlog alarms; the last error lines of every function.
func newDashboard(stack awscdk.Stack, functions map[string]awslambda.Function, breaks string) awscloudwatch.Dashboard {
	var rows [][]awscloudwatch.IWidget
	alarms := stackAlarms(stack)
	for chunk := range slices.Chunk(alarms, maxAlarmsPerWidget) {
		rows = append(rows, []awscloudwatch.IWidget{awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title:  jsii.String(fmt.Sprintf("Alarms (%d)", len(chunk))),
			Alarms: &chunk,
			Width:  jsii.Number(24),
			Height: jsii.Number(float64(2 + (len(chunk)+3)/4)),
			SortBy: awscloudwatch.AlarmStatusWidgetSortBy_STATE_UPDATED_TIMESTAMP,
		})})
	}

	lag := func(fn string) []awscloudwatch.IMetric {
		dims := map[string]string{metrics.DimFunction: fn}
		return []awscloudwatch.IMetric{
			sandmanMetric(metrics.SweepLag, "p50", fn+" p50", dims),
			sandmanMetric(metrics.SweepLag, "p99", fn+" p99", dims),
			sandmanMetric(metrics.SweepLag, "Maximum", fn+" max", dims),
		}
	}
	var fnErrors []awscloudwatch.IMetric
	var logGroups []*string
	for _, spec := range functionSpecs {
		fn, ok := functions[spec.name]
		if !ok {
			continue
		}
		fnErrors = append(fnErrors, fn.MetricErrors(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Seconds(jsii.Number(dashboardPeriodSeconds)), Label: jsii.String(spec.name + " errors"),
		}))
		logGroups = append(logGroups, fn.LogGroup().LogGroupName())
	}
	rows = append(rows,
		[]awscloudwatch.IWidget{
			graph("Pauses by reason", searchSum(metrics.Pauses, "", metrics.DimReason)),
			graph("Resumes", sandmanMetric(metrics.Resumes, "Sum", "resumes", nil)),
		},
		[]awscloudwatch.IWidget{
			graph("Provider errors by provider and kind",
				searchSum(metrics.ProviderErrors, "", metrics.DimKind, metrics.DimProvider)),
			graph("Sweep lag (seconds after the pause deadline)",
				append(lag(routes.Sweep), lag(routes.Timer)...)...),
		},
		[]awscloudwatch.IWidget{
			graph("Provider calls and refusals by provider and class (call limiter)",
				searchSum(metrics.ProviderCalls, "granted", metrics.DimClass, metrics.DimProvider),
				searchSum(metrics.ProviderCallsRefused, "refused", metrics.DimClass, metrics.DimProvider)),
			graph("Provider call wait for a token (seconds, calls that waited)",
				searchStat(metrics.ProviderCallWait, "p99", "p99", metrics.DimClass, metrics.DimProvider),
				searchStat(metrics.ProviderCallWait, "Maximum", "max", metrics.DimClass, metrics.DimProvider)),
		},
		[]awscloudwatch.IWidget{
			graph("Fleet provider governor: tokens leased, provider 429s, fallbacks to the per-process limiter",
				searchSum(metrics.GovernorLeased, "leased", metrics.DimProvider),
				searchSum(metrics.ProviderThrottled, "429", metrics.DimClass, metrics.DimProvider),
				searchSum(metrics.GovernorFallbacks, "fallback", metrics.DimProvider),
				searchSum(metrics.GovernorRecoveries, "back to the table", metrics.DimProvider)),
			graph("Fleet provider governor: the table's answer to a lease (seconds)",
				searchStat(metrics.GovernorLeaseTime, "p99", "p99", metrics.DimProvider),
				searchStat(metrics.GovernorLeaseTime, "Maximum", "max", metrics.DimProvider)),
		},
		[]awscloudwatch.IWidget{
			graph("Events published and pushes",
				sandmanMetric(metrics.EventsPublished, "Sum", "events published", nil),
				sandmanMetric(metrics.Pushes, "Sum", "pushes", nil)),
			graph("Error log lines and function errors",
				append([]awscloudwatch.IMetric{sandmanMetric(ErrorLogsMetric, "Sum", "error log lines", nil)}, fnErrors...)...),
		},
	)
	var backlog []awscloudwatch.IWidget
	for _, b := range []struct{ id, title string }{
		{"PublisherIteratorAgeAlarm", "Publisher behind the table's stream (iterator age, ms)"},
		{"TimerQueueAgeAlarm", "Pauser behind the timer queue (oldest timer, s)"},
	} {
		if a, ok := stack.Node().TryFindChild(jsii.String(b.id)).(awscloudwatch.IAlarm); ok {
			backlog = append(backlog, awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{
				Alarm: a, Title: jsii.String(b.title), Width: jsii.Number(12), Height: jsii.Number(6),
			}))
		}
	}
	if len(backlog) > 0 {
		rows = append(rows, backlog)
	}
	rows = append(rows, []awscloudwatch.IWidget{awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String(breaks), Width: jsii.Number(24), Height: jsii.Number(5),
	})})
	rows = append(rows, []awscloudwatch.IWidget{awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
		Title:         jsii.String("Last error lines"),
		LogGroupNames: &logGroups,
		QueryLines: jsii.Strings(
			"fields @timestamp, @log, msg, err, session_id",
			`filter level = "ERROR"`,
			"sort @timestamp desc",
			"limit 50",
		),
		Width:  jsii.Number(24),
		Height: jsii.Number(8),
	})})

	dashboard := awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   stack.StackName(),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	for _, row := range rows {
		dashboard.AddWidgets(row...) // one call per row: left to right
	}
	return dashboard
}
