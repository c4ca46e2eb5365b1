// Package metrics writes Sandman's operational metrics (docs/DESIGN.md
// "Operators") as CloudWatch embedded metric format (EMF): JSON
// lines on a function's standard output, from which CloudWatch Logs extracts
// metrics with no API call and no extra permission (the Lambda log group
// receives stdout). The EMF rules followed here are those of Amazon's
// "Specification: Embedded metric format": a root object with an "_aws"
// member holding Timestamp (milliseconds since the Unix epoch) and
// CloudWatchMetrics (directives of Namespace, Dimensions (sets of dimension
// keys) and Metrics (Name, Unit)); each referenced dimension and metric is a
// root member, a dimension a string, a metric a number or an array of at
// most 100 numbers; at most 100 metrics per directive.
//
// An Emitter aggregates in memory and writes on Flush, once per invocation
// (Handler wraps a Lambda handler to do so): counters are summed per series,
// so a sweep that pauses 1,000 sessions writes "Pauses": 1000 once, not
// 1,000 lines; observed values (SweepLag) are kept, 100 per line. Series
// that can share a line do (same dimension values, different names).
//
// Every series carries the Function dimension (the function's name in
// internal/routes, e.g. "sweep") and is also published without it,
// rolled up over the functions (a second dimension set), which the
// dashboard in infra/stack.go graphs.
//
// The metrics (namespace Sandman):
//
//	name                 unit     dimensions         emitted by
//	Pauses               Count    Reason             lifecycle: every committed transition into paused
//	Resumes              Count    -                  lifecycle: every committed transition back to running
//	ProviderErrors       Count    Provider, Kind     lifecycle: every failed provider call (lifecycle.ProviderErrorKind)
//	SweepLag             Seconds  -                  lifecycle.PauseIfDue: deadline to recorded pause (sweep, timer)
//	EventsPublished      Count    -                  publisher: events put on the bus
//	Pushes               Count    -                  the channel notifier: messages delivered to a connection
//	SpareFailures        Count    -                  lifecycle.FillPools: a warm pool's spare failed to become ready
//	PoolsStopped         Count    -                  lifecycle.FillPools: a pool stopped refilling after 3 failures in a row (alarmed)
//	ProviderCalls        Count    Provider, Class    calllimit.Wrap: a call the provider call limiter let through
//	ProviderCallsRefused Count    Provider, Class    calllimit.Wrap: a call it refused (its deadline came before its token)
//	ProviderCallWait     Seconds  Provider, Class    calllimit.Wrap: one value per call that waited for its token
//	GovernorLeased       Count    Provider           governor.Wrap: tokens leased from the fleet's bucket in the table
//	GovernorLeaseTime    Seconds  Provider           governor.Wrap: one value per lease, the table's answer time
//	ProviderThrottled    Count    Provider, Class    governor.Wrap: a provider answer 429 (the fleet's rate is cut)
//	GovernorFallbacks    Count    Provider           governor.Wrap: a process went to its own limiter (the table slow or down)
//	GovernorRecoveries   Count    Provider           governor.Wrap: a process came back to the table
//
// Locally nothing is emitted: the local stack builds its service without
// metrics, so `make run` prints none.
package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Namespace is the CloudWatch namespace of every Sandman metric.
const Namespace = "Sandman"

// The metric names (see the package doc for units and dimensions).
const (
	Pauses          = "Pauses"
	Resumes         = "Resumes"
	ProviderErrors  = "ProviderErrors"
	SweepLag        = "SweepLag"
	EventsPublished = "EventsPublished"
	Pushes          = "Pushes"
	SpareFailures   = "SpareFailures"
	PoolsStopped    = "PoolsStopped"
	// ProviderCalls, ProviderCallsRefused and ProviderCallWait are the
	// provider call limiter's (calllimit.Metrics).
	ProviderCalls        = "ProviderCalls"
	ProviderCallsRefused = "ProviderCallsRefused"
	ProviderCallWait     = "ProviderCallWait"
	// GovernorLeased, GovernorLeaseTime, ProviderThrottled,
	// GovernorFallbacks and GovernorRecoveries are the fleet's provider
	// governor's (governor.Metrics).
	GovernorLeased     = "GovernorLeased"
	GovernorLeaseTime  = "GovernorLeaseTime"
	ProviderThrottled  = "ProviderThrottled"
	GovernorFallbacks  = "GovernorFallbacks"
	GovernorRecoveries = "GovernorRecoveries"
)

// The dimension names.
const (
	DimFunction = "Function" // the function's name in internal/routes
	DimReason   = "Reason"   // a lifecycle.Reason* value
	DimProvider = "Provider" // a provider's name, e.g. "e2b"
	DimKind     = "Kind"     // a lifecycle.ProviderError* kind
	DimClass    = "Class"    // a provider call's class in the call limiter: lifecycle.CallPriority's String
)

// Unit is a CloudWatch metric unit (MetricDatum's Unit).
type Unit string

// The units Sandman's metrics use.
const (
	Count   Unit = "Count"
	Seconds Unit = "Seconds"
)

// EMF limits (the specification's).
const (
	// MaxValues is the most values one metric member holds (an array).
	MaxValues = 100
	// MaxMetrics is the most metrics one directive defines.
	MaxMetrics = 100
	// MaxDimensions is the most dimension keys of one dimension set.
	MaxDimensions = 30
)

// Dim is one dimension of a series: a name and its string value.
type Dim struct {
	Name, Value string
}

// Config is what an Emitter is built from (New).
type Config struct {
	// Writer receives the EMF lines, one Write per line ending in "\n":
	// os.Stdout in Lambda. Required.
	Writer io.Writer
	// Function is the Function dimension's value (internal/routes' name of
	// the function). "" leaves the dimension out.
	Function string
	// Namespace defaults to Namespace.
	Namespace string
	// Clock stamps each flush (default the system clock).
	Clock lifecycle.Clock
	// Log receives write failures (default slog.Default()).
	Log *slog.Logger
}

// Emitter aggregates metrics and writes them as EMF lines on Flush. It is
// safe for concurrent use. Build it with New.
type Emitter struct {
	cfg Config

	mu     sync.Mutex
	series map[string]*series // by key(name, dims)
}

// series is one metric with one set of dimension values.
type series struct {
	name   string
	unit   Unit
	dims   []Dim // sorted by name, Function excluded
	sum    float64
	values []float64
	dist   bool // values (Observe), not a sum (Add)
}

var _ lifecycle.Metrics = (*Emitter)(nil)

// New returns an Emitter writing to cfg.Writer.
func New(cfg Config) *Emitter {
	if cfg.Namespace == "" {
		cfg.Namespace = Namespace
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Emitter{cfg: cfg, series: map[string]*series{}}
}

// Add adds n to the counter name with the given dimensions (in any order;
// at most MaxDimensions-1 of them, names distinct and not DimFunction). All
// Adds of one series until the next Flush are written as their sum.
func (e *Emitter) Add(name string, unit Unit, n float64, dims ...Dim) {
	e.record(name, unit, false, n, dims)
}

// Observe records one value of the distribution name (e.g. a lag): every
// value is written (MaxValues per line), so CloudWatch's percentiles see
// each one.
func (e *Emitter) Observe(name string, unit Unit, v float64, dims ...Dim) {
	e.record(name, unit, true, v, dims)
}

func (e *Emitter) record(name string, unit Unit, dist bool, v float64, dims []Dim) {
	dims = slices.Clone(dims)
	slices.SortFunc(dims, func(a, b Dim) int { return strings.Compare(a.Name, b.Name) })
	var k strings.Builder
	k.WriteString(name)
	for _, d := range dims {
		k.WriteString("\x00" + d.Name + "\x00" + d.Value)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.series[k.String()]
	if !ok {
		s = &series{name: name, unit: unit, dims: dims, dist: dist}
		e.series[k.String()] = s
	}
	if dist {
		s.values = append(s.values, v)
	} else {
		s.sum += v
	}
}

// Paused counts a pause by reason (lifecycle.Metrics).
func (e *Emitter) Paused(reason string) { e.Add(Pauses, Count, 1, Dim{DimReason, reason}) }

// Resumed counts a resume (lifecycle.Metrics).
func (e *Emitter) Resumed() { e.Add(Resumes, Count, 1) }

// ProviderError counts a failed provider call by provider and kind
// (lifecycle.Metrics).
func (e *Emitter) ProviderError(provider, kind string) {
	e.Add(ProviderErrors, Count, 1, Dim{DimProvider, provider}, Dim{DimKind, kind})
}

// PauseLag records a pause's lag in seconds as SweepLag (lifecycle.Metrics).
func (e *Emitter) PauseLag(lag time.Duration) { e.Observe(SweepLag, Seconds, lag.Seconds()) }

// SpareFailed counts a warm pool spare that failed (lifecycle.PoolMetrics).
// The pool's id is in the log line, not a dimension: one alarmable series.
func (e *Emitter) SpareFailed(string) { e.Add(SpareFailures, Count, 1) }

// PoolStopped counts a pool that stopped refilling (lifecycle.PoolMetrics).
func (e *Emitter) PoolStopped(string) { e.Add(PoolsStopped, Count, 1) }

var _ lifecycle.PoolMetrics = (*Emitter)(nil)

// CallGranted counts a call the provider call limiter let through as
// ProviderCalls and, when it waited for its token, records the wait in
// seconds as ProviderCallWait (calllimit.Metrics). Calls that went at
// once record no wait: most calls do, and every value is written, so the
// wait's statistics describe the calls that queued (their count is its
// SampleCount).
func (e *Emitter) CallGranted(provider string, class lifecycle.CallPriority, wait time.Duration) {
	dims := []Dim{{DimProvider, provider}, {DimClass, class.String()}}
	e.Add(ProviderCalls, Count, 1, dims...)
	if wait > 0 {
		e.Observe(ProviderCallWait, Seconds, wait.Seconds(), dims...)
	}
}

// CallRefused counts a call the provider call limiter refused as
// ProviderCallsRefused (calllimit.Metrics).
func (e *Emitter) CallRefused(provider string, class lifecycle.CallPriority) {
	e.Add(ProviderCallsRefused, Count, 1, Dim{DimProvider, provider}, Dim{DimClass, class.String()})
}

var _ calllimit.Metrics = (*Emitter)(nil)

// Leased counts tokens leased from the fleet's bucket as GovernorLeased and
// records the table's answer time as GovernorLeaseTime (governor.Metrics).
func (e *Emitter) Leased(provider string, tokens int, took time.Duration) {
	e.Add(GovernorLeased, Count, float64(tokens), Dim{DimProvider, provider})
	e.Observe(GovernorLeaseTime, Seconds, took.Seconds(), Dim{DimProvider, provider})
}

// Throttled counts a provider's 429 as ProviderThrottled (governor.Metrics).
func (e *Emitter) Throttled(provider string, class lifecycle.CallPriority) {
	e.Add(ProviderThrottled, Count, 1, Dim{DimProvider, provider}, Dim{DimClass, class.String()})
}

// Fallback counts a process going to its own limiter as GovernorFallbacks,
// or back to the table as GovernorRecoveries (governor.Metrics).
func (e *Emitter) Fallback(provider string, on bool) {
	name := GovernorRecoveries
	if on {
		name = GovernorFallbacks
	}
	e.Add(name, Count, 1, Dim{DimProvider, provider})
}

var _ governor.Metrics = (*Emitter)(nil)

// entry is one series' contribution to one line: its sum, or up to
// MaxValues of its values.
type entry struct {
	s     *series
	value any // float64 or []float64
}

// line is one EMF document being packed: root members and the entries
// whose names and dimension values it holds.
type line struct {
	dims    map[string]string // dimension values, Function excluded
	names   map[string]bool   // metric names
	entries []entry
}

// fits reports whether en can join l: its name is new to l, its dimension
// values agree with l's, no dimension shares a name with a metric, and l
// has room.
func (l *line) fits(en entry) bool {
	if l.names[en.s.name] || len(l.entries) >= MaxMetrics {
		return false
	}
	if _, clash := l.dims[en.s.name]; clash {
		return false
	}
	for _, d := range en.s.dims {
		if v, ok := l.dims[d.Name]; (ok && v != d.Value) || l.names[d.Name] {
			return false
		}
	}
	return true
}

func (l *line) add(en entry) {
	l.names[en.s.name] = true
	for _, d := range en.s.dims {
		l.dims[d.Name] = d.Value
	}
	l.entries = append(l.entries, en)
}

// Flush writes everything recorded since the last Flush and forgets it:
// one EMF line per group of series that can share one (see the package
// doc), stamped with the clock's time. Nothing recorded writes nothing.
// Errors: a series with an invalid dimension (none is written then), or the
// writer's; recorded metrics are dropped either way, never written twice.
func (e *Emitter) Flush() error {
	e.mu.Lock()
	all := make([]*series, 0, len(e.series))
	for _, s := range e.series {
		all = append(all, s)
	}
	e.series = map[string]*series{}
	e.mu.Unlock()
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b *series) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return slices.CompareFunc(a.dims, b.dims, func(x, y Dim) int {
			return strings.Compare(x.Name+"\x00"+x.Value, y.Name+"\x00"+y.Value)
		})
	})

	var entries []entry
	for _, s := range all {
		if err := e.check(s); err != nil {
			return err
		}
		if !s.dist {
			entries = append(entries, entry{s, s.sum})
			continue
		}
		for chunk := range slices.Chunk(s.values, MaxValues) {
			entries = append(entries, entry{s, chunk})
		}
	}
	var lines []*line
	for _, en := range entries {
		i := slices.IndexFunc(lines, func(l *line) bool { return l.fits(en) })
		if i < 0 {
			lines = append(lines, &line{dims: map[string]string{}, names: map[string]bool{}})
			i = len(lines) - 1
		}
		lines[i].add(en)
	}

	ts := e.cfg.Clock.Now().UnixMilli()
	var errs []error
	for _, l := range lines {
		b, err := e.encode(l, ts)
		if err == nil {
			_, err = e.cfg.Writer.Write(b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("write metrics line: %w", err))
		}
	}
	return errors.Join(errs...)
}

// check refuses a series EMF cannot carry.
func (e *Emitter) check(s *series) error {
	if s.name == "" || s.name == DimFunction {
		return fmt.Errorf("metric name %q is empty or reserved", s.name)
	}
	if len(s.dims) >= MaxDimensions {
		return fmt.Errorf("metric %s: %d dimensions, at most %d", s.name, len(s.dims), MaxDimensions-1)
	}
	for i, d := range s.dims {
		if d.Name == "" || d.Name == DimFunction || d.Name == "_aws" || (i > 0 && s.dims[i-1].Name == d.Name) {
			return fmt.Errorf("metric %s: dimension name %q is empty, reserved or repeated", s.name, d.Name)
		}
	}
	return nil
}

// directive is an EMF MetricDirective.
type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

// definition is an EMF MetricDefinition.
type definition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit"`
}

// encode renders l as one EMF line: one directive per distinct set of
// dimension names, each published with and without Function.
func (e *Emitter) encode(l *line, ts int64) ([]byte, error) {
	root := map[string]any{}
	var directives []directive
	byKeys := map[string]int{}
	for _, en := range l.entries {
		keys := make([]string, len(en.s.dims))
		for i, d := range en.s.dims {
			keys[i] = d.Name
			root[d.Name] = d.Value
		}
		id := strings.Join(keys, "\x00")
		i, ok := byKeys[id]
		if !ok {
			sets := [][]string{keys}
			if e.cfg.Function != "" {
				sets = [][]string{append([]string{DimFunction}, keys...), keys}
			}
			directives = append(directives, directive{Namespace: e.cfg.Namespace, Dimensions: sets})
			i = len(directives) - 1
			byKeys[id] = i
		}
		directives[i].Metrics = append(directives[i].Metrics, definition{Name: en.s.name, Unit: en.s.unit})
		root[en.s.name] = en.value
	}
	if e.cfg.Function != "" {
		root[DimFunction] = e.cfg.Function
	}
	root["_aws"] = map[string]any{"Timestamp": ts, "CloudWatchMetrics": directives}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one line, "\n"-terminated
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode metrics line: %w", err)
	}
	return buf.Bytes(), nil
}

// Handler wraps a Lambda handler so that every invocation ends with a
// Flush of e, before the answer is returned (Lambda may freeze the process
// right after). A failed flush is logged, never the invocation's error:
// metrics are lost, the work is not. An invocation killed by its timeout
// flushes nothing.
func Handler[In, Out any](e *Emitter, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		defer func() {
			if err := e.Flush(); err != nil {
				e.cfg.Log.ErrorContext(ctx, "flush metrics", "err", err)
			}
		}()
		return h(ctx, in)
	}
}

// Publisher returns pub counting what it publishes: after each Publish
// that succeeds, EventsPublished grows by the number of events (a failed
// call counts nothing; the stream delivers its records again).
func (e *Emitter) Publisher(pub lifecycle.Publisher) lifecycle.Publisher {
	return lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		if err := pub.Publish(ctx, evs...); err != nil {
			return err
		}
		e.Add(EventsPublished, Count, float64(len(evs)))
		return nil
	})
}

// Pusher is the client channel's push (internal/channel.Pusher's method
// set, repeated here so this package needs no channel).
type Pusher interface {
	Push(ctx context.Context, connID string, msg []byte) error
}

// CountPushes returns p counting each message it delivers as one Pushes
// (a failed push, such as a closed connection, counts nothing). Wrap the
// notifier's pusher with it: the API Gateway Management API's in AWS.
func (e *Emitter) CountPushes(p Pusher) Pusher {
	return pushCounter{p: p, e: e}
}

type pushCounter struct {
	p Pusher
	e *Emitter
}

func (c pushCounter) Push(ctx context.Context, connID string, msg []byte) error {
	if err := c.p.Push(ctx, connID, msg); err != nil {
		return err
	}
	c.e.Add(Pushes, Count, 1)
	return nil
}
