package metrics_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// TestSweepInvocationLines runs the sweep function's handler as its
// main wires it (the service's Metrics an Emitter, the handler wrapped by
// Handler) over the in-memory store: one sweep that pauses 1,000 idle
// sessions, 90 s after their deadline, writes Pauses 1000 once and every
// lag, 100 per line: 10 lines, not 1,000.
func TestSweepInvocationLines(t *testing.T) {
	const sessions = 1000
	clock := lifecycle.NewManualClock(t0)
	b := &syncBuffer{}
	m := metrics.New(metrics.Config{Writer: b, Function: "sweep", Clock: clock})
	quiet := slog.New(slog.DiscardHandler)
	svc := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: fake.New(fake.Config{Clock: clock}),
		Clock: clock, Log: quiet, Metrics: m})
	for i := range sessions {
		if _, _, err := svc.Create(t.Context(), "acct", lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 60}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if err := m.Flush(); err != nil { // the creates' invocations
		t.Fatal(err)
	}
	mustLines(t, b)

	// Each session's idle deadline is its idle timeout plus the heartbeat
	// coalescing window after its create (docs/DESIGN.md "Activity and
	// idle"); the sweep runs 90 s past it.
	window := lifecycle.DefaultPolicy().ActivityGranularity
	clock.Advance(60*time.Second + window + 90*time.Second)
	sw := sweep.New(svc, sweep.Config{Rate: rate.Inf}, quiet)
	handle := metrics.Handler(m, sweep.NewHandler(sw, quiet).Handle)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sum, err := handle(ctx, events.CloudWatchEvent{})
	if err != nil {
		t.Fatal(err)
	}
	lines := mustLinesAt(t, b, clock.Now())
	var pauses, lagSum float64
	var lags int
	for _, d := range lines {
		p, _ := d.value(t, metrics.Pauses)
		l, n := d.value(t, metrics.SweepLag)
		pauses, lagSum, lags = pauses+p, lagSum+l, lags+n
	}
	t.Logf("sweep: paused %d (lag p50 %d ms, max %d ms); metrics: %d lines, %d bytes",
		sum.Paused, sum.LagP50MS, sum.LagMaxMS, len(lines), b.writesBytes())
	if pauses != sessions || lags != sessions || lagSum != 90*sessions || len(lines) != sessions/metrics.MaxValues {
		t.Errorf("Pauses %v, %d lags summing to %v in %d lines; want %d, %d lags of 90 s, %d lines",
			pauses, lags, lagSum, len(lines), sessions, sessions, sessions/metrics.MaxValues)
	}
}
