package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// SandmanStackProps.WebSocketAccessLogs values. API Gateway writes a
// WebSocket (or REST) stage's access logs through the account's CloudWatch
// Logs role, an account-level setting per region that a fresh account does
// not have; a stage with access logs then fails to deploy ("CloudWatch Logs
// role ARN must be set in account settings"). HTTP APIs need no such role.
const (
	// WSAccessLogsOff: no access logs on the WebSocket stage (the default),
	// so the first deploy on a fresh account succeeds. The channel
	// function's own logs still record every connect, message and error.
	WSAccessLogsOff = "off"
	// WSAccessLogsCreateRole: the stack creates the role
	// (AmazonAPIGatewayPushToCloudWatchLogs) and the AWS::ApiGateway::Account
	// setting naming it, and the stage logs. The setting is account-wide for
	// the region: it replaces a role set by hand, and only one stack per
	// account and region should own it.
	WSAccessLogsCreateRole = "create-role"
	// WSAccessLogsAccountRole: the account already has the role set (by
	// hand or another stack); the stage logs.
	WSAccessLogsAccountRole = "account-role"
)

// newAPIGatewayAccountRole creates API Gateway's CloudWatch Logs role and
// the account setting that names it (WSAccessLogsCreateRole).
func newAPIGatewayAccountRole(stack awscdk.Stack) awsapigateway.CfnAccount {
	role := awsiam.NewRole(stack, jsii.String("ApiGatewayCloudWatchRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("apigateway.amazonaws.com"), nil),
		Description: jsii.String("API Gateway's account-level role for writing access logs to CloudWatch Logs"),
		ManagedPolicies: &[]awsiam.IManagedPolicy{
			awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String("service-role/AmazonAPIGatewayPushToCloudWatchLogs")),
		},
	})
	suppress(role, nagAPIGatewayLogsRole)
	account := awsapigateway.NewCfnAccount(stack, jsii.String("ApiGatewayAccount"), &awsapigateway.CfnAccountProps{
		CloudWatchRoleArn: role.RoleArn(),
	})
	return account
}
