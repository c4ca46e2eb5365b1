package infra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/routes"
)

// flatten renders a CloudFormation string value (a literal or an Fn::Join
// of literals and intrinsics) as one string, each intrinsic replaced by a
// placeholder: REF(id) or GETATT(id.attr).
func flatten(tb testing.TB, v any) string {
	tb.Helper()
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if id, ok := v["Ref"].(string); ok {
			return "REF(" + id + ")"
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok && len(att) == 2 {
			return fmt.Sprintf("GETATT(%v.%v)", att[0], att[1])
		}
		if join, ok := v["Fn::Join"].([]any); ok && len(join) == 2 {
			sep, _ := join[0].(string)
			parts, _ := join[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = flatten(tb, p)
			}
			return strings.Join(out, sep)
		}
	}
	tb.Fatalf("cannot flatten %s", canonical(v))
	return ""
}

// dashboardWidget is the part of a dashboard body's widget the tests read.
type dashboardWidget struct {
	Type       string `json:"type"`
	Properties struct {
		Title       string   `json:"title"`
		Markdown    string   `json:"markdown"`
		Metrics     [][]any  `json:"metrics"`
		Alarms      []string `json:"alarms"`
		Query       string   `json:"query"`
		Annotations struct {
			Alarms []string `json:"alarms"`
		} `json:"annotations"`
	} `json:"properties"`
}

// TestDashboard pins the operator's dashboard: one per stack, named after it,
// graphing every metric of internal/metrics in its namespace and the error
// log lines, and showing every alarm of the stack.
func TestDashboard(t *testing.T) {
	s := MustDefaultStack(t)
	dashboards := s.ofType("AWS::CloudWatch::Dashboard")
	if len(dashboards) != 1 {
		t.Fatalf("dashboards: got %d, want 1", len(dashboards))
	}
	var dashboardID string
	var d cfnResource
	for id, r := range dashboards {
		dashboardID, d = id, r
	}
	if got, want := prop(d, "DashboardName"), "SandmanTest"; got != want {
		t.Errorf("DashboardName: got %v, want the stack's name %v", got, want)
	}
	if out, ok := s.doc.Outputs["DashboardName"]; !ok || !same(out.Value, ref(dashboardID)) {
		t.Errorf("DashboardName output: got %v, want a Ref to the dashboard", canonical(out.Value))
	}
	var body struct {
		Widgets []dashboardWidget `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(flatten(t, prop(d, "DashboardBody"))), &body); err != nil {
		t.Fatalf("dashboard body: %v", err)
	}

	// What the graphs draw: plain metrics as "namespace/name[/dim=value...]/stat"
	// and metric math expressions.
	plain := map[string]bool{}
	var expressions []string
	for _, w := range body.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) == 0 {
				continue
			}
			if opts, ok := m[0].(map[string]any); ok {
				if e, ok := opts["expression"].(string); ok {
					expressions = append(expressions, e)
				}
				continue
			}
			var parts []string
			stat := ""
			for _, x := range m {
				switch x := x.(type) {
				case string:
					parts = append(parts, x)
				case map[string]any:
					stat, _ = x["stat"].(string)
				}
			}
			plain[strings.Join(parts, "/")+"/"+stat] = true
		}
	}
	ns := metrics.Namespace
	for _, want := range []string{
		ns + "/" + metrics.Resumes + "/Sum",
		ns + "/" + metrics.EventsPublished + "/Sum",
		ns + "/" + metrics.Pushes + "/Sum",
		ns + "/" + ErrorLogsMetric + "/Sum",
		ns + "/" + metrics.SweepLag + "/Function/" + routes.Sweep + "/p99",
		ns + "/" + metrics.SweepLag + "/Function/" + routes.Timer + "/p99",
		ns + "/" + metrics.SweepLag + "/Function/" + routes.Timer + "/Maximum",
	} {
		if !plain[want] {
			t.Errorf("no graph of %s; graphs: %v", want, keys(plain))
		}
	}
	for _, want := range []string{
		fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimReason, metrics.Pauses),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimKind, metrics.DimProvider, metrics.ProviderErrors),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimClass, metrics.DimProvider, metrics.ProviderCalls),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimClass, metrics.DimProvider, metrics.ProviderCallsRefused),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'p99', 300)`, ns, metrics.DimClass, metrics.DimProvider, metrics.ProviderCallWait),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'Maximum', 300)`, ns, metrics.DimClass, metrics.DimProvider, metrics.ProviderCallWait),
		fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimProvider, metrics.GovernorLeased),
		fmt.Sprintf(`SEARCH('{%s,%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimClass, metrics.DimProvider, metrics.ProviderThrottled),
		fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', 'Sum', 300)`, ns, metrics.DimProvider, metrics.GovernorFallbacks),
		fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', 'p99', 300)`, ns, metrics.DimProvider, metrics.GovernorLeaseTime),
	} {
		if !slices.Contains(expressions, want) {
			t.Errorf("no graph of %s; expressions: %v", want, expressions)
		}
	}
	for _, name := range routes.Functions {
		want := "AWS/Lambda/Errors/FunctionName/REF(" + s.functionID(t, name) + ")/Sum"
		if !plain[want] {
			t.Errorf("no graph of %s's errors (%s)", name, want)
		}
	}

	t.Run("EveryAlarm", func(t *testing.T) {
		var shown []string
		for _, w := range body.Widgets {
			if w.Type == "alarm" {
				shown = append(shown, w.Properties.Alarms...)
			}
		}
		alarms := s.ofType("AWS::CloudWatch::Alarm")
		if len(alarms) == 0 {
			t.Fatal("the stack has no alarm")
		}
		for id := range alarms {
			if !slices.Contains(shown, "GETATT("+id+".Arn)") {
				t.Errorf("alarm %s is not in the alarm status widget", id)
			}
		}
		if len(shown) != len(alarms) {
			t.Errorf("alarm status shows %d alarms, want the stack's %d", len(shown), len(alarms))
		}
	})
	t.Run("BacklogAlarms", func(t *testing.T) {
		for _, id := range []string{"PublisherIteratorAgeAlarm", "TimerQueueAgeAlarm"} {
			arn := "GETATT(" + s.logicalID(t, id) + ".Arn)"
			found := false
			for _, w := range body.Widgets {
				found = found || slices.Contains(w.Properties.Annotations.Alarms, arn)
			}
			if !found {
				t.Errorf("no alarm widget of %s", id)
			}
		}
	})
	t.Run("ErrorLines", func(t *testing.T) {
		var query string
		for _, w := range body.Widgets {
			if w.Type == "log" {
				query = w.Properties.Query
			}
		}
		if !strings.Contains(query, `filter level = "ERROR"`) {
			t.Errorf("log query %q does not filter level ERROR", query)
		}
		for _, name := range routes.Functions {
			if group := "REF(" + s.logicalID(t, constructID(name)+"Logs") + ")"; !strings.Contains(query, group) {
				t.Errorf("log query does not read %s's log group %s", name, group)
			}
		}
	})
}

// TestErrorLogFilters pins the metric filters behind ErrorLogsMetric: one
// per function's log group, matching the JSON lines the functions' logger
// (app.NewLogger) writes at level ERROR.
func TestErrorLogFilters(t *testing.T) {
	s := MustDefaultStack(t)
	filters := s.ofType("AWS::Logs::MetricFilter")
	byGroup := map[string]cfnResource{}
	for _, f := range filters {
		byGroup[canonical(prop(f, "LogGroupName"))] = f
	}
	if got, want := len(filters), len(routes.Functions); got != want {
		t.Errorf("metric filters: got %d, want %d (one per function)", got, want)
	}
	for _, name := range routes.Functions {
		t.Run(name, func(t *testing.T) {
			f, ok := byGroup[canonical(ref(s.logicalID(t, constructID(name)+"Logs")))]
			if !ok {
				t.Fatalf("no metric filter on %s's log group", name)
			}
			if got, want := prop(f, "FilterPattern"), `{ $.level = "ERROR" }`; got != want {
				t.Errorf("FilterPattern: got %v, want %v", got, want)
			}
			want := []any{map[string]any{"MetricNamespace": metrics.Namespace, "MetricName": ErrorLogsMetric,
				"MetricValue": "1", "Unit": "Count"}}
			if got := prop(f, "MetricTransformations"); !same(got, want) {
				t.Errorf("MetricTransformations: got %s, want %s", canonical(got), canonical(want))
			}
		})
	}
	t.Run("LoggerWritesTheLevelTheFilterReads", func(t *testing.T) {
		var buf bytes.Buffer
		app.NewLogger(&buf, slog.LevelInfo).Error("provider down", "err", "boom")
		app.NewLogger(&buf, slog.LevelInfo).Warn("slow")
		var levels []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var l struct{ Level string }
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			levels = append(levels, l.Level)
		}
		if want := []string{"ERROR", "WARN"}; !slices.Equal(levels, want) {
			t.Errorf("levels %v, want %v: only the ERROR line matches $.level = \"ERROR\"", levels, want)
		}
	})
}

// TestDashboardBreakPoints: the dashboard names where the deployment's
// settings break, from its own shard count, timer concurrency and throttle.
func TestDashboardBreakPoints(t *testing.T) {
	s := MustDefaultStack(t)
	var body struct {
		Widgets []dashboardWidget `json:"widgets"`
	}
	for _, d := range s.ofType("AWS::CloudWatch::Dashboard") {
		if err := json.Unmarshal([]byte(flatten(t, prop(d, "DashboardBody"))), &body); err != nil {
			t.Fatalf("dashboard body: %v", err)
		}
	}
	var text string
	for _, w := range body.Widgets {
		if w.Type == "text" {
			text += w.Properties.Markdown
		}
	}
	for _, want := range []string{"Break points", "Idle index shards** (128)", "1.7 million", "350 pauses/s", "parallelization 10"} {
		if !strings.Contains(text, want) {
			t.Errorf("dashboard text lacks %q:\n%s", want, text)
		}
	}
}
