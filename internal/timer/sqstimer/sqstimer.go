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
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sqskit"
)

// MaxDelay is SQS's largest DelaySeconds (900 s, 15 min).
const MaxDelay = sqskit.MaxDelay

// Message is a timer message's body (JSON): the session to fire for and the
// deadline it was armed for (RFC 3339 UTC, informational: FireTimer re-reads
// the session).
type Message struct {
	SessionID string    `json:"session_id"`
	At        time.Time `json:"at"`
}

// Timers sends timer messages to one queue. Build it with New.
type Timers struct{ queue sqskit.Queue }

var _ lifecycle.Timers = (*Timers)(nil)

// New returns Timers sending to queueURL through client; clock tells now
// (nil: lifecycle.SystemClock).
func New(client sqskit.API, queueURL string, clock lifecycle.Clock) *Timers {
	return &Timers{sqskit.Queue{API: client, URL: queueURL, Clock: clock}}
}

// Delay returns the DelaySeconds of a timer due at at seen at now
// (sqskit.Delay): the time left rounded up to whole seconds, 0 to 900.
func Delay(now, at time.Time) int32 { return sqskit.Delay(now, at) }

// Arm sends one timer message for sessionID, delayed until at (at most
// MaxDelay). Errors: unavailable when SQS refused or did not answer.
func (t *Timers) Arm(ctx context.Context, sessionID string, at time.Time) error {
	return t.queue.Send(ctx, sqskit.Message{Body: Message{SessionID: sessionID, At: at.UTC()}, DueAt: at},
		"send timer for "+sessionID, "the timer queue did not take the pause timer")
}
