package cli

import (
	"context"
	"time"
)

// Follower follows one session live: it calls emit with the session's
// status when following starts and after every change, until emit returns
// done (or an error), ctx ends, or the follower fails. A WebSocket follower
// (docs/DESIGN.md "Client channel": a {"type":"session"} message at connect and
// after every committed transition) implements it as well as PollFollower.
type Follower interface {
	Follow(ctx context.Context, id string, emit func(Status) (done bool, err error)) error
}

// PollFollower follows a session by polling GET /v1/sessions/{id}/status
// every Interval (database only: no provider call, not activity). A change
// is a different state, preview URL, pause_deadline or sandbox_expires_at.
// A 503 or a network failure is reported through OnRetry and polled again;
// any other error ends the follow.
type PollFollower struct {
	Client *Client
	// Interval between polls; zero means 2 s. A Retry-After longer than
	// Interval is honoured.
	Interval time.Duration
	// After returns a channel that delivers after d (time.After when nil);
	// tests inject one that does not sleep.
	After func(d time.Duration) <-chan time.Time
	// OnRetry, when set, hears each transient failure before the next poll.
	OnRetry func(err error)
}

var _ Follower = (*PollFollower)(nil)

// Follow implements Follower. Errors: the client's (*APIError for an error
// answer other than 503), emit's, or ctx's.
func (p *PollFollower) Follow(ctx context.Context, id string, emit func(Status) (bool, error)) error {
	interval := p.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	after := p.After
	if after == nil {
		after = time.After
	}
	var last *Status
	for {
		wait := interval
		st, _, err := p.Client.Status(ctx, id)
		switch {
		case err != nil && isTransient(err):
			if p.OnRetry != nil {
				p.OnRetry(err)
			}
			if ae, ok := err.(*APIError); ok && ae.RetryAfter > wait {
				wait = ae.RetryAfter
			}
		case err != nil:
			return err
		case last == nil || changed(*last, st):
			last = &st
			done, err := emit(st)
			if err != nil || done {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-after(wait):
		}
	}
}

// changed reports whether b differs from a in what a watcher sees.
func changed(a, b Status) bool {
	return a.State != b.State || str(a.PreviewURL) != str(b.PreviewURL) ||
		str(a.Lifecycle.PauseDeadline) != str(b.Lifecycle.PauseDeadline) ||
		str(a.Lifecycle.SandboxExpiresAt) != str(b.Lifecycle.SandboxExpiresAt)
}

// str dereferences a nullable string ("" for nil).
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
