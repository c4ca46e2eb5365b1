package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// AddNagChecks applies cdk-nag's AwsSolutions rule pack to scope (usually the
// app) as an aspect. Findings become stack annotations at synthesis: errors
// fail `cdk synth`, and NewSandmanStack suppresses, with a reason each, the
// findings it accepts (see NagSuppressions).
func AddNagChecks(scope constructs.IConstruct) { addNagChecks(scope, false) }

// addNagChecks is AddNagChecks; logIgnores also logs every suppressed finding
// as an info annotation (the tests count them).
func addNagChecks(scope constructs.IConstruct, logIgnores bool) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Verbose:    jsii.Bool(true),
		LogIgnores: jsii.Bool(logIgnores),
	}), nil)
}

// NagSuppression is one accepted cdk-nag finding: the rule, the reason it is
// acceptable here, and what it is attached to.
type NagSuppression struct {
	// RuleID is the cdk-nag rule, e.g. "AwsSolutions-IAM5".
	RuleID string
	// AppliesTo narrows an IAM5 suppression to one finding (a regular
	// expression in cdk-nag's /.../ form); "" suppresses the rule on the
	// resource and its children.
	AppliesTo string
	// Reason says why the finding is acceptable.
	Reason string
	// On names the resources it is attached to.
	On string
}

// The accepted findings. Nothing else is suppressed: any other finding fails
// the stack tests and `cdk synth`.
var (
	nagXRay = NagSuppression{
		RuleID:    "AwsSolutions-IAM5",
		AppliesTo: `/^Resource::\*$/`,
		Reason: "X-Ray active tracing (Tracing ACTIVE) needs xray:PutTraceSegments and xray:PutTelemetryRecords, " +
			"which do not support resource-level permissions; the actions themselves are listed, not wildcarded. " +
			"The same holds for dynamodb:ListStreams, which the publisher's stream event source needs.",
		On: "every function's execution role",
	}
	nagRoutesAuth = NagSuppression{
		RuleID: "AwsSolutions-APIG4",
		Reason: "Every route authenticates inside its function: the API routes check the API key " +
			"(Authorization: Bearer or x-api-key, stored hashed, docs/DESIGN.md \"HTTP API\") and answer 401 before any work; " +
			"the webhook route verifies the provider's signature over the raw body in constant time. " +
			"An API Gateway authorizer would only repeat the same check.",
		On: "the HTTP API's routes",
	}
	nagStreamDLQ = NagSuppression{
		RuleID: "AwsSolutions-SQS3",
		Reason: "This queue is itself the on-failure destination (dead-letter queue) of the publisher's stream " +
			"event source mapping; it holds descriptions of record batches given up on, and its depth has an alarm.",
		On: "the publisher's stream dead-letter queue",
	}
	nagDLQ = NagSuppression{
		RuleID: "AwsSolutions-SQS3",
		Reason: "This queue is itself the dead-letter queue of the idle pause schedule's EventBridge target; " +
			"nothing consumes it automatically, and its depth has an alarm.",
		On: "the idle pause schedule's dead-letter queue",
	}
)

// The client channel's accepted findings (infra/channel.go).
var (
	nagWebSocketAuth = NagSuppression{
		RuleID: "AwsSolutions-APIG4",
		Reason: "The WebSocket API's $connect verifies the session-scoped client token (?token=, HMAC, constant time, " +
			"internal/channel/clienttoken) in the channel function and answers 401/403, which refuses the upgrade; " +
			"$default and $disconnect only act on connections $connect accepted and stored.",
		On: "the WebSocket API's routes",
	}
	nagManageConnections = NagSuppression{
		RuleID: "AwsSolutions-IAM5",
		AppliesTo: `/^Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<WebSocketApi[0-9A-F]+>\/` +
			WebSocketStageName + `\/\*\/@connections\/\*$/`,
		Reason: "execute-api:ManageConnections on this one API's stage's @connections: connection ids are made by " +
			"API Gateway at connect time, so the resource cannot name them.",
		On: "the channel and notifier functions' roles",
	}
	nagClientTokenRotation = NagSuppression{
		RuleID: "AwsSolutions-SMG4",
		Reason: "The client-token key set is rotated by writing a two-key set (new signing key, old key still verifying " +
			"for the 24 h a token may live, internal/channel/clienttoken); an automatic single-value rotation would cut every " +
			"token in flight.",
		On: "the client-token key set secret",
	}
	nagNotifierDLQ = NagSuppression{
		RuleID: "AwsSolutions-SQS3",
		Reason: "This queue is itself the dead-letter queue of the notifier's rule target and on-failure destination; " +
			"nothing consumes it automatically, and its depth has an alarm.",
		On: "the notifier's dead-letter queue",
	}
)

// NagSuppressions lists every suppression NewSandmanStack adds.
func NagSuppressions() []NagSuppression {
	return []NagSuppression{nagXRay, nagRoutesAuth, nagDLQ, nagStreamDLQ,
		nagWebSocketAuth, nagManageConnections, nagClientTokenRotation, nagNotifierDLQ,
		nagAPIGatewayLogsRole, nagWebSocketAccessLogsOff, nagArchiveAccessLogs, nagArchiveObjects}
}

// cdk returns s in cdk-nag's form.
func (s NagSuppression) cdk() *cdknag.NagPackSuppression {
	out := &cdknag.NagPackSuppression{Id: jsii.String(s.RuleID), Reason: jsii.String(s.Reason)}
	if s.AppliesTo != "" {
		out.AppliesTo = &[]interface{}{&cdknag.RegexAppliesTo{Regex: jsii.String(s.AppliesTo)}}
	}
	return out
}

// suppress attaches suppressions to construct and its children.
func suppress(construct constructs.IConstruct, suppressions ...NagSuppression) {
	list := make([]*cdknag.NagPackSuppression, 0, len(suppressions))
	for _, s := range suppressions {
		list = append(list, s.cdk())
	}
	cdknag.NagSuppressions_AddResourceSuppressions(construct, &list, jsii.Bool(true))
}

// suppressFunctionRole accepts the IAM5 findings of a function's role.
func suppressFunctionRole(role awsiam.IRole) { suppress(role, nagXRay) }

// suppressRoutes accepts the missing API Gateway authorizer on every route.
func suppressRoutes(api awsapigatewayv2.HttpApi) { suppress(api, nagRoutesAuth) }

// suppressDLQ accepts that the dead-letter queue has no dead-letter queue.
func suppressDLQ(queue awssqs.Queue) { suppress(queue, nagDLQ) }

// Findings of the operational settings (infra/accesslogs.go).
var (
	nagAPIGatewayLogsRole = NagSuppression{
		RuleID: "AwsSolutions-IAM4",
		Reason: "AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API Gateway's account-level " +
			"CloudWatch Logs role; it is created only with sandman:webSocketAccessLogs=create-role.",
		On: "the API Gateway CloudWatch role",
	}
	nagWebSocketAccessLogsOff = NagSuppression{
		RuleID: "AwsSolutions-APIG1",
		Reason: "WebSocket access logs need the account-level API Gateway CloudWatch role, which a fresh account lacks " +
			"(the deploy would fail); they are off until sandman:webSocketAccessLogs says how the role is provided. " +
			"The channel function logs every connect, message and error meanwhile.",
		On: "the WebSocket stage, when its access logs are off",
	}
)
