package infra

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

// providerKeyFunctions call the sandbox provider; webhook reads the webhook
// key; publishers put lifecycle events on the bus (the grant table).
var (
	providerKeyFunctions = []string{routes.Sessions, routes.Resume, routes.Pause, routes.Reconnect, routes.Sweep, routes.Timer,
		routes.Readiness, routes.Channel, routes.Checkpoint} // the channel's $default resumes
	// timerFunctions arm pause timers: every function whose writes may set
	// a deadline before the next sweep (the readiness function's: it
	// finishes the resume an open hands off; the checkpoint function's:
	// restores and forks), and the timer function, which re-arms.
	timerFunctions = []string{routes.Sessions, routes.Resume, routes.Pause, routes.Reconnect, routes.Webhook,
		routes.Sweep, routes.Timer, routes.Channel, routes.Readiness, routes.Checkpoint}
	publisherFunctions = []string{routes.Publisher} // the table's stream publishes; no request does
)

// probeTimeout is reconnect's live probe timeout, lifecycle.Service's
// default.
const probeTimeout = 15 * time.Second

// requestBudget returns the request budget httpapi.RequestBudget gives a
// function whose Lambda timeout is timeout, when its invocation starts.
func requestBudget(timeout time.Duration) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return httpapi.RequestBudget(ctx, httpapi.DefaultRequestTimeout)
}

// overrideProps sets every prop to a non-default value.
func overrideProps(tb testing.TB) *SandmanStackProps {
	return &SandmanStackProps{
		FunctionsDir:               MustFunctionsDir(tb),
		Provider:                   "daytona",
		Providers:                  []string{"e2b"},
		SecretNames:                map[string]string{e2b.EnvAPIKeySecret: "dev/provider-key", e2b.EnvWebhookSecretSecret: "dev/webhook-key"},
		CORSAllowOrigins:           []string{"https://app.example.com", "https://admin.example.com"},
		ThrottleRateLimit:          10,
		ThrottleBurstLimit:         20,
		TableRemovalPolicy:         awscdk.RemovalPolicy_DESTROY,
		DisableDeletionProtection:  true,
		DisablePointInTimeRecovery: true,
		LogRetention:               awslogs.RetentionDays_ONE_WEEK,
	}
}

func TestTable(t *testing.T) {
	s := MustDefaultStack(t)
	tables := s.ofType("AWS::DynamoDB::Table")
	if got, want := len(tables), 1; got != want {
		t.Fatalf("tables: got %d, want %d", got, want)
	}
	table := s.resource(t, s.logicalID(t, "SessionsTable"), "AWS::DynamoDB::Table")

	t.Run("KeySchema", func(t *testing.T) {
		want := []any{
			map[string]any{"AttributeName": tabledef.PartitionKey, "KeyType": "HASH"},
			map[string]any{"AttributeName": tabledef.SortKey, "KeyType": "RANGE"},
		}
		if got := prop(table, "KeySchema"); !same(got, want) {
			t.Errorf("KeySchema: got %s, want %s", canonical(got), canonical(want))
		}
	})

	t.Run("AttributeDefinitions", func(t *testing.T) {
		want := map[string]string{tabledef.PartitionKey: tabledef.TypeString, tabledef.SortKey: tabledef.TypeString}
		for _, ix := range tabledef.Indexes {
			want[ix.PartitionKey] = ix.PartitionType
			if ix.SortKey != "" {
				want[ix.SortKey] = ix.SortType
			}
		}
		got := make(map[string]string)
		for _, d := range prop(table, "AttributeDefinitions").([]any) {
			d := d.(map[string]any)
			got[d["AttributeName"].(string)] = d["AttributeType"].(string)
		}
		if !same(got, want) {
			t.Errorf("AttributeDefinitions: got %s, want %s", canonical(got), canonical(want))
		}
	})

	t.Run("GlobalSecondaryIndexes", func(t *testing.T) {
		var want []any
		for _, ix := range tabledef.Indexes {
			schema := []any{map[string]any{"AttributeName": ix.PartitionKey, "KeyType": "HASH"}}
			if ix.SortKey != "" {
				schema = append(schema, map[string]any{"AttributeName": ix.SortKey, "KeyType": "RANGE"})
			}
			proj := map[string]any{"ProjectionType": ix.ProjectionType()}
			if len(ix.NonKeyAttributes) > 0 {
				attrs := make([]any, len(ix.NonKeyAttributes))
				for i, a := range ix.NonKeyAttributes {
					attrs[i] = a
				}
				proj["NonKeyAttributes"] = attrs
			}
			want = append(want, map[string]any{
				"IndexName":  ix.Name,
				"KeySchema":  schema,
				"Projection": proj,
			})
		}
		if got := prop(table, "GlobalSecondaryIndexes"); !same(got, want) {
			t.Errorf("GlobalSecondaryIndexes: got %s, want %s", canonical(got), canonical(want))
		}
	})

	t.Run("TTL", func(t *testing.T) {
		want := map[string]any{"AttributeName": tabledef.TTLAttribute, "Enabled": true}
		if got := prop(table, "TimeToLiveSpecification"); !same(got, want) {
			t.Errorf("TimeToLiveSpecification: got %s, want %s", canonical(got), canonical(want))
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		if got, want := prop(table, "BillingMode"), "PAY_PER_REQUEST"; got != want {
			t.Errorf("BillingMode: got %v, want %v", got, want)
		}
		if got, want := prop(table, "PointInTimeRecoverySpecification"), map[string]any{"PointInTimeRecoveryEnabled": true}; !same(got, want) {
			t.Errorf("PointInTimeRecoverySpecification: got %s, want %s", canonical(got), canonical(want))
		}
		if got, want := prop(table, "DeletionProtectionEnabled"), true; got != want {
			t.Errorf("DeletionProtectionEnabled: got %v, want %v", got, want)
		}
		if got, want := table.DeletionPolicy, "Retain"; got != want {
			t.Errorf("DeletionPolicy: got %q, want %q", got, want)
		}
		if got, want := table.UpdateReplacePolicy, "Retain"; got != want {
			t.Errorf("UpdateReplacePolicy: got %q, want %q", got, want)
		}
	})

	t.Run("Overrides", func(t *testing.T) {
		o := MustSynth(t, overrideProps(t))
		table := o.resource(t, o.logicalID(t, "SessionsTable"), "AWS::DynamoDB::Table")
		if got, want := prop(table, "PointInTimeRecoverySpecification"), map[string]any{"PointInTimeRecoveryEnabled": false}; !same(got, want) {
			t.Errorf("PointInTimeRecoverySpecification: got %s, want %s", canonical(got), canonical(want))
		}
		if got, want := prop(table, "DeletionProtectionEnabled"), false; got != want {
			t.Errorf("DeletionProtectionEnabled: got %v, want %v", got, want)
		}
		if got, want := table.DeletionPolicy, "Delete"; got != want {
			t.Errorf("DeletionPolicy: got %q, want %q", got, want)
		}
	})
}

func TestFunctions(t *testing.T) {
	s := MustDefaultStack(t)
	mustMatch(t, "function count", func() {
		s.template.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(len(routes.Functions)))
	})
	mustMatch(t, "every function is provided.al2023 on arm64 with active tracing and JSON logs", func() {
		s.template.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Runtime":       "provided.al2023",
			"Architectures": []string{"arm64"},
			"Handler":       "bootstrap",
			"TracingConfig": map[string]any{"Mode": "Active"},
			"LoggingConfig": assertions.Match_ObjectLike(&map[string]any{"LogFormat": "JSON", "ApplicationLogLevel": "INFO"}),
		})
	})

	tableID, busID := s.logicalID(t, "SessionsTable"), s.logicalID(t, "EventBus")
	for _, name := range routes.Functions {
		t.Run(name, func(t *testing.T) {
			fn := s.resource(t, s.functionID(t, name), "AWS::Lambda::Function")
			if got, want := prop(fn, "Runtime"), "provided.al2023"; got != want {
				t.Errorf("Runtime: got %v, want %v", got, want)
			}
			if got, want := prop(fn, "Architectures"), []any{"arm64"}; !same(got, want) {
				t.Errorf("Architectures: got %v, want %v", got, want)
			}
			if got, want := prop(fn, "Handler"), "bootstrap"; got != want {
				t.Errorf("Handler: got %v, want %v", got, want)
			}
			if got, want := prop(fn, "TracingConfig"), map[string]any{"Mode": "Active"}; !same(got, want) {
				t.Errorf("TracingConfig: got %s, want %s", canonical(got), canonical(want))
			}
			logsID := s.logicalID(t, constructID(name)+"Logs")
			wantLogging := map[string]any{"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "INFO", "LogGroup": ref(logsID)}
			if got := prop(fn, "LoggingConfig"); !same(got, wantLogging) {
				t.Errorf("LoggingConfig: got %s, want %s", canonical(got), canonical(wantLogging))
			}
			logs := s.resource(t, logsID, "AWS::Logs::LogGroup")
			if got, want := prop(logs, "RetentionInDays"), 30.0; got != want {
				t.Errorf("log RetentionInDays: got %v, want %v", got, want)
			}
			if got, want := prop(fn, "Role"), getAtt(s.logicalID(t, constructID(name)+"Role"), "Arn"); !same(got, want) {
				t.Errorf("Role: got %s, want %s", canonical(got), canonical(want))
			}
			if _, ok := prop(fn, "Code").(map[string]any)["S3Key"]; !ok {
				t.Errorf("Code: got %s, want an S3 asset", canonical(prop(fn, "Code")))
			}

			timeout, _ := prop(fn, "Timeout").(float64)
			budget := requestBudget(time.Duration(timeout * float64(time.Second)))
			switch name {
			case routes.Sweep:
				if timeout < 240 || timeout >= 300 {
					t.Errorf("Timeout: got %v s, want 240..299 s (under the 5 minute schedule)", timeout)
				}
			case routes.Reconnect:
				if timeout > 29 || budget < probeTimeout {
					t.Errorf("Timeout: got %v s (a request budget of %v), want at most 29 s (under API Gateway's 30 s) "+
						"and a budget of at least the %v probe", timeout, budget, probeTimeout)
				}
			case routes.Webhook:
				if timeout < 15 || timeout > 29 {
					t.Errorf("Timeout: got %v s, want 15..29 s (under API Gateway's 30 s)", timeout)
				}
			case routes.Timer:
				if timeout < 30 || timeout > 120 {
					t.Errorf("Timeout: got %v s, want 30..120 s (a batch of timers, each one provider pause)", timeout)
				}
			case routes.Readiness:
				if timeout < 60 || timeout > 300 {
					t.Errorf("Timeout: got %v s, want 60..300 s (one job's probes, then it continues in a new message)", timeout)
				}
			case routes.Deliver:
				if timeout < 30 || timeout > 120 {
					t.Errorf("Timeout: got %v s, want 30..120 s (a batch of attempts, each at most 15 s)", timeout)
				}
			case routes.Notifier:
				if timeout < 10 || timeout > 60 {
					t.Errorf("Timeout: got %v s, want 10..60 s (one session's pushes)", timeout)
				}
			case routes.Checkpoint:
				if timeout < 300 || timeout > 900 {
					t.Errorf("Timeout: got %v s, want 300..900 s (an archive of a workspace streamed through, under Lambda's 15 min)", timeout)
				}
			case routes.Publisher:
				if timeout < 30 || timeout > 300 {
					t.Errorf("Timeout: got %v s, want 30..300 s (a batch's PutEvents with their retries)", timeout)
				}
			default:
				if timeout < 10 || timeout > 29 {
					t.Errorf("Timeout: got %v s, want 10..29 s (under API Gateway's 30 s)", timeout)
				}
			}
			if memory, _ := prop(fn, "MemorySize").(float64); memory < 128 {
				t.Errorf("MemorySize: got %v MB, want at least 128", memory)
			}

			wantEnv := map[string]any{EnvTable: ref(tableID), EnvEventBus: ref(busID), EnvProvider: "e2b",
				EnvShards: strconv.Itoa(tabledef.DeployedShards)}
			if slices.Contains(providerKeyFunctions, name) {
				wantEnv[e2b.EnvAPIKeySecret] = e2b.Adapter.Key.DefaultName
			}
			if name == routes.Webhook {
				wantEnv[e2b.EnvWebhookSecretSecret] = e2bhook.Webhook.Secret.DefaultName
			}
			if slices.Contains(timerFunctions, name) {
				wantEnv[envnames.TimerQueueURL] = ref(s.logicalID(t, "TimerQueue"))
			}
			if slices.Contains(readinessArmers, name) {
				wantEnv[envnames.ReadinessQueueURL] = ref(s.logicalID(t, "ReadinessQueue"))
			}
			if slices.Contains(resumeSenders, name) {
				wantEnv[envnames.ResumeQueueURL] = ref(s.logicalID(t, "WakeResumeQueue"))
			}
			gotEnv := maps.Clone(prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any))
			// The client channel's variables (TestClientChannel pins their
			// values); here: set on exactly the functions that use them.
			for _, v := range []struct {
				name string
				on   []string
			}{
				{envnames.ClientTokenKeysSecret, clientTokenUsers},
				{envnames.WSURL, []string{routes.Sessions}},
				{envnames.WSManagementURL, pushers},
				{envnames.WebhookQueueURL, webhookSenders},
				{envnames.WebhookDLQURL, []string{routes.Deliver}},
				{envnames.CheckpointQueueURL, checkpointSenders},
				{envnames.ArchiveBucket, slices.Concat(archiveUsers, archiveReaders)},
				{envnames.ArchiveSSE, slices.Concat(archiveUsers, archiveReaders)},
				{envnames.ArchiveAccess, checkpointSenders},
			} {
				if _, ok := gotEnv[v.name]; ok != slices.Contains(v.on, name) {
					t.Errorf("%s set: %v, want %v", v.name, ok, !ok)
				}
				delete(gotEnv, v.name)
			}
			// Pinned by TestGovernorShardsReachTheProviderCallers.
			delete(gotEnv, envnames.GovernorShards)
			if !same(gotEnv, wantEnv) {
				t.Errorf("Environment: got %s, want %s", canonical(gotEnv), canonical(wantEnv))
			}

			// No reserved concurrency, the idle pause function's included
			//: see TestSweepUnreserved.
			if reserved, ok := prop(fn, "ReservedConcurrentExecutions").(float64); ok {
				t.Errorf("ReservedConcurrentExecutions: got %v, want unset", reserved)
			}
		})
	}

	t.Run("Overrides", func(t *testing.T) {
		o := MustSynth(t, overrideProps(t))
		fn := o.resource(t, o.functionID(t, routes.Sessions), "AWS::Lambda::Function")
		env := prop(fn, "Environment").(map[string]any)["Variables"].(map[string]any)
		if got, want := env[EnvProvider], "daytona"; got != want {
			t.Errorf("%s: got %v, want %v", EnvProvider, got, want)
		}
		if got, want := env[e2b.EnvAPIKeySecret], "dev/provider-key"; got != want {
			t.Errorf("%s: got %v, want %v", e2b.EnvAPIKeySecret, got, want)
		}
		webhook := o.resource(t, o.functionID(t, routes.Webhook), "AWS::Lambda::Function")
		if got, want := prop(webhook, "Environment").(map[string]any)["Variables"].(map[string]any)[e2b.EnvWebhookSecretSecret], "dev/webhook-key"; got != want {
			t.Errorf("%s: got %v, want %v", e2b.EnvWebhookSecretSecret, got, want)
		}
		logs := o.resource(t, o.logicalID(t, constructID(routes.Sessions)+"Logs"), "AWS::Logs::LogGroup")
		if got, want := prop(logs, "RetentionInDays"), 7.0; got != want {
			t.Errorf("log RetentionInDays: got %v, want %v", got, want)
		}
	})
}

func TestSchedule(t *testing.T) {
	s := MustDefaultStack(t)
	fnID := s.functionID(t, routes.Sweep)
	dlqID := s.logicalID(t, "IdlePauseScheduleDLQ")
	ruleID := s.logicalID(t, "IdlePauseSchedule")

	rules := 0 // scheduled rules (the notifier's rule matches events)
	for _, r := range s.ofType("AWS::Events::Rule") {
		if prop(r, "ScheduleExpression") != nil {
			rules++
		}
	}
	if got, want := rules, 1; got != want {
		t.Fatalf("scheduled rules: got %d, want %d", got, want)
	}
	rule := s.resource(t, ruleID, "AWS::Events::Rule")
	if got, want := prop(rule, "ScheduleExpression"), routes.ScheduleExpression; got != want {
		t.Errorf("ScheduleExpression: got %v, want %v", got, want)
	}
	if got, want := prop(rule, "State"), "ENABLED"; got != want {
		t.Errorf("State: got %v, want %v", got, want)
	}
	if _, ok := rule.Properties["EventBusName"]; ok {
		t.Errorf("EventBusName: got %v, want the default bus (schedules run only there)", prop(rule, "EventBusName"))
	}
	targets, _ := prop(rule, "Targets").([]any)
	if got, want := len(targets), 1; got != want {
		t.Fatalf("targets: got %d, want %d", got, want)
	}
	target := targets[0].(map[string]any)
	if got, want := target["Arn"], getAtt(fnID, "Arn"); !same(got, want) {
		t.Errorf("target Arn: got %s, want %s", canonical(got), canonical(want))
	}
	if got, want := target["DeadLetterConfig"], map[string]any{"Arn": getAtt(dlqID, "Arn")}; !same(got, want) {
		t.Errorf("target DeadLetterConfig: got %s, want %s", canonical(got), canonical(want))
	}
	if got, want := target["RetryPolicy"], map[string]any{"MaximumEventAgeInSeconds": 300, "MaximumRetryAttempts": 2}; !same(got, want) {
		t.Errorf("target RetryPolicy: got %s, want %s", canonical(got), canonical(want))
	}

	t.Run("InvokePermission", func(t *testing.T) {
		mustMatch(t, "EventBridge may invoke sweep from this rule only", func() {
			s.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
				"Action":       "lambda:InvokeFunction",
				"FunctionName": getAtt(fnID, "Arn"),
				"Principal":    "events.amazonaws.com",
				"SourceArn":    getAtt(ruleID, "Arn"),
			})
		})
	})

	t.Run("AsyncInvokeConfig", func(t *testing.T) {
		configs := map[string]cfnResource{} // all but the notifier's (TestClientChannel)
		for id, c := range s.ofType("AWS::Lambda::EventInvokeConfig") {
			if !same(prop(c, "FunctionName"), ref(s.functionID(t, routes.Notifier))) {
				configs[id] = c
			}
		}
		if got, want := len(configs), 1; got != want {
			t.Fatalf("event invoke configs: got %d, want %d", got, want)
		}
		for _, c := range configs {
			if got, want := prop(c, "FunctionName"), ref(fnID); !same(got, want) {
				t.Errorf("FunctionName: got %s, want %s", canonical(got), canonical(want))
			}
			if got, want := prop(c, "MaximumRetryAttempts"), 0.0; got != want {
				t.Errorf("MaximumRetryAttempts: got %v, want %v", got, want)
			}
			if age, _ := prop(c, "MaximumEventAgeInSeconds").(float64); age < 60 || age >= 300 {
				t.Errorf("MaximumEventAgeInSeconds: got %v, want 60..299 (dropped before the next tick)", age)
			}
		}
	})

	t.Run("DeadLetterQueue", func(t *testing.T) {
		if got, want := len(s.ofType("AWS::SQS::Queue")), 13; got != want {
			t.Fatalf("queues: got %d, want %d (the schedule's, the stream's and the notifier's DLQ, the timer, readiness, resume, webhook and checkpoint queues and their DLQs)", got, want)
		}
		dlq := s.resource(t, dlqID, "AWS::SQS::Queue")
		if got, want := prop(dlq, "SqsManagedSseEnabled"), true; got != want {
			t.Errorf("SqsManagedSseEnabled: got %v, want %v", got, want)
		}
		if got, want := prop(dlq, "MessageRetentionPeriod"), 1209600.0; got != want {
			t.Errorf("MessageRetentionPeriod: got %v s, want %v s (14 days)", got, want)
		}
		mustMatch(t, "the queue policy denies requests without TLS", func() {
			s.template.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
				"Queues": []any{ref(dlqID)},
				"PolicyDocument": map[string]any{
					"Statement": assertions.Match_ArrayWith(&[]any{
						assertions.Match_ObjectLike(&map[string]any{
							"Effect":    "Deny",
							"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
						}),
					}),
				},
			})
		})
	})
}

func TestEventBus(t *testing.T) {
	s := MustDefaultStack(t)
	if got, want := len(s.ofType("AWS::Events::EventBus")), 1; got != want {
		t.Fatalf("event buses: got %d, want %d", got, want)
	}
	s.resource(t, s.logicalID(t, "EventBus"), "AWS::Events::EventBus")
}

func TestRoutes(t *testing.T) {
	s := MustDefaultStack(t)
	apiID := s.logicalID(t, "HttpApi")

	got := make(map[string]cfnResource)
	for _, r := range s.ofType("AWS::ApiGatewayV2::Route") {
		if !same(prop(r, "ApiId"), ref(apiID)) {
			continue // the WebSocket API's (TestClientChannel)
		}
		key, _ := prop(r, "RouteKey").(string)
		if _, dup := got[key]; dup {
			t.Errorf("route %q defined twice", key)
		}
		got[key] = r
	}
	var want []string
	for _, r := range routes.Table {
		want = append(want, r.Key())
	}
	if !same(keys(got), sorted(want)) {
		t.Fatalf("route keys: got %v, want %v", keys(got), sorted(want))
	}

	for _, r := range routes.Table {
		t.Run(r.Key(), func(t *testing.T) {
			route := got[r.Key()]
			if got, want := prop(route, "ApiId"), ref(apiID); !same(got, want) {
				t.Errorf("ApiId: got %s, want %s", canonical(got), canonical(want))
			}
			// Target is {"Fn::Join": ["", ["integrations/", {"Ref": <integration>}]]}.
			join, _ := prop(route, "Target").(map[string]any)["Fn::Join"].([]any)
			if len(join) != 2 {
				t.Fatalf("Target: got %s, want a Fn::Join", canonical(prop(route, "Target")))
			}
			parts, _ := join[1].([]any)
			if len(parts) != 2 || parts[0] != "integrations/" {
				t.Fatalf("Target: got %s, want integrations/<ref>", canonical(prop(route, "Target")))
			}
			integrationID, _ := parts[1].(map[string]any)["Ref"].(string)
			integration := s.resource(t, integrationID, "AWS::ApiGatewayV2::Integration")
			if got, want := prop(integration, "IntegrationType"), "AWS_PROXY"; got != want {
				t.Errorf("IntegrationType: got %v, want %v", got, want)
			}
			if got, want := prop(integration, "PayloadFormatVersion"), "2.0"; got != want {
				t.Errorf("PayloadFormatVersion: got %v, want %v", got, want)
			}
			if got, want := prop(integration, "IntegrationUri"), getAtt(s.functionID(t, r.Function), "Arn"); !same(got, want) {
				t.Errorf("IntegrationUri: got %s, want %s (function %s)", canonical(got), canonical(want), r.Function)
			}
		})
	}

	t.Run("InvokePermissions", func(t *testing.T) {
		perRoute := make(map[string]int)
		for _, r := range routes.Table {
			perRoute[r.Function]++
		}
		perRoute[routes.Channel] = 3 // the WebSocket API's $connect, $disconnect, $default
		for _, name := range routes.Functions {
			fnID := s.functionID(t, name)
			n := 0
			for _, p := range s.ofType("AWS::Lambda::Permission") {
				if same(prop(p, "FunctionName"), getAtt(fnID, "Arn")) && prop(p, "Principal") == "apigateway.amazonaws.com" {
					n++
				}
			}
			if got, want := n, perRoute[name]; got != want {
				t.Errorf("API Gateway invoke permissions of %s: got %d, want %d (one per route)", name, got, want)
			}
		}
	})
}

func TestHTTPAPI(t *testing.T) {
	s := MustDefaultStack(t)
	httpAPIs := 0 // the other is the client channel's WebSocket API
	for _, a := range s.ofType("AWS::ApiGatewayV2::Api") {
		if prop(a, "ProtocolType") == "HTTP" {
			httpAPIs++
		}
	}
	if got, want := httpAPIs, 1; got != want {
		t.Fatalf("HTTP APIs: got %d, want %d", got, want)
	}
	api := s.resource(t, s.logicalID(t, "HttpApi"), "AWS::ApiGatewayV2::Api")
	if got, want := prop(api, "ProtocolType"), "HTTP"; got != want {
		t.Errorf("ProtocolType: got %v, want %v", got, want)
	}

	t.Run("CORS", func(t *testing.T) {
		cors, _ := prop(api, "CorsConfiguration").(map[string]any)
		if got, want := cors["AllowOrigins"], []any{"*"}; !same(got, want) {
			t.Errorf("AllowOrigins: got %v, want %v", got, want)
		}
		// API Gateway replaces the functions' CORS headers with these, so
		// they must be exactly the lists the functions and the local stack
		// use.
		if got, want := strs(cors["AllowHeaders"]), routes.CORSAllowHeaders; !slices.Equal(got, want) {
			t.Errorf("AllowHeaders: got %v, want routes.CORSAllowHeaders %v", got, want)
		}
		if got, want := strs(cors["ExposeHeaders"]), routes.CORSExposeHeaders; !slices.Equal(got, want) {
			t.Errorf("ExposeHeaders: got %v, want routes.CORSExposeHeaders %v", got, want)
		}
		for _, h := range []string{"Retry-After", "Location", "Idempotent-Replayed"} { // what apigw sends
			if !slices.Contains(strs(cors["ExposeHeaders"]), h) {
				t.Errorf("ExposeHeaders: got %v, want it to contain %s", cors["ExposeHeaders"], h)
			}
		}
		methods := strs(cors["AllowMethods"])
		if got, want := methods, routes.CORSAllowMethods; !slices.Equal(got, want) {
			t.Errorf("AllowMethods: got %v, want routes.CORSAllowMethods %v", got, want)
		}
		for _, m := range []string{"GET", "POST", "DELETE", "OPTIONS"} {
			if !slices.Contains(methods, m) {
				t.Errorf("AllowMethods: got %v, want it to contain %s", methods, m)
			}
		}
		if got, want := cors["MaxAge"], float64(routes.CORSMaxAgeSeconds); got != want {
			t.Errorf("MaxAge: got %v, want %v s", got, want)
		}
	})

	t.Run("DefaultStage", func(t *testing.T) {
		stages := map[string]cfnResource{} // the HTTP API's (TestClientChannel has the WebSocket stage)
		for id, st := range s.ofType("AWS::ApiGatewayV2::Stage") {
			if same(prop(st, "ApiId"), ref(s.logicalID(t, "HttpApi"))) {
				stages[id] = st
			}
		}
		if got, want := len(stages), 1; got != want {
			t.Fatalf("stages: got %d, want %d", got, want)
		}
		stage := s.resource(t, s.logicalID(t, "HttpApiDefaultStage"), "AWS::ApiGatewayV2::Stage")
		if got, want := prop(stage, "StageName"), "$default"; got != want {
			t.Errorf("StageName: got %v, want %v", got, want)
		}
		if got, want := prop(stage, "AutoDeploy"), true; got != want {
			t.Errorf("AutoDeploy: got %v, want %v", got, want)
		}
		wantThrottle := map[string]any{"ThrottlingRateLimit": DefaultThrottleRateLimit, "ThrottlingBurstLimit": DefaultThrottleBurstLimit}
		if got := prop(stage, "DefaultRouteSettings"); !same(got, wantThrottle) {
			t.Errorf("DefaultRouteSettings: got %s, want %s", canonical(got), canonical(wantThrottle))
		}
		logs, _ := prop(stage, "AccessLogSettings").(map[string]any)
		logsID := s.logicalID(t, "HttpApiAccessLogs")
		if got, want := logs["DestinationArn"], getAtt(logsID, "Arn"); !same(got, want) {
			t.Errorf("access log DestinationArn: got %s, want %s", canonical(got), canonical(want))
		}
		format, _ := logs["Format"].(string)
		var fields map[string]string
		if err := json.Unmarshal([]byte(format), &fields); err != nil {
			t.Errorf("access log Format %q is not a JSON object of strings: %v", format, err)
		}
		for _, v := range []string{"$context.requestId", "$context.routeKey", "$context.status", "$context.identity.sourceIp"} {
			if !slices.Contains(mapValues(fields), v) {
				t.Errorf("access log Format: got %q, want it to log %s", format, v)
			}
		}
		if got, want := prop(s.resource(t, logsID, "AWS::Logs::LogGroup"), "RetentionInDays"), 30.0; got != want {
			t.Errorf("access log RetentionInDays: got %v, want %v", got, want)
		}
	})

	t.Run("Overrides", func(t *testing.T) {
		o := MustSynth(t, overrideProps(t))
		api := o.resource(t, o.logicalID(t, "HttpApi"), "AWS::ApiGatewayV2::Api")
		if got, want := prop(api, "CorsConfiguration").(map[string]any)["AllowOrigins"], []any{"https://app.example.com", "https://admin.example.com"}; !same(got, want) {
			t.Errorf("AllowOrigins: got %v, want %v", got, want)
		}
		stage := o.resource(t, o.logicalID(t, "HttpApiDefaultStage"), "AWS::ApiGatewayV2::Stage")
		if got, want := prop(stage, "DefaultRouteSettings"), map[string]any{"ThrottlingRateLimit": 10, "ThrottlingBurstLimit": 20}; !same(got, want) {
			t.Errorf("DefaultRouteSettings: got %s, want %s", canonical(got), canonical(want))
		}
	})
}

// mapValues returns m's values.
func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestAlarms(t *testing.T) {
	s := MustDefaultStack(t)
	alarms := s.ofType("AWS::CloudWatch::Alarm")
	if got, want := len(alarms), 2*len(routes.Functions)+12+7; got != want {
		t.Errorf("alarms: got %d, want %d (errors and throttles per function, eight DLQ depths, iterator age, timer age, readiness job age, "+
			"resume job age, webhook queue age, checkpoint job age, table throttles, both APIs' errors, error logs, stopped pools)", got, want)
	}
	// find returns the alarms on metric in namespace with the given dimension.
	find := func(namespace, metric string, dimension map[string]any) []cfnResource {
		var out []cfnResource
		for _, a := range alarms {
			if prop(a, "Namespace") == namespace && prop(a, "MetricName") == metric && same(prop(a, "Dimensions"), []any{dimension}) {
				out = append(out, a)
			}
		}
		return out
	}
	for _, name := range routes.Functions {
		for _, metric := range []string{"Errors", "Throttles"} {
			t.Run(name+"/"+metric, func(t *testing.T) {
				found := find("AWS/Lambda", metric, map[string]any{"Name": "FunctionName", "Value": ref(s.functionID(t, name))})
				if got, want := len(found), 1; got != want {
					t.Fatalf("alarms: got %d, want %d", got, want)
				}
				a := found[0]
				if got, want := prop(a, "ComparisonOperator"), "GreaterThanOrEqualToThreshold"; got != want {
					t.Errorf("ComparisonOperator: got %v, want %v", got, want)
				}
				if got, want := prop(a, "Threshold"), 1.0; got != want {
					t.Errorf("Threshold: got %v, want %v", got, want)
				}
				if got, want := prop(a, "TreatMissingData"), "notBreaching"; got != want {
					t.Errorf("TreatMissingData: got %v, want %v", got, want)
				}
			})
		}
	}
	t.Run("DLQDepth", func(t *testing.T) {
		dlqID := s.logicalID(t, "IdlePauseScheduleDLQ")
		found := find("AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]any{"Name": "QueueName", "Value": getAtt(dlqID, "QueueName")})
		if got, want := len(found), 1; got != want {
			t.Fatalf("alarms: got %d, want %d", got, want)
		}
		a := found[0]
		if got, want := prop(a, "ComparisonOperator"), "GreaterThanThreshold"; got != want {
			t.Errorf("ComparisonOperator: got %v, want %v", got, want)
		}
		if got, want := prop(a, "Threshold"), 0.0; got != want {
			t.Errorf("Threshold: got %v, want %v", got, want)
		}
		if got, want := prop(a, "Statistic"), "Maximum"; got != want {
			t.Errorf("Statistic: got %v, want %v", got, want)
		}
	})
}

func TestOutputs(t *testing.T) {
	s := MustDefaultStack(t)
	apiURL, ok := s.doc.Outputs["ApiUrl"]
	if !ok {
		t.Fatalf("outputs: got %v, want ApiUrl", keys(s.doc.Outputs))
	}
	if url := canonical(apiURL.Value); !strings.Contains(url, `"Ref": "`+s.logicalID(t, "HttpApi")+`"`) || !strings.Contains(url, ".execute-api.") {
		t.Errorf("ApiUrl: got %s, want the HTTP API's execute-api URL", url)
	}
	for name, want := range map[string]any{
		"TableName":    ref(s.logicalID(t, "SessionsTable")),
		"EventBusName": ref(s.logicalID(t, "EventBus")),
	} {
		out, ok := s.doc.Outputs[name]
		if !ok {
			t.Errorf("outputs: got %v, want %s", keys(s.doc.Outputs), name)
			continue
		}
		if !same(out.Value, want) {
			t.Errorf("%s: got %s, want %s", name, canonical(out.Value), canonical(want))
		}
		if out.Description == "" {
			t.Errorf("%s: no description", name)
		}
	}
}

func TestCheckFunctionsDir(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		if err := CheckFunctionsDir(MustFunctionsDir(t)); err != nil {
			t.Errorf("CheckFunctionsDir: %v", err)
		}
	})
	t.Run("ErrMissing", func(t *testing.T) {
		dir := MustFunctionsDir(t)
		if err := os.Remove(BootstrapPath(dir, routes.Reconnect)); err != nil {
			t.Fatal(err)
		}
		err := CheckFunctionsDir(dir)
		if err == nil || !strings.Contains(err.Error(), routes.Reconnect) {
			t.Errorf("CheckFunctionsDir: got %v, want an error naming %s", err, routes.Reconnect)
		}
	})
	t.Run("ErrNotAFile", func(t *testing.T) {
		dir := MustFunctionsDir(t)
		path := BootstrapPath(dir, routes.Status)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := CheckFunctionsDir(dir); err == nil {
			t.Error("CheckFunctionsDir: got nil, want an error for a directory named bootstrap")
		}
	})
}

func TestFunctionSpecsCoverRoutes(t *testing.T) {
	var names []string
	for _, spec := range functionSpecs {
		names = append(names, spec.name)
	}
	if got, want := names, routes.Functions; !same(got, want) {
		t.Errorf("functionSpecs: got %v, want routes.Functions %v", got, want)
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

// TestLegacyOwnerIndex: the migration deploy keeps the first account index
// (by_owner, ALL) beside the keys-only one the code reads; the default
// stack has only the keys-only one.
func TestLegacyOwnerIndex(t *testing.T) {
	projections := func(s *synthesized) map[string]any {
		table := s.resource(t, s.logicalID(t, "SessionsTable"), "AWS::DynamoDB::Table")
		out := map[string]any{}
		for _, g := range prop(table, "GlobalSecondaryIndexes").([]any) {
			g := g.(map[string]any)
			out[g["IndexName"].(string)] = g["Projection"].(map[string]any)["ProjectionType"]
		}
		return out
	}
	def := projections(MustDefaultStack(t))
	if got, want := def[tabledef.IndexByOwner], tabledef.ProjectionKeysOnly; got != want {
		t.Errorf("default stack: %s projects %v, want %v", tabledef.IndexByOwner, got, want)
	}
	if _, ok := def[tabledef.LegacyOwnerIndex.Name]; ok {
		t.Errorf("default stack keeps %s, want it dropped", tabledef.LegacyOwnerIndex.Name)
	}
	props := overrideProps(t)
	props.KeepLegacyOwnerIndex = true
	mig := projections(MustSynth(t, props))
	if got, want := mig[tabledef.LegacyOwnerIndex.Name], tabledef.ProjectionAll; got != want {
		t.Errorf("migration stack: %s projects %v, want %v", tabledef.LegacyOwnerIndex.Name, got, want)
	}
	if got, want := mig[tabledef.IndexByOwner], tabledef.ProjectionKeysOnly; got != want {
		t.Errorf("migration stack: %s projects %v, want %v", tabledef.IndexByOwner, got, want)
	}
}

// TestHoldBackIndexes: a deploy that holds an index back synthesizes the
// table without it and with every other one (the first of the two deploys
// of docs/DEPLOY.md "Upgrading a deployed table"); the default stack has
// every index of tabledef.
func TestHoldBackIndexes(t *testing.T) {
	names := func(s *synthesized) []string {
		table := s.resource(t, s.logicalID(t, "SessionsTable"), "AWS::DynamoDB::Table")
		var out []string
		for _, g := range prop(table, "GlobalSecondaryIndexes").([]any) {
			out = append(out, g.(map[string]any)["IndexName"].(string))
		}
		slices.Sort(out)
		return out
	}
	var all []string
	for _, ix := range tabledef.Indexes {
		all = append(all, ix.Name)
	}
	slices.Sort(all)
	if got := names(MustDefaultStack(t)); !slices.Equal(got, all) {
		t.Errorf("default stack indexes %v, want %v", got, all)
	}
	props := overrideProps(t)
	props.HoldBackIndexes = []string{tabledef.IndexByOwnerState}
	want := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == tabledef.IndexByOwnerState })
	if got := names(MustSynth(t, props)); !slices.Equal(got, want) {
		t.Errorf("held back %s: indexes %v, want %v", tabledef.IndexByOwnerState, got, want)
	}
}
