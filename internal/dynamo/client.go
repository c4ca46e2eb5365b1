package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// Client settings. DynamoDB answers in milliseconds; a request that takes
// longer than requestTimeout is abandoned and retried, up to
// retryMaxAttempts attempts in all with the SDK's standard backoff
// (throttling and 5xx are retried; a failed condition is not).
const (
	retryMaxAttempts = 5
	requestTimeout   = 10 * time.Second
)

// LocalRegion is the region a client for a custom endpoint (DynamoDB Local)
// signs for. DynamoDB Local runs with -sharedDb (scripts/dynamodb-local.sh),
// so the region and the credentials do not select a database.
const LocalRegion = "us-east-1"

// NewClient returns a DynamoDB client. With endpoint "" it is a client for AWS
// configured the SDK's default way (environment, shared config, the Lambda
// role), for production. With an endpoint such as "http://127.0.0.1:8000" it
// is a client for DynamoDB Local that ignores the developer's AWS
// configuration: static dummy credentials, region LocalRegion, and no CRC32
// response checksum validation (DynamoDB Local's checksums are not to be
// relied on). Both retry and time out as described at retryMaxAttempts.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	httpClient := awshttp.NewBuildableClient().WithTimeout(requestTimeout)
	if endpoint != "" {
		return dynamodb.New(dynamodb.Options{
			BaseEndpoint:                    aws.String(endpoint),
			Region:                          LocalRegion,
			Credentials:                     credentials.NewStaticCredentialsProvider("local", "local", ""),
			HTTPClient:                      httpClient,
			RetryMaxAttempts:                retryMaxAttempts,
			DisableValidateResponseChecksum: true,
		}), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithHTTPClient(httpClient),
		config.WithRetryMaxAttempts(retryMaxAttempts),
	)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// NewStreamsClient returns a DynamoDB Streams client configured as NewClient
// configures the table's: for AWS with endpoint "", else for DynamoDB Local
// at endpoint (dummy credentials, region LocalRegion). The local outbox
// poller (internal/outbox) reads the table's stream with it.
func NewStreamsClient(ctx context.Context, endpoint string) (*dynamodbstreams.Client, error) {
	httpClient := awshttp.NewBuildableClient().WithTimeout(requestTimeout)
	if endpoint != "" {
		return dynamodbstreams.New(dynamodbstreams.Options{
			BaseEndpoint:     aws.String(endpoint),
			Region:           LocalRegion,
			Credentials:      credentials.NewStaticCredentialsProvider("local", "local", ""),
			HTTPClient:       httpClient,
			RetryMaxAttempts: retryMaxAttempts,
		}), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithHTTPClient(httpClient),
		config.WithRetryMaxAttempts(retryMaxAttempts),
	)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return dynamodbstreams.NewFromConfig(cfg), nil
}
