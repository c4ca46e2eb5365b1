package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
)

// envLambda makes the test binary act as a Lambda function (see TestMain):
// the cold-start and Runtime API tests start it as their "bootstrap".
const envLambda = "BENCH_TEST_LAMBDA"

// TestMain runs the tests, or acts as the bench binary's children
// (ChildIfAsked), or, with BENCH_TEST_LAMBDA=1, serves
// testFunction through aws-lambda-go's runtime client against
// AWS_LAMBDA_RUNTIME_API, exactly as a function's main does; with
// BENCH_TEST_LAMBDA=exit it exits at once, as a function whose cold start
// failed.
func TestMain(m *testing.M) {
	ChildIfAsked() // a process of the fleet test, a local sandbox or its app: exits
	switch os.Getenv(envLambda) {
	case "1":
		lambda.Start(testFunction)
		return
	case "exit":
		fmt.Fprintln(os.Stderr, "cold start failed (on purpose)")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testPayload is what the tests send testFunction.
type testPayload struct {
	Fail bool   `json:"fail"`
	Echo string `json:"echo"`
}

// testAnswer is what testFunction answers: the payload's echo and what the
// runtime client read from the Runtime API's headers.
type testAnswer struct {
	Echo        string `json:"echo"`
	RequestID   string `json:"request_id"`
	FunctionARN string `json:"function_arn"`
	HasDeadline bool   `json:"has_deadline"`
}

func testFunction(ctx context.Context, p testPayload) (testAnswer, error) {
	if p.Fail {
		return testAnswer{}, errors.New("asked to fail")
	}
	lc, _ := lambdacontext.FromContext(ctx)
	_, hasDeadline := ctx.Deadline()
	a := testAnswer{Echo: p.Echo, HasDeadline: hasDeadline}
	if lc != nil {
		a.RequestID, a.FunctionARN = lc.AwsRequestID, lc.InvokedFunctionArn
	}
	return a, nil
}

// MustEnv returns an Env on the DynamoDB Local of $DYNAMODB_ENDPOINT (the
// test fails when it is unset), the repository three levels up, code-under-test
// logs discarded and progress sent to the test log.
func MustEnv(tb testing.TB) *Env {
	tb.Helper()
	dynamotest.MustClient(tb) // fails with instructions when DYNAMODB_ENDPOINT is unset
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		tb.Fatal(err)
	}
	env, err := NewEnv(tb.Context(), os.Getenv(dynamotest.EndpointEnv), repo, io.Discard, tbWriter{tb})
	if err != nil {
		tb.Fatalf("bench env: %v", err)
	}
	return env
}

// tbWriter writes progress lines to the test log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}

// MustJSON encodes v.
func MustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// MustTestBinary returns the path of the running test binary, which acts as
// a Lambda function under BENCH_TEST_LAMBDA=1.
func MustTestBinary(tb testing.TB) string {
	tb.Helper()
	bin, err := os.Executable()
	if err != nil {
		tb.Fatalf("test binary: %v", err)
	}
	return bin
}

// lambdaEnv is the environment of the test binary acting as a function.
func lambdaEnv() []string {
	return []string{envLambda + "=1", "PATH=/usr/bin:/bin", fmt.Sprintf("HOME=%s", os.TempDir())}
}
