package dynamotest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/sandmanhq/sandman/internal/dynamo"
)

// MustStream returns a DynamoDB Streams client for DynamoDB Local at
// $DYNAMODB_ENDPOINT and the ARN of table's stream (dynamo.EnableStream;
// tables from MustTable have one from the start), for tests that read the
// outbox (internal/outbox).
func MustStream(tb testing.TB, table string) (*dynamodbstreams.Client, string) {
	tb.Helper()
	arn, err := dynamo.EnableStream(tb.Context(), MustClient(tb), table)
	if err != nil || arn == "" {
		tb.Fatalf("stream of table %s: %q, %v", table, arn, err)
	}
	streams, err := dynamo.NewStreamsClient(tb.Context(), Endpoint(tb))
	if err != nil {
		tb.Fatalf("streams client: %v", err)
	}
	return streams, arn
}
