// Package eventbridge is the lifecycle.Publisher of the AWS stack: it puts
// each lifecycle event on the stack's EventBridge bus with PutEvents
// (docs/DESIGN.md "Events out").
//
// Each event becomes one entry: Source lifecycle.EventSource ("sandman"),
// DetailType event.DetailType() (e.g. "Session Paused"), Detail the event's
// JSON (lifecycle.Event's tags: session_id, account_id, sandbox_id, from, to,
// version, reason, time), EventBusName the bus, Time the event's time.
//
// PutEvents takes at most 10 entries per call (MaxEntries), so Publish sends
// them in batches of up to 10, in the order given, with at most one event
// of a session per call: a session's event is sent only once its earlier
// ones are delivered, so a retried entry never lands after a later event of
// its session (docs/DESIGN.md "Events out": order per session). A call can
// succeed with some entries failed
// (FailedEntryCount, a per-entry ErrorCode); those entries, and only those,
// are sent again after an exponential backoff with jitter, up to a bounded
// number of attempts. Entries failed with a code EventBridge documents as not
// retryable (MalformedDetail, AccessDeniedException, …) are not sent again.
// A call that fails as a whole has already been retried by the SDK client's
// own retryer (throttling, 5xx, network errors), so Publish does not retry
// it again. Whatever is still undelivered at the end is reported in a
// *DeliveryError, with the later events of its session, which are then not
// sent at all.
//
// Batches are split by count only: a lifecycle event is a few hundred bytes,
// far below PutEvents' limit of 256 KB per call.
package eventbridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var (
	_ lifecycle.Publisher = (*Publisher)(nil)
	_ API                 = (*awseb.Client)(nil)
)

// API is the part of the EventBridge client the publisher uses;
// *eventbridge.Client (aws-sdk-go-v2) implements it.
type API interface {
	PutEvents(ctx context.Context, in *awseb.PutEventsInput, optFns ...func(*awseb.Options)) (*awseb.PutEventsOutput, error)
}

// MaxEntries is PutEvents' limit of entries per call (EventBridge API
// reference, PutEvents: "Entries ... Maximum number of 10 items").
const MaxEntries = 10

// Defaults of the retry of failed entries.
const (
	// DefaultMaxAttempts is how many times an entry is sent at most, the
	// first time included.
	DefaultMaxAttempts = 4
	// DefaultBaseDelay is the wait before the first retry; it doubles on each
	// later one, up to DefaultMaxDelay. Each wait is drawn between half of it
	// and all of it (jitter).
	DefaultBaseDelay = 100 * time.Millisecond
	// DefaultMaxDelay caps a single wait.
	DefaultMaxDelay = 2 * time.Second
)

// permanentCodes are the per-entry error codes EventBridge documents as not
// retryable (PutEventsResultEntry.ErrorCode); any other code is retried.
var permanentCodes = map[string]bool{
	"AccessDeniedException":               true,
	"InvalidAccountIdException":           true,
	"InvalidArgument":                     true,
	"MalformedDetail":                     true,
	"RedactionFailure":                    true,
	"NotAuthorizedForSourceException":     true,
	"NotAuthorizedForDetailTypeException": true,
}

// Config is what a Publisher is built from (New). Client and Bus are
// required; every other zero field means the default named on it, filled in
// once by New.
type Config struct {
	// Client sends PutEvents. Build it once at cold start and keep the SDK's
	// default retryer on it: it retries calls that fail as a whole.
	Client API
	// Bus is the name or ARN of the event bus.
	Bus string
	// MaxAttempts is how many times an entry is sent at most, the first
	// time included. Default (0 or less) DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the wait before the first retry, doubled after each.
	// Default DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps one wait. Default DefaultMaxDelay.
	MaxDelay time.Duration
	// Sleep waits between attempts; it must return ctx's error early when
	// ctx is done. Tests pass one that records the wait and returns at once.
	// Default lifecycle.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives retries. Default slog.Default().
	Log *slog.Logger
}

// Publisher puts lifecycle events on an EventBridge bus. It is safe for
// concurrent use.
type Publisher struct {
	client      API
	bus         string
	maxAttempts int
	baseDelay   time.Duration
	maxDelay    time.Duration
	sleep       func(ctx context.Context, d time.Duration) error
	log         *slog.Logger
}

// New returns a Publisher that puts events on cfg.Bus through cfg.Client,
// with the defaults of Config filled in.
func New(cfg Config) *Publisher {
	p := &Publisher{
		client:      cfg.Client,
		bus:         cfg.Bus,
		maxAttempts: cmp.Or(max(cfg.MaxAttempts, 0), DefaultMaxAttempts),
		baseDelay:   cmp.Or(max(cfg.BaseDelay, 0), DefaultBaseDelay),
		maxDelay:    cmp.Or(max(cfg.MaxDelay, 0), DefaultMaxDelay),
		sleep:       cfg.Sleep,
		log:         cmp.Or(cfg.Log, slog.Default()),
	}
	if p.sleep == nil {
		p.sleep = lifecycle.Sleep
	}
	return p
}

// FailedEvent is an event Publish could not deliver, with why.
type FailedEvent struct {
	Event lifecycle.Event
	// Index is the event's position among those given to Publish.
	Index int
	// Code and Message are the entry's ErrorCode and ErrorMessage from
	// EventBridge's last answer, when it answered one.
	Code    string
	Message string
	// Err is the error of the last PutEvents call that carried the entry,
	// or ctx's error, when the call itself failed.
	Err error
}

// reason describes why f failed.
func (f FailedEvent) reason() string {
	switch {
	case f.Err != nil:
		return f.Err.Error()
	case f.Message != "":
		return f.Code + ": " + f.Message
	default:
		return f.Code
	}
}

// DeliveryError reports the events Publish did not deliver.
type DeliveryError struct {
	Bus      string
	Total    int           // events given to Publish
	Attempts int           // rounds of PutEvents calls made
	Failed   []FailedEvent // in the order they were given
}

// FirstFailed is the index, among the events given to Publish, of the first
// one not delivered: every event before it was delivered (outbox.Publish
// redelivers from there).
func (e *DeliveryError) FirstFailed() int {
	if len(e.Failed) == 0 {
		return e.Total
	}
	return e.Failed[0].Index
}

// errEarlierUndelivered is why a session's event after an undelivered one
// was not sent.
var errEarlierUndelivered = errors.New("not sent: an earlier event of its session was not delivered")

// Error names how many events were not delivered and the first one's reason.
func (e *DeliveryError) Error() string {
	msg := fmt.Sprintf("put events on bus %s: %d of %d events not delivered after %d attempts",
		e.Bus, len(e.Failed), e.Total, e.Attempts)
	if len(e.Failed) > 0 {
		first := e.Failed[0]
		msg += fmt.Sprintf(" (session %s: %s)", first.Event.SessionID, first.reason())
	}
	return msg
}

// Unwrap returns the distinct call errors of the failed events, so
// errors.Is(err, context.Canceled) and errors.As(err, &smithy.APIError) work.
func (e *DeliveryError) Unwrap() []error {
	var errs []error
	for _, f := range e.Failed {
		if f.Err != nil && !containsErr(errs, f.Err) {
			errs = append(errs, f.Err)
		}
	}
	return errs
}

// item is one event on its way.
type item struct {
	index int
	FailedEvent
	entry types.PutEventsRequestEntry
}

// Publish puts events on the bus, up to MaxEntries per call and at most one
// event of a session per call, retrying failed entries as the package
// comment says. It returns nil when every event was delivered and a
// *DeliveryError naming the undelivered ones otherwise.
func (p *Publisher) Publish(ctx context.Context, events ...lifecycle.Event) error {
	if len(events) == 0 {
		return nil
	}
	todo := make([]*item, len(events))
	for i, ev := range events {
		detail, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("put events on bus %s: marshal event for session %s: %w", p.bus, ev.SessionID, err)
		}
		it := &item{index: i, FailedEvent: FailedEvent{Event: ev, Index: i}}
		it.entry = types.PutEventsRequestEntry{
			Source:       aws.String(lifecycle.EventSource),
			DetailType:   aws.String(ev.DetailType()),
			Detail:       aws.String(string(detail)),
			EventBusName: aws.String(p.bus),
		}
		if !ev.Time.IsZero() {
			it.entry.Time = aws.Time(ev.Time)
		}
		todo[i] = it
	}

	var lost []*item
	lostSession := map[string]bool{} // sessions with an event given up on
	attempts := 0
	for len(todo) > 0 && attempts < p.maxAttempts {
		if attempts > 0 {
			wait := p.backoff(attempts)
			p.log.WarnContext(ctx, "eventbridge: retrying failed entries",
				"bus", p.bus, "entries", len(todo), "attempt", attempts+1, "wait_ms", wait.Milliseconds(),
				"error_code", todo[0].Code)
			if err := p.sleep(ctx, wait); err != nil {
				for _, it := range todo {
					it.Err = err
				}
				break
			}
		}
		attempts++
		todo, lost = p.round(ctx, todo, lost, lostSession)
	}
	for _, it := range todo {
		if it.Code == "" && it.Err == nil {
			it.Err = errEarlierUndelivered // never sent: waited behind its session's failed event
		}
	}
	lost = append(lost, todo...)
	if len(lost) == 0 {
		return nil
	}
	slices.SortFunc(lost, func(a, b *item) int { return a.index - b.index })
	failed := make([]FailedEvent, len(lost))
	for i, it := range lost {
		failed[i] = it.FailedEvent
	}
	return &DeliveryError{Bus: p.bus, Total: len(events), Attempts: attempts, Failed: failed}
}

// round sends every sendable item of todo once, in calls of up to
// MaxEntries with at most one item per session, and returns the items to
// retry next round (in order) and lost with the items given up on. An item
// is sendable when no earlier item of its session is still undelivered:
// after a session's item fails, its later items wait for the next round,
// and after one is given up on (lostSession), they are given up on too,
// unsent.
func (p *Publisher) round(ctx context.Context, todo, lost []*item, lostSession map[string]bool) (again, _ []*item) {
	retrySession := map[string]bool{} // sessions with an item to retry next round
	for len(todo) > 0 {
		var batch, rest []*item
		inBatch := map[string]bool{}
		for _, it := range todo {
			sid := it.Event.SessionID
			switch {
			case lostSession[sid]:
				it.Err = errEarlierUndelivered
				lost = append(lost, it)
			case retrySession[sid]:
				again = append(again, it) // after its session's failed item, next round
			case inBatch[sid] || len(batch) == MaxEntries:
				rest = append(rest, it) // a later call of this round
			default:
				inBatch[sid] = true
				batch = append(batch, it)
			}
		}
		if len(batch) == 0 {
			break
		}
		retry, drop := p.put(ctx, batch)
		for _, it := range retry {
			retrySession[it.Event.SessionID] = true
		}
		for _, it := range drop {
			lostSession[it.Event.SessionID] = true
		}
		again, lost = append(again, retry...), append(lost, drop...)
		todo = rest
	}
	// Retried items before the later items of their session: back in the
	// order given.
	slices.SortFunc(again, func(a, b *item) int { return a.index - b.index })
	return again, lost
}

// put makes one PutEvents call with batch and splits what did not get
// through into entries to retry and entries to give up on.
func (p *Publisher) put(ctx context.Context, batch []*item) (retry, drop []*item) {
	entries := make([]types.PutEventsRequestEntry, len(batch))
	for i, it := range batch {
		entries[i] = it.entry
	}
	out, err := p.client.PutEvents(ctx, &awseb.PutEventsInput{Entries: entries})
	if err != nil {
		err = fmt.Errorf("put events: %w", err)
		for _, it := range batch {
			it.Err = err
		}
		return nil, batch
	}
	for i, it := range batch {
		it.Err = nil
		if i >= len(out.Entries) {
			// Not in the answer: EventBridge answers every entry, so this is
			// a broken response; sending again is safe enough.
			it.Code, it.Message = "MissingResult", "no result entry in the response"
			retry = append(retry, it)
			continue
		}
		res := out.Entries[i]
		code := aws.ToString(res.ErrorCode)
		if code == "" {
			continue
		}
		it.Code, it.Message = code, aws.ToString(res.ErrorMessage)
		if permanentCodes[code] {
			drop = append(drop, it)
		} else {
			retry = append(retry, it)
		}
	}
	return retry, drop
}

// backoff returns the wait before attempt n+1 (n ≥ 1): base·2^(n-1) capped
// at the maximum, drawn between half of it and all of it.
func (p *Publisher) backoff(n int) time.Duration {
	d := p.maxDelay
	if n < 30 {
		d = min(p.baseDelay<<(n-1), p.maxDelay)
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

func containsErr(errs []error, err error) bool {
	for _, e := range errs {
		if e == err {
			return true
		}
	}
	return false
}
