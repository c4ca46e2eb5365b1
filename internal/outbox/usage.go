package outbox

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// RecordConcurrency is how many sessions' events Recording records at once.
// Each record is one DynamoDB transaction (about 16 ms, docs/BENCH.md), so a
// stream batch of 100 transitions of different sessions takes about 10 of
// them one after another instead of 100. Sessions of one account contend on
// its usage rows; the store retries such conflicts.
const RecordConcurrency = 10

// Recording returns a Publisher that first records every session event in usage
// (lifecycle.UsageStore.RecordTransition: the account's and session's usage
// counters and the session's recent events, docs/DESIGN.md "Operators") and
// then publishes the recorded events through pub, in the order given. Both
// the publisher function and the local poller publish through it, so usage
// is kept from the stream and never from a request. Checkpoint events
// (lifecycle.Event.IsCheckpoint) are published without a record: they move
// no usage and are no session version.
//
// Events of different sessions are recorded concurrently (at most
// RecordConcurrency sessions at once); a session's events are recorded one
// after another in the order given, since a session's usage is applied at
// most once per version, in version order. When an event cannot be
// recorded, its session's later events are neither recorded nor published,
// the other sessions' events still are, and the error (a *RecordingError)
// names the first event not delivered, so the stream delivers it again
// from there (outbox.Publish); recording is idempotent per session version,
// so the events recorded before it are skipped on that redelivery.
func Recording(usage lifecycle.UsageStore, pub lifecycle.Publisher) lifecycle.Publisher {
	return RecordingWith(usage, pub, RecordConcurrency)
}

// RecordingWith is Recording recording at most concurrency sessions' events
// at once (at least 1; 1 records every event one after another).
func RecordingWith(usage lifecycle.UsageStore, pub lifecycle.Publisher, concurrency int) lifecycle.Publisher {
	concurrency = max(concurrency, 1)
	return lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		if len(evs) == 0 {
			return pub.Publish(ctx)
		}
		var order []string
		bySession := map[string][]int{}
		for i, ev := range evs {
			if _, ok := bySession[ev.SessionID]; !ok {
				order = append(order, ev.SessionID)
			}
			bySession[ev.SessionID] = append(bySession[ev.SessionID], i)
		}
		recorded := make([]bool, len(evs))
		errs := make([]error, len(evs))
		var g errgroup.Group
		g.SetLimit(concurrency)
		for _, sid := range order {
			g.Go(func() error {
				for _, i := range bySession[sid] {
					if evs[i].IsCheckpoint() {
						recorded[i] = true // no usage, and not a session version
						continue
					}
					if err := usage.RecordTransition(ctx, evs[i]); err != nil {
						errs[i] = err
						return nil // the session's later events wait for the redelivery
					}
					recorded[i] = true
				}
				return nil
			})
		}
		_ = g.Wait()

		first := len(evs) // the first event not recorded
		var out []lifecycle.Event
		var at []int
		for i, ok := range recorded {
			if ok {
				out, at = append(out, evs[i]), append(at, i)
			} else if first == len(evs) {
				first = i
			}
		}
		var recErr error
		if first < len(evs) {
			recErr = fmt.Errorf("record usage of event %s: %w", evs[first].EventID, firstError(errs, first))
		}
		var pubErr error
		if len(out) > 0 {
			if pubErr = pub.Publish(ctx, out...); pubErr != nil {
				k := 0
				var ff firstFailer
				if errors.As(pubErr, &ff) {
					k = min(max(ff.FirstFailed(), 0), len(out)-1)
				}
				first = min(first, at[k])
			}
		}
		if err := errors.Join(recErr, pubErr); err != nil {
			return &RecordingError{First: first, Err: err}
		}
		return nil
	})
}

// firstError returns the error recorded at or before index i's session's
// failure: errs[i], or (for an event after a failed one of its session) the
// first error found.
func firstError(errs []error, i int) error {
	if errs[i] != nil {
		return errs[i]
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return errors.New("not recorded")
}

// RecordingError is Recording's error: the events before index First (of
// those given) were recorded and published; from First on, some were not.
type RecordingError struct {
	First int
	Err   error
}

// Error says which event is the first not delivered, and why.
func (e *RecordingError) Error() string {
	return fmt.Sprintf("deliver from event %d on: %v", e.First, e.Err)
}

// Unwrap returns the recording and publishing errors.
func (e *RecordingError) Unwrap() error { return e.Err }

// FirstFailed is First (outbox.Publish redelivers from there).
func (e *RecordingError) FirstFailed() int { return e.First }
