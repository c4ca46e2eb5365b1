package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
)

// grantSecretValue lets fn read secret's value: secretsmanager:GetSecretValue
// and nothing else. ISecret.GrantRead also grants DescribeSecret, which no
// function calls (internal/app reads values only). A secret imported by
// name gets the ARN pattern Secrets Manager's random suffix needs.
func grantSecretValue(fn awslambda.Function, secret awssecretsmanager.ISecret) {
	arn := secret.SecretFullArn()
	if arn == nil {
		arn = awscdk.Stack_Of(secret).FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("secretsmanager"),
			Resource:     jsii.String("secret"),
			ResourceName: jsii.String(*secret.SecretName() + "-??????"),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: jsii.Strings(*arn),
	}))
}
