package dynamotest

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/sandmanhq/sandman/internal/dynamo"
)

// FreezeClient is an HTTP client for the DynamoDB SDK that forwards every
// request to DynamoDB Local and, during a freeze (Freeze), stalls: a
// request sent while the table is frozen gets no answer until its attempt
// times out (after Freeze's hold, or when its context ends, whichever is
// first) and then fails with a timeout. Every other stalled request reaches
// the table before the stall (its write commits, its answer is lost), the
// others never do, so a caller cannot tell a committed write from a lost
// one: what a table stall looks like from a Lambda function. Safe for
// concurrent use.
type FreezeClient struct {
	inner aws.HTTPClient

	mu          sync.Mutex
	frozenUntil time.Time
	hold        time.Duration
	stalled     int // requests stalled since the first Freeze
	committed   int // of which reached the table
}

// Freeze stalls the table for d from now; each request attempt sent during
// the freeze fails with a timeout after hold (at most until the freeze ends).
func (c *FreezeClient) Freeze(d, hold time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozenUntil, c.hold = time.Now().Add(d), hold
}

// Counts returns how many request attempts stalled since the first freeze,
// and how many of them reached the table first.
func (c *FreezeClient) Counts() (stalled, committed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stalled, c.committed
}

// timeoutError is what a stalled attempt fails with: a net.Error timeout,
// as the SDK's HTTP client reports an attempt past its deadline.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "dynamodb request timed out: the table is frozen (injected)"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// Do forwards req, or stalls it during a freeze; see FreezeClient.
func (c *FreezeClient) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	until, hold := c.frozenUntil, c.hold
	frozen := time.Now().Before(until)
	commit := false
	if frozen {
		c.stalled++
		commit = c.stalled%2 == 0
		if commit {
			c.committed++
		}
	}
	c.mu.Unlock()
	if !frozen {
		return c.inner.Do(req)
	}
	if commit {
		if resp, err := c.inner.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	wait := min(hold, time.Until(until))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, timeoutError{}
	case <-req.Context().Done():
		return nil, context.Cause(req.Context())
	}
}

// MustFreezeClient returns a DynamoDB Local client whose HTTP goes through
// a FreezeClient, with the SDK's standard retryer (retryAttempts attempts
// in all) waiting nothing between attempts.
func MustFreezeClient(tb testing.TB, retryAttempts int) (*dynamodb.Client, *FreezeClient) {
	tb.Helper()
	endpoint := Endpoint(tb)
	fc := &FreezeClient{inner: awshttp.NewBuildableClient().WithTimeout(10 * time.Second)}
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       dynamo.LocalRegion,
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   fc,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = retryAttempts
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			o.RateLimiter = noRateLimit{}
		}),
		DisableValidateResponseChecksum: true,
	})
	return client, fc
}

// noRateLimit lets every retry through: the standard retryer's token bucket
// would otherwise refuse retries after a burst of timeouts, which is not
// what the freeze is meant to show.
type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }
