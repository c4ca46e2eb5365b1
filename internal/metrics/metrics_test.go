package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/metrics"
)

var t0 = time.Date(2026, 11, 23, 4, 0, 0, 123_000_000, time.UTC)

// syncBuffer is a bytes.Buffer safe for concurrent use that counts Writes.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	total  int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	b.total += len(p)
	return b.buf.Write(p)
}

// writesBytes returns how many bytes were written in all.
func (b *syncBuffer) writesBytes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// doc is one parsed EMF line.
type doc struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	root map[string]json.RawMessage
}

// mustLines parses every line of out, checking each against the EMF
// specification's rules: one JSON object per line, an _aws member with a
// millisecond Timestamp and directives whose every dimension key is a
// string root member and every metric a number or an array of at most 100
// numbers, at most 100 metrics per directive, at most 30 keys per
// dimension set.
func mustLines(t *testing.T, b *syncBuffer) []doc {
	t.Helper()
	return mustLinesAt(t, b, t0)
}

// mustLinesAt is mustLines for lines stamped at.
func mustLinesAt(t *testing.T, b *syncBuffer, at time.Time) []doc {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	text := b.buf.String()
	b.buf.Reset()
	if text == "" {
		return nil
	}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("output does not end in a newline: %q", text)
	}
	var out []doc
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var d doc
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if err := json.Unmarshal([]byte(l), &d.root); err != nil {
			t.Fatal(err)
		}
		if d.AWS.Timestamp != at.UnixMilli() {
			t.Errorf("Timestamp %d, want %d (ms)", d.AWS.Timestamp, at.UnixMilli())
		}
		if len(d.AWS.CloudWatchMetrics) == 0 {
			t.Errorf("line without directives: %s", l)
		}
		for _, dir := range d.AWS.CloudWatchMetrics {
			if dir.Namespace != metrics.Namespace {
				t.Errorf("namespace %q, want %q", dir.Namespace, metrics.Namespace)
			}
			if len(dir.Metrics) == 0 || len(dir.Metrics) > metrics.MaxMetrics || len(dir.Dimensions) == 0 {
				t.Errorf("directive with %d metrics, %d dimension sets", len(dir.Metrics), len(dir.Dimensions))
			}
			for _, set := range dir.Dimensions {
				if len(set) > metrics.MaxDimensions {
					t.Errorf("dimension set of %d keys", len(set))
				}
				for _, k := range set {
					var s string
					if err := json.Unmarshal(d.root[k], &s); err != nil {
						t.Errorf("dimension %s is not a string member: %s", k, d.root[k])
					}
				}
			}
			for _, m := range dir.Metrics {
				var n float64
				var arr []float64
				if json.Unmarshal(d.root[m.Name], &n) != nil {
					if err := json.Unmarshal(d.root[m.Name], &arr); err != nil || len(arr) == 0 || len(arr) > metrics.MaxValues {
						t.Errorf("metric %s is neither a number nor 1..100 numbers: %s", m.Name, d.root[m.Name])
					}
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// value returns the root member name of d as a number (or the sum of an
// array) and the number of values.
func (d doc) value(t *testing.T, name string) (sum float64, n int) {
	t.Helper()
	raw, ok := d.root[name]
	if !ok {
		return 0, 0
	}
	var v float64
	if json.Unmarshal(raw, &v) == nil {
		return v, 1
	}
	var arr []float64
	if err := json.Unmarshal(raw, &arr); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, x := range arr {
		sum += x
	}
	return sum, len(arr)
}

func (d doc) str(name string) string {
	var s string
	_ = json.Unmarshal(d.root[name], &s)
	return s
}

// unit returns the unit and dimension sets name is defined with in d.
func (d doc) def(name string) (unit string, dims [][]string) {
	for _, dir := range d.AWS.CloudWatchMetrics {
		for _, m := range dir.Metrics {
			if m.Name == name {
				return m.Unit, dir.Dimensions
			}
		}
	}
	return "", nil
}

func newEmitter(fn string) (*metrics.Emitter, *syncBuffer) {
	b := &syncBuffer{}
	return metrics.New(metrics.Config{Writer: b, Function: fn, Clock: lifecycle.NewManualClock(t0)}), b
}

func TestThousandPausesOneLine(t *testing.T) {
	e, b := newEmitter("sweep")
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() { e.Paused(lifecycle.ReasonIdle) })
	}
	wg.Wait()
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := mustLines(t, b)
	if len(lines) != 1 || b.writes != 1 {
		t.Fatalf("%d lines in %d writes, want 1", len(lines), b.writes)
	}
	d := lines[0]
	if got, _ := d.value(t, metrics.Pauses); got != 1000 {
		t.Errorf("Pauses %v, want 1000", got)
	}
	if d.str(metrics.DimReason) != "idle" || d.str(metrics.DimFunction) != "sweep" {
		t.Errorf("dimensions Reason=%q Function=%q", d.str(metrics.DimReason), d.str(metrics.DimFunction))
	}
	unit, dims := d.def(metrics.Pauses)
	if unit != "Count" || !slices.EqualFunc(dims, [][]string{{"Function", "Reason"}, {"Reason"}}, slices.Equal) {
		t.Errorf("Pauses defined as %s %v, want Count [[Function Reason] [Reason]]", unit, dims)
	}
	// Flushed means forgotten: the next flush writes nothing.
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if lines := mustLines(t, b); len(lines) != 0 {
		t.Errorf("second flush wrote %d lines, want none", len(lines))
	}
}

func TestFlushPacksSeries(t *testing.T) {
	e, b := newEmitter("sessions")
	e.Paused(lifecycle.ReasonRequest)
	e.Paused(lifecycle.ReasonRequest)
	e.Paused(lifecycle.ReasonIdle)
	e.Resumed()
	e.ProviderError("e2b", lifecycle.ProviderErrorTransient)
	e.ProviderError("e2b", lifecycle.ProviderErrorGone)
	e.ProviderError("e2b", lifecycle.ProviderErrorTransient)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := mustLines(t, b)
	// Two reasons and two kinds cannot share a line (one value per
	// dimension per line); Resumes joins the first.
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	got := map[string]float64{}
	for _, d := range lines {
		for _, name := range []string{metrics.Pauses, metrics.Resumes, metrics.ProviderErrors} {
			if v, n := d.value(t, name); n > 0 {
				key := name
				switch name {
				case metrics.Pauses:
					key += "/" + d.str(metrics.DimReason)
				case metrics.ProviderErrors:
					key += "/" + d.str(metrics.DimProvider) + "/" + d.str(metrics.DimKind)
				}
				got[key] += v
			}
		}
	}
	want := map[string]float64{"Pauses/request": 2, "Pauses/idle": 1, "Resumes": 1,
		"ProviderErrors/e2b/transient": 2, "ProviderErrors/e2b/gone": 1}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	for _, d := range lines {
		if _, dims := d.def(metrics.Resumes); dims != nil &&
			!slices.EqualFunc(dims, [][]string{{"Function"}, {}}, slices.Equal) {
			t.Errorf("Resumes dimension sets %v, want [[Function] []]", dims)
		}
	}
}

// TestSweepLagKeepsEveryValue: a sweep's pauses and their lags. Every lag
// is written (EMF holds 100 values per member, so n pauses take n/100
// lines, rounded up), the pause count once, in the first line.
func TestSweepLagKeepsEveryValue(t *testing.T) {
	for _, tc := range []struct{ n, lines int }{{1, 1}, {250, 3}, {1000, 10}} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			e, b := newEmitter("sweep")
			var want float64
			for i := range tc.n {
				e.PauseLag(time.Duration(i) * time.Second)
				want += float64(i)
				e.Paused(lifecycle.ReasonIdle)
			}
			if err := e.Flush(); err != nil {
				t.Fatal(err)
			}
			lines := mustLines(t, b)
			if len(lines) != tc.lines {
				t.Fatalf("%d lines, want %d", len(lines), tc.lines)
			}
			var sum float64
			var n int
			for i, d := range lines {
				s, c := d.value(t, metrics.SweepLag)
				sum, n = sum+s, n+c
				if p, _ := d.value(t, metrics.Pauses); (i == 0) != (p == float64(tc.n)) {
					t.Errorf("line %d: Pauses %v, want %d in the first line only", i, p, tc.n)
				}
				if unit, _ := d.def(metrics.SweepLag); unit != "Seconds" {
					t.Errorf("SweepLag unit %q, want Seconds", unit)
				}
			}
			if n != tc.n || sum != want {
				t.Errorf("SweepLag %d values summing to %v; want %d, %v", n, sum, tc.n, want)
			}
		})
	}
}

func TestFlushRefusesBadDimensions(t *testing.T) {
	e, b := newEmitter("status")
	e.Add("Things", metrics.Count, 1, metrics.Dim{Name: metrics.DimFunction, Value: "x"})
	if err := e.Flush(); err == nil {
		t.Error("a series overriding Function was written")
	}
	if lines := mustLines(t, b); len(lines) != 0 {
		t.Errorf("wrote %d lines, want none", len(lines))
	}
}

func TestFlushNothingWritesNothing(t *testing.T) {
	e, b := newEmitter("status")
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.writes != 0 {
		t.Errorf("%d writes, want none", b.writes)
	}
}

func TestHandlerFlushesEachInvocation(t *testing.T) {
	e, b := newEmitter("publisher")
	pub := e.Publisher(lifecycle.PublisherFunc(func(_ context.Context, evs ...lifecycle.Event) error {
		if len(evs) == 3 {
			return errors.New("bus down")
		}
		return nil
	}))
	h := metrics.Handler(e, func(ctx context.Context, n int) (string, error) {
		err := pub.Publish(ctx, make([]lifecycle.Event, n)...)
		return "done", err
	})
	for _, tc := range []struct {
		n       int
		wantErr bool
		want    float64
	}{{10, false, 10}, {3, true, 0}, {7, false, 7}} {
		out, err := h(t.Context(), tc.n)
		if out != "done" || (err != nil) != tc.wantErr {
			t.Fatalf("handler(%d) = %q, %v", tc.n, out, err)
		}
		lines := mustLines(t, b)
		var got float64
		for _, d := range lines {
			v, _ := d.value(t, metrics.EventsPublished)
			got += v
		}
		if got != tc.want {
			t.Errorf("after publishing %d: EventsPublished %v in %d lines, want %v", tc.n, got, len(lines), tc.want)
		}
	}
}

type fakePusher struct{ gone map[string]bool }

func (p fakePusher) Push(_ context.Context, connID string, _ []byte) error {
	if p.gone[connID] {
		return errors.New("connection gone")
	}
	return nil
}

func TestCountPushes(t *testing.T) {
	e, b := newEmitter("publisher")
	p := e.CountPushes(fakePusher{gone: map[string]bool{"c2": true}})
	for _, id := range []string{"c1", "c2", "c3"} {
		_ = p.Push(t.Context(), id, []byte("{}"))
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := mustLines(t, b)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	if got, _ := lines[0].value(t, metrics.Pushes); got != 2 {
		t.Errorf("Pushes %v, want 2 (the closed connection is not a push)", got)
	}
}

func TestWithoutFunction(t *testing.T) {
	e, b := newEmitter("")
	e.Resumed()
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := mustLines(t, b)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
	if _, ok := lines[0].root[metrics.DimFunction]; ok {
		t.Error("Function member written without a function")
	}
	if _, dims := lines[0].def(metrics.Resumes); !slices.EqualFunc(dims, [][]string{{}}, slices.Equal) {
		t.Errorf("dimension sets %v, want [[]]", dims)
	}
}
