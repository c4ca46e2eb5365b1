package dynamo_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
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
	"github.com/sandmanhq/sandman/internal/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Regression tests for writes whose answer is lost after DynamoDB committed
// them (code review): the SDK retries such a PutItem, the retry fails its own
// condition, and the store must recognise the stored item as its own write
// (write_id) instead of reporting a lost race.

// lostAnswerClient is an HTTP client for the DynamoDB SDK that forwards every
// request to DynamoDB Local and, once armed, throws away the answer of the
// first PutItem whose body contains the armed string, answering a 500
// InternalServerError instead: the write committed, the caller never heard,
// and the SDK's standard retryer sends it again.
type lostAnswerClient struct {
	inner aws.HTTPClient

	mu    sync.Mutex
	match string // armed when not ""
	lose  bool   // the next matching PutItem's answer is to be lost
	lost  int    // answers thrown away since Arm
	sent  int    // matching PutItems sent since Arm, the lost one included
}

// Arm makes the next PutItem whose JSON body contains match lose its answer,
// and resets the counters.
func (c *lostAnswerClient) Arm(match string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.match, c.lose, c.lost, c.sent = match, true, 0, 0
}

// Counts returns how many answers were lost and how many matching PutItems
// were sent since Arm.
func (c *lostAnswerClient) Counts() (lost, sent int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost, c.sent
}

// Do forwards req; see lostAnswerClient.
func (c *lostAnswerClient) Do(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	match := c.match
	c.mu.Unlock()
	matched := false
	if match != "" && strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".PutItem") && req.Body != nil {
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

// MustLossyFixture returns a Store on a fresh table whose client goes
// through a lostAnswerClient and retries without waiting.
func MustLossyFixture(tb testing.TB) (fixture, *lostAnswerClient) {
	tb.Helper()
	table := dynamotest.MustTable(tb)
	endpoint := os.Getenv(dynamotest.EndpointEnv) // MustTable failed the test when unset
	hc := &lostAnswerClient{inner: awshttp.NewBuildableClient().WithTimeout(10 * time.Second)}
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
	return fixture{store: dynamo.New(client, table), client: client, table: table}, hc
}

// MustHaveRetried fails the test unless exactly one answer was lost and the
// SDK sent the write again.
func MustHaveRetried(tb testing.TB, hc *lostAnswerClient) {
	tb.Helper()
	lost, sent := hc.Counts()
	if got, want := lost, 1; got != want {
		tb.Fatalf("answers lost = %d, want %d: the injection did not fire", got, want)
	}
	if sent < 2 {
		tb.Fatalf("matching PutItems sent = %d, want at least 2: the SDK did not retry", sent)
	}
}

func TestWriteRetriedAfterLostAnswer(t *testing.T) {
	t.Run("CreateSession", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		s := runningSession(sessionID(1), "acct_1", t0)
		hc.Arm(s.ID)
		// Old code: the retry's failed condition was reported as "session already exists" (409).
		if err := f.store.CreateSession(t.Context(), s); err != nil {
			t.Fatalf("create with a lost answer: %v", err)
		}
		MustHaveRetried(t, hc)
		if got, want := s.Version, int64(1); got != want {
			t.Errorf("version = %d, want %d", got, want)
		}
		got := f.MustGet(t, s.ID)
		if got.State != lifecycle.StateRunning || got.Version != 1 {
			t.Errorf("stored %s at version %d, want running at version 1", got.State, got.Version)
		}
		// A real duplicate is still refused: only our own write id counts.
		dup := runningSession(sessionID(1), "acct_1", t0)
		if err := f.store.CreateSession(t.Context(), dup); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("second create of %s: err = %v, want conflict", dup.ID, err)
		}
	})

	t.Run("UpdateSession", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		s := runningSession(sessionID(2), "acct_1", t0)
		f.MustCreate(t, s)
		stale := s.Clone()
		if err := s.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, t0.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		hc.Arm(`"state":{"S":"pausing"}`)
		// Old code: the retry's failed condition was reported as a lost race (409), so the
		// caller believed nothing was written.
		if err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatalf("update with a lost answer: %v", err)
		}
		MustHaveRetried(t, hc)
		if got, want := s.Version, int64(2); got != want {
			t.Errorf("version = %d, want %d", got, want)
		}
		got := f.MustGet(t, s.ID)
		if got.State != lifecycle.StatePausing || got.Version != 2 {
			t.Errorf("stored %s at version %d, want pausing at version 2", got.State, got.Version)
		}
		// Another writer holding the old version still loses the race.
		if err := stale.Transition(lifecycle.StatePaused, lifecycle.ReasonWebhook, t0.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		if err := f.store.UpdateSession(t.Context(), stale, lifecycle.StateRunning, lifecycle.Guard{}); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale update: err = %v, want conflict", err)
		}
	})

	t.Run("Claim", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		const key, value = "idempotency#acct_1#k1", "ses_lost_answer_owner"
		hc.Arm(value)
		// Old code: the retried claim answered claimed=false with our own value, so
		// Create treated its own key as another create's and answered 409.
		claimed, stored, err := f.store.Claim(t.Context(), key, value, time.Hour, t0)
		if err != nil {
			t.Fatalf("claim with a lost answer: %v", err)
		}
		MustHaveRetried(t, hc)
		if !claimed || stored != value {
			t.Errorf("claim = (%v, %q), want (true, %q)", claimed, stored, value)
		}
		// Another claimant of the key is still refused and told the owner.
		claimed, stored, err = f.store.Claim(t.Context(), key, "ses_other", time.Hour, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if claimed || stored != value {
			t.Errorf("second claim = (%v, %q), want (false, %q)", claimed, stored, value)
		}
	})
}
