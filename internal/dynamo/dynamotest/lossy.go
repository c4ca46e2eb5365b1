package dynamotest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sandmanhq/sandman/internal/dynamo"
)

// LostAnswerClient is an HTTP client for the DynamoDB SDK that forwards every
// request to DynamoDB Local and, once armed, throws away the answer of the
// first PutItem whose body contains the armed string, answering a 500
// InternalServerError instead: the write committed, the caller never heard,
// and the SDK's standard retryer sends it again. Safe for concurrent use.
type LostAnswerClient struct {
	inner aws.HTTPClient

	mu    sync.Mutex
	match string // armed when not ""
	lose  bool   // the next matching PutItem's answer is to be lost
	lost  int    // answers thrown away since Arm
	sent  int    // matching PutItems sent since Arm, the lost one included
}

// Arm makes the next PutItem whose JSON body contains match lose its answer,
// and resets the counters.
func (c *LostAnswerClient) Arm(match string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.match, c.lose, c.lost, c.sent = match, true, 0, 0
}

// Counts returns how many answers were lost and how many matching PutItems
// were sent since Arm.
func (c *LostAnswerClient) Counts() (lost, sent int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost, c.sent
}

// Do forwards req; see LostAnswerClient.
func (c *LostAnswerClient) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	match := c.match
	c.mu.Unlock()
	matched := false
	if match != "" && isWrite(req.Header.Get("X-Amz-Target")) && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		matched = bytes.Contains(body, []byte(match))
	}
	lose := false
	if matched {
		c.mu.Lock()
		c.sent++
		lose, c.lose = c.lose, false
		c.mu.Unlock()
	}
	resp, err := c.inner.Do(req)
	if !lose || err != nil {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	c.mu.Lock()
	c.lost++
	c.mu.Unlock()
	return &http.Response{
		StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:    io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"answer lost (injected)"}`)),
		Request: req,
	}, nil
}

// MustLossyClient returns a DynamoDB Local client whose HTTP goes through a
// LostAnswerClient and whose SDK retries (5 attempts) do not wait.
func MustLossyClient(tb testing.TB) (*dynamodb.Client, *LostAnswerClient) {
	tb.Helper()
	endpoint := Endpoint(tb)
	hc := &LostAnswerClient{inner: awshttp.NewBuildableClient().WithTimeout(10 * time.Second)}
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       dynamo.LocalRegion,
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   hc,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 5
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		}),
		DisableValidateResponseChecksum: true,
	})
	return client, hc
}

// MustHaveRetried fails the test unless exactly one answer was lost since
// Arm and the SDK sent the write again.
func MustHaveRetried(tb testing.TB, hc *LostAnswerClient) {
	tb.Helper()
	lost, sent := hc.Counts()
	if got, want := lost, 1; got != want {
		tb.Fatalf("answers lost = %d, want %d: the injection did not fire", got, want)
	}
	if sent < 2 {
		tb.Fatalf("matching PutItems sent = %d, want at least 2: the SDK did not retry", sent)
	}
}

// isWrite reports whether target names a PutItem or a TransactWriteItems
// (a session write that moves a running slot, internal/dynamo quota.go).
func isWrite(target string) bool {
	return strings.HasSuffix(target, ".PutItem") || strings.HasSuffix(target, ".TransactWriteItems")
}
