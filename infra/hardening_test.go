package infra

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/routes"
	"github.com/sandmanhq/sandman/internal/tabledef"
)

// TestRoleTableActionsPinned pins each function role's DynamoDB actions and
// the resources they apply to: exactly what its code calls, item actions on
// the table and Query on the named indexes only; no Scan (but idlepause's
// on the sparse by_conn_session index), BatchGetItem, stream reads (but the
// publisher's) or index wildcards.
func TestRoleTableActionsPinned(t *testing.T) {
	s := MustDefaultStack(t)
	all := s.statements(t)
	tableID := s.logicalID(t, "SessionsTable")
	table := canonical(getAtt(tableID, "Arn"))
	stream := canonical(getAtt(tableID, "StreamArn"))
	index := func(name string) string {
		return canonical(map[string]any{"Fn::Join": []any{"", []any{getAtt(tableID, "Arn"), "/index/" + name}}})
	}
	onTable := func(actions ...string) map[string][]string {
		out := map[string][]string{}
		for _, a := range actions {
			out[a] = []string{table}
		}
		return out
	}
	with := func(m map[string][]string, indexes ...string) map[string][]string {
		for _, ix := range indexes {
			m["dynamodb:Query"] = append(m["dynamodb:Query"], index(ix))
		}
		return m
	}
	want := map[string]map[string][]string{
		routes.Sessions:  with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"), tabledef.IndexByOwner),
		routes.Status:    onTable("dynamodb:GetItem"),
		routes.Resume:    onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Snapshot:  onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Reconnect: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		routes.Webhook:   with(onTable("dynamodb:PutItem", "dynamodb:UpdateItem"), tabledef.IndexBySandbox),
		// the sweep's phases, and connections that lost their socket: a
		// Scan of the sparse by_conn_session index, DeleteItem, the
		// session's remaining ones by Query on that index.
		routes.IdlePause: func() map[string][]string {
			m := with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
				tabledef.IndexIdle, tabledef.IndexLease, tabledef.IndexPaused, tabledef.IndexBySandbox, tabledef.IndexByConnSession)
			m["dynamodb:Scan"] = []string{index(tabledef.IndexByConnSession)}
			return m
		}(),
		// FireTimer: GetItem, then PauseIfDue's conditional PutItem with
		// the running-slot counter's UpdateItem (the quota), as idlepause.
		routes.Pauser: onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"),
		// connections (put, get, delete, by session) and the session writes
		// of heartbeats, presence and resume.
		routes.Channel: with(onTable("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
			tabledef.IndexByConnSession),
		// the session and its connections; gone ones deleted; no session write.
		routes.Notifier: with(onTable("dynamodb:GetItem", "dynamodb:DeleteItem"), tabledef.IndexByConnSession),
		// the stream, granted by its event source mapping (ListStreams has
		// no resource-level permission), and the usage transaction's
		// UpdateItem and PutItem (internal/dynamo usage.go).
		routes.Publisher: {
			"dynamodb:PutItem":          {table},
			"dynamodb:UpdateItem":       {table},
			"dynamodb:DescribeStream":   {stream},
			"dynamodb:GetShardIterator": {stream},
			"dynamodb:GetRecords":       {stream},
			"dynamodb:ListStreams":      {`"*"`},
		},
	}
	for _, name := range routes.Functions {
		got := map[string][]string{}
		for a, resources := range s.functionActions(t, all, name) {
			if strings.HasPrefix(a, "dynamodb:") {
				got[a] = sorted(resources)
			}
		}
		w := want[name]
		if w == nil {
			t.Errorf("%s: no pinned table actions", name)
			continue
		}
		for a := range w {
			w[a] = sorted(w[a])
		}
		for a, r := range got {
			if !slices.Equal(r, w[a]) {
				t.Errorf("%s may %s on %v, want %v", name, a, r, w[a])
			}
		}
		for a := range w {
			if _, ok := got[a]; !ok {
				t.Errorf("%s may not %s, its code calls it", name, a)
			}
		}
	}
}

// TestIdlePauseUnreserved: no function reserves concurrency, so the stack
// creates on accounts at the new-account concurrency quota;
// the sweep is safe under overlap instead.
func TestIdlePauseUnreserved(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		if v, ok := fn.Properties["ReservedConcurrentExecutions"]; ok {
			t.Errorf("function %s reserves concurrency %v", id, v)
		}
	}
}

// TestSystemLogsKeepStartReport: the system log level keeps Lambda's START
// and REPORT lines (duration, memory, init), which WARN drops.
func TestSystemLogsKeepStartReport(t *testing.T) {
	s := MustDefaultStack(t)
	for id, fn := range s.ofType("AWS::Lambda::Function") {
		cfg, _ := fn.Properties["LoggingConfig"].(map[string]any)
		if got := cfg["SystemLogLevel"]; got != "INFO" && got != "DEBUG" {
			t.Errorf("function %s: SystemLogLevel %v, want INFO (START/REPORT kept)", id, got)
		}
	}
}

// render writes a CloudFormation string expression as text, references as
// {Name}.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if j, ok := x["Fn::Join"].([]any); ok {
			var b strings.Builder
			for i, part := range j[1].([]any) {
				if i > 0 {
					b.WriteString(j[0].(string))
				}
				b.WriteString(render(part))
			}
			return b.String()
		}
		if r, ok := x["Ref"].(string); ok {
			return "{" + r + "}"
		}
	}
	return "{" + canonical(v) + "}"
}

// TestWebhookUrlOutput: the stack outputs the exact URL to register with
// the provider, without the double slash <ApiUrl>/v1/… gave.
func TestWebhookUrlOutput(t *testing.T) {
	s := MustDefaultStack(t)
	out, ok := s.doc.Outputs["WebhookUrl"]
	if !ok {
		t.Fatalf("outputs: got %v, want WebhookUrl", keys(s.doc.Outputs))
	}
	url := render(out.Value)
	if !strings.HasPrefix(url, "https://{"+s.logicalID(t, "HttpApi")+"}.execute-api.") ||
		!strings.HasSuffix(url, "/v1/webhooks/"+DefaultProvider) || strings.Contains(strings.TrimPrefix(url, "https://"), "//") {
		t.Errorf("WebhookUrl = %s, want https://<api>.execute-api.<region>.<suffix>/v1/webhooks/%s", url, DefaultProvider)
	}
}

// TestSweepFailureGoesToDLQ: a sweep that errors (not retried) is sent to
// the schedule's dead-letter queue by an on-failure destination, so the DLQ
// alarm covers failed sweeps as well as undelivered ticks.
func TestSweepFailureGoesToDLQ(t *testing.T) {
	s := MustDefaultStack(t)
	dlq := canonical(getAtt(s.logicalID(t, "IdlePauseScheduleDLQ"), "Arn"))
	configs := map[string]cfnResource{} // the idle pause function's (the notifier has its own, TestClientChannel)
	for id, c := range s.ofType("AWS::Lambda::EventInvokeConfig") {
		if same(prop(c, "FunctionName"), ref(s.functionID(t, routes.IdlePause))) {
			configs[id] = c
		}
	}
	if len(configs) != 1 {
		t.Fatalf("%d EventInvokeConfig, want 1 (the idle pause function's)", len(configs))
	}
	for id, c := range configs {
		dest, _ := c.Properties["DestinationConfig"].(map[string]any)
		onFailure, _ := dest["OnFailure"].(map[string]any)
		if got := canonical(onFailure["Destination"]); got != dlq {
			t.Errorf("%s: on-failure destination %s, want the schedule DLQ %s", id, got, dlq)
		}
	}
	role := s.functionActions(t, s.statements(t), routes.IdlePause)
	if got := role["sqs:SendMessage"]; !slices.Contains(got, dlq) {
		t.Errorf("idle pause may sqs:SendMessage on %v, want the DLQ", got)
	}
}

// TestBootstrapNeedsNoBuiltFunctions: `scripts/cdk.sh bootstrap` runs the
// CLI outside the app, so it never synthesizes the stack and needs no
// built functions on a fresh clone.
func TestBootstrapNeedsNoBuiltFunctions(t *testing.T) {
	dir := t.TempDir()
	stub := filepath.Join(dir, "cdk")
	seen := filepath.Join(dir, "seen")
	script := "#!/bin/sh\n{ echo \"$@\"; pwd; ls; } > " + seen + "\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "scripts", "cdk.sh"), "bootstrap", "aws://123456789012/eu-west-1")
	cmd.Env = append(os.Environ(), "CDK_CLI="+stub)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cdk.sh bootstrap: %v\n%s", err, out)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the CLI was not run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "bootstrap aws://123456789012/eu-west-1" {
		t.Errorf("CLI arguments %q, want the bootstrap arguments", lines[0])
	}
	if slices.Contains(lines[2:], "cdk.json") {
		t.Errorf("bootstrap ran in %s, next to cdk.json: it would synthesize the app (and need `make build`)", lines[1])
	}
}
