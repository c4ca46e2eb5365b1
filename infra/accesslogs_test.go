package infra

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/envnames"
)

// optionsTopicArn is the alarm topic of optionsStack.
const optionsTopicArn = "arn:aws:sns:eu-west-1:123456789012:sandman-alarms"

// optionsHeadroom is the guard headroom of optionsStack.
const optionsHeadroom = 20 * time.Minute

var optionsStackOnce struct {
	once sync.Once
	s    *synthesized
}

// optionsBrand is the brand of optionsStack: name, accent, logo.
var optionsBrand = [3]string{"Acme Cloud", "#0f766e", "https://cdn.acme.test/logo.svg"}

// optionsStack is the stack with the operational options on: a running
// limit in the settings, WebSocket access logs with the stack's own
// CloudWatch role, an alarm topic, a guard headroom (optionsHeadroom) and
// a brand (optionsBrand). Synthesized once per test binary.
func optionsStack(tb testing.TB) *synthesized {
	tb.Helper()
	optionsStackOnce.once.Do(func() {
		optionsStackOnce.s = MustSynth(tb, &SandmanStackProps{
			ProviderSettings:    map[string]string{envnames.MaxRunning: "7"},
			WebSocketAccessLogs: WSAccessLogsCreateRole,
			AlarmTopicArn:       optionsTopicArn,
			GuardHeadroom:       optionsHeadroom,
			BrandName:           optionsBrand[0],
			BrandAccent:         optionsBrand[1],
			BrandLogoURL:        optionsBrand[2],
		})
	})
	if optionsStackOnce.s == nil {
		tb.Fatal("the options stack failed to synthesize in an earlier test")
	}
	return optionsStackOnce.s
}

// TestFirstDeployNeedsNoAccountSetting: by default nothing in the stack
// needs API Gateway's account-level CloudWatch role (the WebSocket stage
// has no access logs, and the stack sets no account setting), so a first
// deploy on a fresh account succeeds; with create-role the stack makes the
// role and the AWS::ApiGateway::Account setting itself, and the stage that
// logs depends on it.
func TestFirstDeployNeedsNoAccountSetting(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		s := MustDefaultStack(t)
		for id, st := range s.ofType("AWS::ApiGatewayV2::Stage") {
			if logs := prop(st, "AccessLogSettings"); logs != nil && strings.Contains(id, "WebSocket") {
				t.Errorf("%s writes access logs by default: %s", id, canonical(logs))
			}
		}
		if got := s.ofType("AWS::ApiGateway::Account"); len(got) != 0 {
			t.Errorf("the default stack changes the account setting: %v", keys(got))
		}
	})
	t.Run("CreateRole", func(t *testing.T) {
		s := optionsStack(t)
		accounts := s.ofType("AWS::ApiGateway::Account")
		if len(accounts) != 1 {
			t.Fatalf("%d AWS::ApiGateway::Account, want 1", len(accounts))
		}
		roleID := s.logicalID(t, "ApiGatewayCloudWatchRole")
		for _, a := range accounts {
			if got, want := prop(a, "CloudWatchRoleArn"), getAtt(roleID, "Arn"); !same(got, want) {
				t.Errorf("CloudWatchRoleArn %s, want the stack's role", canonical(got))
			}
		}
		role := s.resource(t, roleID, "AWS::IAM::Role")
		if doc := canonical(prop(role, "AssumeRolePolicyDocument")); !strings.Contains(doc, `"apigateway.amazonaws.com"`) {
			t.Errorf("role trust %s, want API Gateway", doc)
		}
		if got := canonical(prop(role, "ManagedPolicyArns")); !strings.Contains(got, "AmazonAPIGatewayPushToCloudWatchLogs") {
			t.Errorf("role policies %s, want AmazonAPIGatewayPushToCloudWatchLogs", got)
		}
		stageID := s.logicalID(t, "WebSocketStage")
		stage := s.resource(t, stageID, "AWS::ApiGatewayV2::Stage")
		logs, _ := prop(stage, "AccessLogSettings").(map[string]any)
		if got, want := logs["DestinationArn"], getAtt(s.logicalID(t, "WebSocketApiAccessLogs"), "Arn"); !same(got, want) {
			t.Errorf("access log destination: got %s, want the WebSocketApiAccessLogs group", canonical(got))
		}
		if format, _ := logs["Format"].(string); !strings.Contains(format, "$context.connectionId") ||
			!strings.Contains(format, "$context.eventType") || !strings.Contains(format, "$context.status") {
			t.Errorf("access log format %q lacks the connection id, event type or status", format)
		}
		deps := canonical(s.doc.Resources[stageID].DependsOn)
		for id := range accounts {
			if !strings.Contains(deps, id) {
				t.Errorf("the stage depends on %s, want it to wait for the account setting %s", deps, id)
			}
		}
	})
}
