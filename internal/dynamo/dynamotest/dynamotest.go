// Package dynamotest connects tests to DynamoDB Local: MustClient builds a
// client for the endpoint in DYNAMODB_ENDPOINT, MustTable creates a fresh,
// uniquely named sessions table for one test and deletes it afterwards.
//
// Without DYNAMODB_ENDPOINT each of them skips the test with one line naming
// `make test` (internal/testenv), or fails it when testenv.RequireEnv is
// set. `make test` starts DynamoDB Local and sets both; by hand:
//
//	export DYNAMODB_ENDPOINT=$(scripts/dynamodb-local.sh start --in-memory)
//	go test ./internal/dynamo/...
//	scripts/dynamodb-local.sh stop
package dynamotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/testenv"
)

// EndpointEnv names the environment variable holding DynamoDB Local's
// endpoint, e.g. "http://127.0.0.1:8000".
const EndpointEnv = "DYNAMODB_ENDPOINT"

// setupTimeout bounds creating or deleting one table.
const setupTimeout = time.Minute

// Endpoint returns DynamoDB Local's endpoint, $DYNAMODB_ENDPOINT. When the
// variable is unset it skips the test with one line naming `make test`, or
// fails it when testenv.RequireEnv is set (testenv.Missing).
func Endpoint(tb testing.TB) string {
	tb.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		testenv.Missing(tb, "DynamoDB Local ("+EndpointEnv+" is unset)", "make test")
	}
	return endpoint
}

// MustClient returns a client for DynamoDB Local at $DYNAMODB_ENDPOINT (dummy
// static credentials, region dynamo.LocalRegion). Without the variable it
// skips or fails the test as Endpoint does.
func MustClient(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	endpoint := Endpoint(tb)
	client, err := dynamo.NewClient(tb.Context(), endpoint)
	if err != nil {
		tb.Fatalf("dynamodb client for %s: %v", endpoint, err)
	}
	return client
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// MustTable creates a sessions table (dynamo.CreateTable) with a name unique
// to this test and run, and deletes it when the test ends. It returns the
// table's name.
func MustTable(tb testing.TB) string {
	tb.Helper()
	client := MustClient(tb)
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		tb.Fatalf("random table suffix: %v", err)
	}
	base := unsafeChars.ReplaceAllString(tb.Name(), "_")
	if len(base) > 200 {
		base = base[:200]
	}
	name := "test-" + base + "-" + hex.EncodeToString(suffix[:])

	ctx, cancel := context.WithTimeout(tb.Context(), setupTimeout)
	defer cancel()
	if err := dynamo.CreateTable(ctx, client, name); err != nil {
		tb.Fatalf("create table: %v", err)
	}
	tb.Cleanup(func() {
		// tb.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, client, name); err != nil {
			tb.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}
