package infra

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// The client channel in AWS (docs/DESIGN.md "Client channel"): an API Gateway
// WebSocket API whose $connect, $disconnect and $default routes go to the
// channel function, a notifier function an EventBridge rule on the bus
// feeds with every lifecycle event, and the client-token key set, a
// generated Secrets Manager secret.

// WebSocketStageName is the WebSocket API's one stage: its URL is
// wss://{api-id}.execute-api.{region}.amazonaws.com/live (stack output
// WebSocketUrl).
const WebSocketStageName = "live"

// clientTokenUsers are the functions that mint (sessions) or verify (the
// status, activity and resume routes; the channel's $connect) client
// tokens: only they read the key set (secretsmanager:GetSecretValue on it).
var clientTokenUsers = []string{routes.Sessions, routes.Status, routes.Resume, routes.Channel}

// pushers are the functions that post to WebSocket connections: they get
// execute-api:ManageConnections on the stage's @connections and its
// callback URL in envnames.WSManagementURL.
var pushers = []string{routes.Channel, routes.Notifier}

// Settings of the notifier's delivery (ours). A push is retried by
// Lambda's asynchronous invocation on its own; a push much later than the
// transition still carries the current status (the notifier reads the
// table), so an hour of retries is harmless, and after it the event goes to
// NotifierDLQ, which has an alarm.
const (
	notifierRetryAttempts = 2
	notifierMaxEventAge   = time.Hour
)

// wsAccessLogFormat is the WebSocket API's access log line: one JSON
// object of WebSocket API context variables.
const wsAccessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"userAgent":"$context.identity.userAgent","requestTime":"$context.requestTime",` +
	`"requestTimeEpoch":"$context.requestTimeEpoch","eventType":"$context.eventType",` +
	`"routeKey":"$context.routeKey","connectionId":"$context.connectionId","messageId":"$context.messageId",` +
	`"status":"$context.status","integrationLatency":"$context.integrationLatency",` +
	`"errorMessage":"$context.error.message"}`

// newClientTokenKeys creates the client-token key set: a secret whose
// value Secrets Manager generates at deployment, in the one-key form
// clienttoken.ParseKeySet reads ({"signing_key_id":"k1","secret":<64
// alphanumeric characters, standard base64 of 48 bytes>}), so the key never
// appears in the template. Rotation is by hand (docs/OPERATIONS.md
// "Rotating the client-token keys"): write the two-key form with the new
// key signing.
func newClientTokenKeys(stack awscdk.Stack) awssecretsmanager.Secret {
	s := awssecretsmanager.NewSecret(stack, jsii.String("ClientTokenKeys"), &awssecretsmanager.SecretProps{
		Description: jsii.String("Sandman client-token HMAC key set (internal/channel/clienttoken)"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String(`{"signing_key_id":"k1"}`),
			GenerateStringKey:    jsii.String("secret"),
			PasswordLength:       jsii.Number(64),
			ExcludePunctuation:   jsii.Bool(true),
			IncludeSpace:         jsii.Bool(false),
		},
	})
	suppress(s, nagClientTokenRotation)
	return s
}

// newClientChannel wires the client channel: the key set read by
// clientTokenUsers, the WebSocket API and its stage (throttling and JSON
// access logs like the HTTP API's), the three routes to the channel
// function, ManageConnections for the pushers, the notifier's rule on the
// bus with its dead-letter queue and alarm, and the sessions function told
// the WebSocket URL (ws_url of client-token answers). It returns the stage.
func newClientChannel(stack awscdk.Stack, p SandmanStackProps, functions map[string]awslambda.Function, bus awsevents.EventBus) awsapigatewayv2.WebSocketStage {
	keys := newClientTokenKeys(stack)
	for _, name := range clientTokenUsers {
		fn := functions[name]
		grantSecretValue(fn, keys)
		fn.AddEnvironment(jsii.String(envnames.ClientTokenKeysSecret), keys.SecretArn(), nil)
	}

	channel := functions[routes.Channel]
	integration := func(id string) *awsapigatewayv2.WebSocketRouteOptions {
		return &awsapigatewayv2.WebSocketRouteOptions{
			Integration: awsapigatewayv2integrations.NewWebSocketLambdaIntegration(jsii.String(id), channel, nil),
		}
	}
	api := awsapigatewayv2.NewWebSocketApi(stack, jsii.String("WebSocketApi"), &awsapigatewayv2.WebSocketApiProps{
		Description:            jsii.String("Sandman client channel (browsers, client tokens)"),
		ConnectRouteOptions:    integration("ChannelConnectIntegration"),
		DisconnectRouteOptions: integration("ChannelDisconnectIntegration"),
		DefaultRouteOptions:    integration("ChannelDefaultIntegration"),
	})
	suppress(api, nagWebSocketAuth)
	stageProps := &awsapigatewayv2.WebSocketStageProps{
		WebSocketApi: api,
		StageName:    jsii.String(WebSocketStageName),
		AutoDeploy:   jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(p.ThrottleRateLimit),
			BurstLimit: jsii.Number(p.ThrottleBurstLimit),
		},
	}
	logsOn := p.WebSocketAccessLogs == WSAccessLogsCreateRole || p.WebSocketAccessLogs == WSAccessLogsAccountRole
	if logsOn {
		accessLogs := awslogs.NewLogGroup(stack, jsii.String("WebSocketApiAccessLogs"), &awslogs.LogGroupProps{
			Retention: p.LogRetention,
		})
		stageProps.AccessLogSettings = &accessLogSettings{
			destination: awsapigatewayv2.NewLogGroupLogDestination(accessLogs),
			format:      awsapigateway.AccessLogFormat_Custom(jsii.String(wsAccessLogFormat)),
		}
	}
	stage := awsapigatewayv2.NewWebSocketStage(stack, jsii.String("WebSocketStage"), stageProps)
	switch {
	case p.WebSocketAccessLogs == WSAccessLogsCreateRole:
		// The account's role must be set before the stage asks for logs.
		stage.Node().AddDependency(newAPIGatewayAccountRole(stack))
	case !logsOn:
		suppress(stage, nagWebSocketAccessLogsOff)
	}
	for _, name := range pushers {
		fn := functions[name]
		stage.GrantManagementApiAccess(fn)
		suppress(fn.Role(), nagManageConnections)
		fn.AddEnvironment(jsii.String(envnames.WSManagementURL), stage.CallbackUrl(), nil)
	}
	functions[routes.Sessions].AddEnvironment(jsii.String(envnames.WSURL), stage.Url(), nil)

	newNotifier(stack, functions[routes.Notifier], bus)
	return stage
}

// newNotifier feeds the notifier every lifecycle event on the bus (source
// lifecycle.EventSource) through a rule, and sends what cannot be
// delivered (EventBridge's target retries, then Lambda's asynchronous
// retries of a failed push) to NotifierDLQ, whose depth has an alarm.
// Why a rule and not the stream: channel.Notifier.HandleEvent.
func newNotifier(stack awscdk.Stack, fn awslambda.Function, bus awsevents.EventBus) {
	dlq := awssqs.NewQueue(stack, jsii.String("NotifierDLQ"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(dlq, nagNotifierDLQ)
	fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(notifierRetryAttempts),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(notifierMaxEventAge.Seconds())),
		OnFailure:     awslambdadestinations.NewSqsDestination(dlq),
	})
	awsevents.NewRule(stack, jsii.String("NotifierRule"), &awsevents.RuleProps{
		Description:  jsii.String("Hands every Sandman lifecycle event to the client-channel notifier"),
		EventBus:     bus,
		EventPattern: &awsevents.EventPattern{Source: jsii.Strings(lifecycle.EventSource)},
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{
				DeadLetterQueue: dlq,
				MaxEventAge:     awscdk.Duration_Seconds(jsii.Number(notifierMaxEventAge.Seconds())),
				RetryAttempts:   jsii.Number(185),
			}),
		},
	})
	awscloudwatch.NewAlarm(stack, jsii.String("NotifierDLQAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String("Sandman client-channel pushes given up on (notifier dead-letter queue)"),
		Metric: dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Maximum"),
		}),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}
