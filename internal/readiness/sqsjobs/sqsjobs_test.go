package sqsjobs_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/readiness/sqsjobs"
)

// fakeSQS answers SendMessage in SQS's JSON protocol and keeps the bodies.
type fakeSQS struct {
	mu     sync.Mutex
	bodies []string
}

func (f *fakeSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	body := in["MessageBody"].(string)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	sum := md5.Sum([]byte(body))
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": "m-1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

func newJobs(t *testing.T) (*sqsjobs.Jobs, *fakeSQS) {
	f := &fakeSQS{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1})
	return sqsjobs.New(c, "https://sqs.example/readiness"), f
}

func TestEnqueueSendsTheSessionID(t *testing.T) {
	jobs, f := newJobs(t)
	if err := jobs.Enqueue(t.Context(), "ses_a"); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 1 || f.bodies[0] != `{"session_id":"ses_a"}` {
		t.Errorf("sent %q, want one job for ses_a", f.bodies)
	}
}

type bringUpFunc func(ctx context.Context, id string) (lifecycle.BringUpOutcome, error)

func (f bringUpFunc) BringUp(ctx context.Context, id string) (lifecycle.BringUpOutcome, error) {
	return f(ctx, id)
}

// FinishResume is never a readiness job's.
func (f bringUpFunc) FinishResume(context.Context, string) (lifecycle.BringUpOutcome, error) {
	return "", errors.New("a resume job ran for a readiness message")
}

func record(id, body string) events.SQSMessage { return events.SQSMessage{MessageId: id, Body: body} }

func TestHandleReportsFailedJobsOnly(t *testing.T) {
	var ran []string
	h := sqsjobs.NewHandler(bringUpFunc(func(_ context.Context, id string) (lifecycle.BringUpOutcome, error) {
		ran = append(ran, id)
		if id == "ses_bad" {
			return "", errors.New("provider down")
		}
		return lifecycle.BringUpReady, nil
	}), nil, nil)
	resp, err := h.Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		record("m1", `{"session_id":"ses_ok"}`), record("m2", `{"session_id":"ses_bad"}`), record("m3", `not a job`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 2 {
		t.Errorf("ran %v, want ses_ok and ses_bad (the malformed body dropped)", ran)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Errorf("failures %+v, want m2 only", resp.BatchItemFailures)
	}
}

func TestHandleContinuesAJobNearTheDeadlineInANewMessage(t *testing.T) {
	jobs, f := newJobs(t)
	h := sqsjobs.NewHandler(bringUpFunc(func(ctx context.Context, _ string) (lifecycle.BringUpOutcome, error) {
		<-ctx.Done() // still waiting for the app when the margin comes
		return "", ctx.Err()
	}), jobs, nil)
	ctx, cancel := context.WithTimeout(t.Context(), sqsjobs.DeadlineMargin+200*time.Millisecond)
	defer cancel()
	resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{record("m1", `{"session_id":"ses_slow"}`)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want the job acknowledged", resp, err)
	}
	if len(f.bodies) != 1 || f.bodies[0] != `{"session_id":"ses_slow"}` {
		t.Errorf("sent %q, want the job continued in one new message", f.bodies)
	}
}

// jobKinds records which job each message ran.
type jobKinds struct{ ran []string }

func (k *jobKinds) BringUp(_ context.Context, id string) (lifecycle.BringUpOutcome, error) {
	k.ran = append(k.ran, "bring-up "+id)
	return lifecycle.BringUpReady, nil
}

func (k *jobKinds) FinishResume(_ context.Context, id string) (lifecycle.BringUpOutcome, error) {
	k.ran = append(k.ran, "resume "+id)
	return lifecycle.BringUpResumed, nil
}

// TestResumeJobsRunFinishResume: NewResumes' messages carry kind resume
// and the handler runs them as FinishResume; a message without a kind (a
// readiness job, or one sent before resume jobs existed) runs BringUp.
func TestResumeJobsRunFinishResume(t *testing.T) {
	f := &fakeSQS{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1})
	if err := sqsjobs.NewResumes(c, "https://sqs.example/resume").Enqueue(t.Context(), "ses_b"); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 1 || f.bodies[0] != `{"session_id":"ses_b","kind":"resume"}` {
		t.Fatalf("sent %q, want one resume job for ses_b", f.bodies)
	}
	k := &jobKinds{}
	resp, err := sqsjobs.NewHandler(k, nil, nil).Handle(t.Context(), events.SQSEvent{Records: []events.SQSMessage{
		record("m1", f.bodies[0]), record("m2", `{"session_id":"ses_c"}`)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v, failures %v", err, resp.BatchItemFailures)
	}
	if want := []string{"resume ses_b", "bring-up ses_c"}; !slices.Equal(k.ran, want) {
		t.Errorf("ran %q, want %q", k.ran, want)
	}
}
