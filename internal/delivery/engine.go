package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// DefaultSchedule is the retry schedule: the wait before each attempt,
// after the previous one (the first is immediate): 0s, 5s, 5m, 30m, 2h, 5h,
// 10h, 10h; eight attempts over about 27.6 hours.
var DefaultSchedule = []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// ParseSchedule reads a schedule written as comma-separated Go durations
// ("0s,5s,5m"). "" is DefaultSchedule. Errors: an entry that is not a
// duration, a negative one, or none at all.
func ParseSchedule(s string) ([]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultSchedule, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("retry schedule %q: %q is not a duration of zero or more", s, f)
		}
		out = append(out, d)
	}
	return out, nil
}

// claimSlack is added to AttemptTimeout for an attempt's claim: a job
// copy arriving while an attempt is under way waits this long.
const claimSlack = 5 * time.Second

// Config is what an Engine is built from (NewEngine). Store and Dispatcher
// are required; every other zero field means the default named on it.
type Config struct {
	Store      Store
	Dispatcher Dispatcher
	// Guard checks every dialled address (zero: public https only).
	Guard Guard
	// Clock tells the time. Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Schedule is the wait before each attempt. Default DefaultSchedule.
	Schedule []time.Duration
	// Client sends the POSTs. Default: dials through Guard, follows no
	// redirect, gives up after AttemptTimeout.
	Client *http.Client
	// OnExhausted, when set, is called with a delivery whose schedule ran
	// out, after it is marked failed (AWS: the dead-letter queue).
	OnExhausted func(ctx context.Context, d *Delivery) error
	// Log receives failures. Default slog.Default().
	Log *slog.Logger
	// WatchEvery is how often an endpoint's watch looks at its parked
	// deliveries. Default WatchEvery (1 min); tests running on the wall
	// clock shorten it.
	WatchEvery time.Duration
}

// Engine accepts events and runs delivery attempts. It is safe for
// concurrent use.
type Engine struct {
	store      Store
	dispatch   Dispatcher
	clock      lifecycle.Clock
	schedule   []time.Duration
	client     *http.Client
	exhausted  func(ctx context.Context, d *Delivery) error
	log        *slog.Logger
	watchEvery time.Duration
	// gap is the least time between the starts of two attempts to a
	// failing endpoint: FailingGap, or the schedule's shortest retry wait
	// when shorter, so the gap never stretches a delivery's own schedule.
	gap time.Duration
}

// NewClient returns the HTTP client deliveries use: every connection dialled
// through g (Guard.DialContext), no proxy, no redirects followed (a 3xx is
// the answer), AttemptTimeout per request.
func NewClient(g Guard) *http.Client {
	return &http.Client{
		Timeout: AttemptTimeout,
		Transport: &http.Transport{
			DialContext:         g.DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// NewEngine returns an Engine with the defaults of Config filled in.
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.Store == nil || cfg.Dispatcher == nil {
		return nil, errors.New("delivery: a store and a dispatcher are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.Guard)
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.WatchEvery <= 0 {
		cfg.WatchEvery = WatchEvery
	}
	gap := FailingGap
	for _, w := range cfg.Schedule[1:] {
		gap = min(gap, w)
	}
	return &Engine{store: cfg.Store, dispatch: cfg.Dispatcher, clock: cfg.Clock, schedule: cfg.Schedule,
		client: cfg.Client, exhausted: cfg.OnExhausted, log: cfg.Log, watchEvery: cfg.WatchEvery, gap: gap}, nil
}

// Body is the JSON body of every delivery: the event's type, when it was
// committed and the event itself.
type Body struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      lifecycle.Event `json:"data"`
}

// Publish is Accept: an Engine is the lifecycle.Publisher the outbox feeds.
func (e *Engine) Publish(ctx context.Context, evs ...lifecycle.Event) error {
	return e.Accept(ctx, evs...)
}

var _ lifecycle.Publisher = (*Engine)(nil)

// Accept makes one delivery per event and endpoint of its account that
// wants the event's type, and dispatches its first attempt. An event seen
// before makes no new delivery (DeliveryID), but a pending one is
// dispatched again, so a crash between the two steps loses nothing.
// Errors: the store or dispatcher failed (the caller delivers the events
// again; nothing is duplicated).
func (e *Engine) Accept(ctx context.Context, evs ...lifecycle.Event) error {
	var errs []error
	for _, ev := range evs {
		if err := e.accept(ctx, ev); err != nil {
			errs = append(errs, fmt.Errorf("accept event %s: %w", ev.EventID, err))
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) accept(ctx context.Context, ev lifecycle.Event) error {
	if ev.AccountID == "" {
		return nil
	}
	eps, err := e.store.ListEndpoints(ctx, ev.AccountID)
	if err != nil {
		return err
	}
	typ := EventType(ev)
	var body []byte
	for _, ep := range eps {
		if !ep.Wants(typ) {
			continue
		}
		if body == nil {
			if body, err = json.Marshal(Body{Type: typ, Timestamp: ev.Time.UTC(), Data: ev}); err != nil {
				return fmt.Errorf("encode event: %w", err)
			}
		}
		now := e.clock.Now()
		d := &Delivery{
			ID: DeliveryID(ev.Time, ep.ID, ev.EventID), EndpointID: ep.ID, AccountID: ep.AccountID,
			EventID: ev.EventID, EventType: typ, Payload: body, Status: StatusPending,
			NextAttemptAt: now.Add(e.schedule[0]), CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(LogRetention), Version: 1,
		}
		created, err := e.store.CreateDelivery(ctx, d)
		if err != nil {
			return err
		}
		if !created {
			if d, err = e.store.GetDelivery(ctx, ep.ID, d.ID); err != nil || d.Status != StatusPending {
				continue // gone or settled: nothing to dispatch
			}
		}
		job := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, DeliveryID: d.ID, Seq: len(d.Attempts)}
		if err := e.dispatch.Dispatch(ctx, job, d.NextAttemptAt); err != nil {
			return fmt.Errorf("dispatch delivery %s: %w", d.ID, err)
		}
	}
	return nil
}

// Attempt runs the attempt job names, if it is still due: on a failing or
// slow endpoint it first takes one of the endpoint's holds
// (Endpoint.AttemptCap; none free: the delivery is parked, nothing of it
// is written and its job ends, see park), it claims the delivery (a
// conditional write; a failing endpoint's single hold is the claim), POSTs
// the payload, records the attempt and then either settles the delivery
// (succeeded, or failed when the schedule ran out) or dispatches the next
// attempt; an attempt that held its endpoint then wakes the parked
// deliveries the endpoint has room for. A stale job (the delivery moved
// on) is dropped; a job that came early (an SQS hop) is dispatched again
// for its time. A watch job (Job.Watch) runs the endpoint's watch instead.
// Errors: the store or dispatcher failed (the caller runs the job again
// later).
func (e *Engine) Attempt(ctx context.Context, job Job) error {
	if !job.Watch.IsZero() {
		return e.watch(ctx, job)
	}
	d, err := e.store.GetDelivery(ctx, job.EndpointID, job.DeliveryID)
	if lifecycle.ErrorCode(err) == lifecycle.CodeNotFound {
		return nil // expired from the log
	}
	if err != nil {
		return err
	}
	if d.Status != StatusPending || len(d.Attempts) != job.Seq {
		return nil // settled, or a stale copy of a job already run
	}
	now := e.clock.Now()
	if now.Before(d.NextAttemptAt) {
		return e.dispatch.Dispatch(ctx, job, d.NextAttemptAt)
	}
	ep, err := e.store.GetEndpoint(ctx, d.AccountID, d.EndpointID)
	switch {
	case lifecycle.ErrorCode(err) == lifecycle.CodeNotFound:
		return e.settle(ctx, d, StatusFailed, "endpoint deleted")
	case err != nil:
		return err
	case ep.Disabled:
		return e.settle(ctx, d, StatusFailed, "endpoint disabled")
	}
	// A failing or slow endpoint has a cap on attempts under way
	// (Endpoint.AttemptCap), kept on the endpoint item: an attempt over
	// the cap parks its delivery without counting an attempt and without
	// writing the delivery or the endpoint, and its job ends; a wake runs
	// it again. So a dead endpoint's queue costs the table nothing while it
	// waits (no write, no read) and a slow one never ties up the capacity
	// other endpoints' deliveries run in.
	limit := ep.AttemptCap()
	var hold time.Time
	if limit > 0 {
		if hold, err = e.holdEndpoint(ctx, ep, limit, now); err != nil {
			return err
		}
		if hold.IsZero() {
			return e.park(ctx, ep, d, now)
		}
	}
	// Claim: a copy of this job arriving meanwhile finds it not due. With
	// a cap of one the endpoint's hold is the claim: no copy attempts
	// until this attempt is recorded and the hold let go.
	if limit != 1 {
		prev := d.Version
		d.NextAttemptAt, d.Version, d.UpdatedAt = now.Add(AttemptTimeout+claimSlack), d.Version+1, now
		if err := e.store.UpdateDelivery(ctx, d, prev); err != nil {
			if lifecycle.ErrorCode(err) == lifecycle.CodeConflict {
				e.letGo(ctx, ep, hold)
				return nil // another copy claimed it
			}
			return err
		}
	}

	a := e.send(ctx, ep, d)
	prev := d.Version
	d.Attempts = append(d.Attempts, a)
	d.Version++
	d.UpdatedAt = e.clock.Now()
	n := len(d.Attempts) - d.RoundStart // attempts in this run of the schedule
	switch {
	case a.Succeeded():
		d.Status, d.NextAttemptAt, d.Reason = StatusSucceeded, time.Time{}, ""
	case n >= len(e.schedule):
		d.Status, d.NextAttemptAt, d.Reason = StatusFailed, time.Time{}, "retry schedule exhausted"
	case len(d.Attempts) >= MaxAttemptsPerDelivery: // a replay's run stops at the limit too
		d.Status, d.NextAttemptAt, d.Reason = StatusFailed, time.Time{}, "attempt limit reached"
	default:
		d.NextAttemptAt = a.At.Add(e.schedule[n])
	}
	if err := e.store.UpdateDelivery(ctx, d, prev); err != nil {
		return fmt.Errorf("record attempt of delivery %s: %w", d.ID, err)
	}
	e.endpointHealth(ctx, ep, a, hold)
	if !hold.IsZero() {
		e.wakeAfter(ctx, ep, d)
	}
	switch d.Status {
	case StatusPending:
		next := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, DeliveryID: d.ID, Seq: len(d.Attempts)}
		if err := e.dispatch.Dispatch(ctx, next, d.NextAttemptAt); err != nil {
			return fmt.Errorf("dispatch delivery %s: %w", d.ID, err)
		}
	case StatusFailed:
		if e.exhausted != nil {
			if err := e.exhausted(ctx, d); err != nil {
				e.log.ErrorContext(ctx, "delivery: record exhausted delivery", "delivery_id", d.ID, "err", err)
			}
		}
	}
	return nil
}

// Redelivered runs a job that came back after a run of it failed (SQS
// delivers a message again when its handler returned an error). A run can
// fail after it recorded its attempt, when dispatching the next one failed:
// the job is then stale by exactly one attempt and nothing else would ever
// run the delivery, so Redelivered dispatches the next attempt for it.
// Any other job runs as Attempt does. A duplicate this makes is harmless:
// the claim lets one copy attempt.
func (e *Engine) Redelivered(ctx context.Context, job Job) error {
	if !job.Watch.IsZero() {
		return e.watch(ctx, job)
	}
	d, err := e.store.GetDelivery(ctx, job.EndpointID, job.DeliveryID)
	if lifecycle.ErrorCode(err) == lifecycle.CodeNotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if d.Status == StatusPending && len(d.Attempts) == job.Seq+1 {
		next := Job{AccountID: d.AccountID, EndpointID: d.EndpointID, DeliveryID: d.ID, Seq: len(d.Attempts)}
		return e.dispatch.Dispatch(ctx, next, d.NextAttemptAt)
	}
	return e.Attempt(ctx, job)
}

// holdEndpoint takes one of the limit holds of a capped endpoint for an
// attempt at now (a conditional write of its Holds, read again after a lost
// race, three tries) and returns the hold's end; zero when the endpoint is
// at its cap.
func (e *Engine) holdEndpoint(ctx context.Context, ep *Endpoint, limit int, now time.Time) (time.Time, error) {
	for try := 0; try < 3; try++ {
		if try > 0 {
			fresh, err := e.store.GetEndpoint(ctx, ep.AccountID, ep.ID)
			if lifecycle.ErrorCode(err) == lifecycle.CodeNotFound {
				return time.Time{}, nil
			}
			if err != nil {
				return time.Time{}, err
			}
			*ep = *fresh
			if c := ep.AttemptCap(); c > 0 {
				limit = min(limit, c) // never above the cap the caller's claim was decided on
			}
		}
		live := ep.liveHolds(now)
		if len(live) >= limit {
			return time.Time{}, nil
		}
		prev := ep.Version
		end := now.Add(AttemptTimeout + claimSlack)
		ep.Holds, ep.Version, ep.UpdatedAt = append(live, end), ep.Version+1, now
		err := e.store.UpdateEndpoint(ctx, ep, prev)
		switch lifecycle.ErrorCode(err) {
		case "":
			return end, nil
		case lifecycle.CodeNotFound:
			return time.Time{}, nil
		case lifecycle.CodeConflict:
			continue
		default:
			return time.Time{}, err
		}
	}
	return time.Time{}, nil
}

// letGo gives back a hold an attempt did not use (best effort: it ends on
// its own).
func (e *Engine) letGo(ctx context.Context, ep *Endpoint, hold time.Time) {
	if hold.IsZero() {
		return
	}
	prev := ep.Version
	ep.Holds, ep.Version, ep.UpdatedAt = dropHold(ep.liveHolds(e.clock.Now()), hold), ep.Version+1, e.clock.Now()
	if err := e.store.UpdateEndpoint(ctx, ep, prev); err != nil && lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
		e.log.WarnContext(ctx, "delivery: let go of an endpoint hold", "endpoint_id", ep.ID, "err", err)
	}
}

// dropHold returns holds without one hold equal to h (two equal holds are
// alike: either may go).
func dropHold(holds []time.Time, h time.Time) []time.Time {
	for i, x := range holds {
		if x.Equal(h) {
			return append(holds[:i:i], holds[i+1:]...)
		}
	}
	return holds
}

// settle ends a pending delivery without an attempt.
func (e *Engine) settle(ctx context.Context, d *Delivery, status, reason string) error {
	prev := d.Version
	d.Status, d.Reason, d.NextAttemptAt, d.Version, d.UpdatedAt = status, reason, time.Time{}, d.Version+1, e.clock.Now()
	if err := e.store.UpdateDelivery(ctx, d, prev); err != nil && lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
		return err
	}
	return nil
}

// send POSTs the delivery once and reports the attempt.
func (e *Engine) send(ctx context.Context, ep *Endpoint, d *Delivery) Attempt {
	start := e.clock.Now()
	a := Attempt{At: start}
	fail := func(format string, args ...any) Attempt {
		a.Error = fmt.Sprintf(format, args...)
		a.LatencyMS = e.clock.Now().Sub(start).Milliseconds()
		return a
	}
	sig, err := Sign(ep.Secrets(start), d.EventID, start, d.Payload)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return fail("bad url: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Sandman-Webhooks/1")
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", fmt.Sprint(start.Unix()))
	req.Header.Set("webhook-signature", sig)
	resp, err := e.client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, ErrRefused):
			return fail("%s", refusedText(err))
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return fail("timeout: no answer within %s", AttemptTimeout)
		default:
			return fail("no answer: %v", err)
		}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // reuse the connection when cheap
	a.StatusCode, a.Response = resp.StatusCode, loggable(b)
	a.LatencyMS = e.clock.Now().Sub(start).Milliseconds()
	return a
}

// loggable returns b as the attempt log keeps it: UTF-8 (a table string),
// each invalid byte sequence a replacement character, at most
// MaxResponseBody bytes, cut at a character (the cut of a read that ended
// inside one drops its partial bytes).
func loggable(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for len(s) > MaxResponseBody {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// refusedText returns the Guard's reason from a client error, "refused: …".
func refusedText(err error) string {
	s := err.Error()
	if i := strings.Index(s, ErrRefused.Error()+":"); i >= 0 {
		return s[i:]
	}
	return "refused: " + s
}

// endpointHealth tracks an endpoint's failures and slowness after an
// attempt and lets go of the attempt's hold (zero: none). A success clears
// FailingSince; a failure sets it if unset, holds the endpoint for the gap
// (FailingGap, or the schedule's shortest retry wait) from the attempt's
// start, so a failing endpoint gets at most one attempt each gap, however
// fast it fails, and disables the endpoint once it
// is DisableAfter old. An answer (or a timeout) after SlowAnswer or more
// sets SlowSince if unset; a quicker answer clears it. Holds that ended
// are dropped. Nothing changed, nothing is written: a healthy quick
// endpoint's attempts never write it. Best effort: a lost race is tried
// again, up to SlowEndpointConcurrency more times (every other holder may
// win one race against it), other failures are logged; a hold not let go
// ends on its own. ep is left as last read or written.
func (e *Engine) endpointHealth(ctx context.Context, ep *Endpoint, a Attempt, hold time.Time) {
	now := e.clock.Now()
	latency := time.Duration(a.LatencyMS) * time.Millisecond
	answered := a.StatusCode != 0
	slow := latency >= SlowAnswer && (answered || strings.HasPrefix(a.Error, "timeout"))
	for try := 0; try <= SlowEndpointConcurrency; try++ {
		if try > 0 {
			fresh, err := e.store.GetEndpoint(ctx, ep.AccountID, ep.ID)
			if err != nil {
				return
			}
			*ep = *fresh
		}
		prev := ep.Version
		holds := dropHold(ep.liveHolds(now), hold)
		changed := len(holds) != len(ep.Holds)
		ep.Holds = holds
		switch {
		case a.Succeeded() && !ep.FailingSince.IsZero():
			ep.FailingSince, changed = time.Time{}, true
		case !a.Succeeded() && ep.FailingSince.IsZero():
			ep.FailingSince, changed = a.At, true
		case !a.Succeeded() && !ep.Disabled && a.At.Sub(ep.FailingSince) >= DisableAfter:
			ep.Disabled, changed = true, true
			ep.DisabledReason = fmt.Sprintf("disabled automatically: every delivery failed since %s (%s)",
				ep.FailingSince.UTC().Format(time.RFC3339), DisableAfter)
		}
		if spaced := a.At.Add(e.gap); !a.Succeeded() && now.Before(spaced) {
			ep.Holds, changed = append(ep.Holds, spaced), true
		}
		switch {
		case slow && ep.SlowSince.IsZero():
			ep.SlowSince, changed = a.At, true
		case answered && !slow && !ep.SlowSince.IsZero():
			ep.SlowSince, changed = time.Time{}, true
		}
		if !changed {
			return
		}
		ep.Version, ep.UpdatedAt = ep.Version+1, now
		err := e.store.UpdateEndpoint(ctx, ep, prev)
		if err == nil || lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			if err != nil {
				e.log.WarnContext(ctx, "delivery: endpoint health", "endpoint_id", ep.ID, "err", err)
			}
			return
		}
	}
}
