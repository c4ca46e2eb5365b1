package sweep_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// staleConns is a sweep.StaleConns that records the time it was asked at.
type staleConns struct {
	at      []time.Time
	dropped int
	err     error
}

func (s *staleConns) ReapStale(_ context.Context, now time.Time) (int, error) {
	s.at = append(s.at, now)
	return s.dropped, s.err
}

// TestSweepDropsStaleConnections: every run asks Config.Conns to drop the
// connections that lost their socket, as of the service clock, and counts
// them in the summary; a failure marks the run incomplete.
func TestSweepDropsStaleConnections(t *testing.T) {
	clock := lifecycle.NewManualClock(t0)
	svc := lifecycle.NewService(lifecycle.Config{
		Store: memstore.New(), Provider: fake.New(fake.Config{Clock: clock}), Clock: clock,
		Log: slog.New(slog.DiscardHandler), Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	conns := &staleConns{dropped: 3}
	sw := sweep.New(svc, sweep.Config{Conns: conns, ReconcileSample: -1}, slog.New(slog.DiscardHandler))
	clock.Advance(time.Hour)
	sum, err := sw.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(conns.at) != 1 || !conns.at[0].Equal(clock.Now()) {
		t.Errorf("asked at %v, want once at %v", conns.at, clock.Now())
	}
	if sum.StaleConns != 3 || sum.Incomplete {
		t.Errorf("summary stale_conns %d incomplete %v, want 3 and complete", sum.StaleConns, sum.Incomplete)
	}
	conns.err = errors.New("table unavailable")
	if sum, err = sw.Run(t.Context()); err != nil || !sum.Incomplete {
		t.Errorf("a failed drop: err %v, incomplete %v; want a run marked incomplete", err, sum.Incomplete)
	}
}
