// Package sqstimer is the AWS lifecycle.Timers (docs/DESIGN.md "Precise
// pausing"): a pause timer is an SQS message carrying the session id, sent
// with DelaySeconds until its deadline, and the timer function function (Handler,
// functions/timer) consumes it by calling lifecycle.Service.FireTimer. The
// event source mapping's maximum concurrency bounds how many pauses run at
// once, hence the provider's rate.
//
// SQS delays a message by at most 15 min (MaxDelay). A deadline further out
// is sent with the largest delay; when it arrives early, FireTimer finds the
// session not yet due and re-arms (within its horizon), and otherwise the
// sweep arms it when its window reaches the deadline. Delivery is at least
// once: a duplicate re-reads the session and does nothing.
package sqstimer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// MaxDelay is SQS's largest DelaySeconds (900 s, 15 min).
const MaxDelay = 15 * time.Minute

// API is the part of *sqs.Client Timers uses.
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Message is a timer message's body (JSON): the session to fire for and the
// deadline it was armed for (RFC 3339 UTC, informational: FireTimer re-reads
// the session).
type Message struct {
	SessionID string    `json:"session_id"`
	At        time.Time `json:"at"`
}

// Timers sends timer messages to one queue. Build it with New.
type Timers struct {
	client   API
	queueURL string
	clock    lifecycle.Clock
}

var _ lifecycle.Timers = (*Timers)(nil)

// New returns Timers sending to queueURL through client; clock tells now
// (nil: lifecycle.SystemClock).
func New(client API, queueURL string, clock lifecycle.Clock) *Timers {
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	return &Timers{client: client, queueURL: queueURL, clock: clock}
}

// Delay returns the DelaySeconds of a message due at at (a timer here, a
// delivery retry in internal/delivery/sqsqueue) seen at now: the time left
// rounded up to whole seconds (never early), from 0 to 900.
func Delay(now, at time.Time) int32 {
	d := at.Sub(now)
	if d <= 0 {
		return 0
	}
	d = min(d, MaxDelay)
	return int32((d + time.Second - 1) / time.Second)
}

// Arm sends one timer message for sessionID, delayed until at (at most
// MaxDelay). Errors: unavailable when SQS refused or did not answer.
func (t *Timers) Arm(ctx context.Context, sessionID string, at time.Time) error {
	body, err := json.Marshal(Message{SessionID: sessionID, At: at.UTC()})
	if err != nil {
		return fmt.Errorf("encode timer message: %w", err)
	}
	_, err = t.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(t.queueURL),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: Delay(t.clock.Now(), at),
	})
	if err != nil {
		return &lifecycle.Error{Code: lifecycle.CodeUnavailable,
			Message: "the timer queue did not take the pause timer", Err: fmt.Errorf("send timer for %s: %w", sessionID, err)}
	}
	return nil
}
