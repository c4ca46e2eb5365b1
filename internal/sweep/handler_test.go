package sweep_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/sweep"
	"github.com/sandmanhq/sandman/internal/sweep/sqsrefill"
)

// MustScheduledEvent reads the EventBridge scheduled event fixture that
// `make invoke` sends to the sweep function.
func MustScheduledEvent(tb testing.TB) events.CloudWatchEvent {
	tb.Helper()
	raw, err := os.ReadFile("../../events/scheduled/sweep.json")
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		tb.Fatalf("decode fixture: %v", err)
	}
	return ev
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns every JSON log line whose msg is msg.
func (b *syncBuffer) lines(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

func TestScheduledEventFixture(t *testing.T) {
	ev := MustScheduledEvent(t)
	if got, want := ev.DetailType, "Scheduled Event"; got != want {
		t.Errorf("detail-type = %q, want %q", got, want)
	}
	if got, want := ev.Source, "aws.events"; got != want {
		t.Errorf("source = %q, want %q", got, want)
	}
	if got, want := len(ev.Resources), 1; got != want {
		t.Fatalf("resources = %d, want %d", got, want)
	}
	if ev.Time.IsZero() || ev.ID == "" || ev.AccountID == "" || ev.Region == "" {
		t.Errorf("fixture lacks id, time, account or region: %+v", ev)
	}
}

func TestHandle(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		e := MustEnv(t)
		s := MustSessions(t, e, 2)
		// Due at t0+10m30s (the idle timeout plus the 30 s coalescing
		// window): a minute late.
		e.clock.Set(t0.Add(11*time.Minute + 30*time.Second))
		var logs syncBuffer
		sw := sweep.New(e.svc, sweep.Config{Rate: rate.Inf}, slog.New(slog.NewJSONHandler(&logs, nil)))

		sum, err := sweep.NewHandler(sw, quiet()).Handle(t.Context(), MustScheduledEvent(t))
		if err != nil {
			t.Fatalf("handle: %v", err)
		}

		if got, want := sum.Paused, 2; got != want {
			t.Errorf("paused = %d, want %d", got, want)
		}
		for _, sess := range s {
			MustState(t, e, sess.ID, lifecycle.StatePaused)
		}
		// The result is the Lambda's JSON output.
		raw, err := json.Marshal(sum)
		if err != nil {
			t.Fatalf("marshal summary: %v", err)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("unmarshal summary: %v", err)
		}
		for key, want := range map[string]any{"candidates": 2.0, "paused": 2.0, "lag_max_ms": 60000.0, "incomplete": false} {
			if got := out[key]; got != want {
				t.Errorf("summary JSON %s = %v, want %v", key, got, want)
			}
		}
		// One summary line per run, with the same names.
		lines := logs.lines(t, "idle sweep finished")
		if got, want := len(lines), 1; got != want {
			t.Fatalf("summary log lines = %d, want %d", got, want)
		}
		logged, _ := lines[0]["summary"].(map[string]any)
		if got, want := logged["paused"], 2.0; got != want {
			t.Errorf("logged summary.paused = %v, want %v", got, want)
		}
	})

	t.Run("ErrStoreUnreachable", func(t *testing.T) {
		e := MustEnv(t)
		down := errors.New("dial tcp 127.0.0.1:1: connection refused")
		e.store.findDueErr = down
		_, err := sweep.NewHandler(MustSweeper(t, e, sweep.Config{}), quiet()).Handle(t.Context(), MustScheduledEvent(t))
		if !errors.Is(err, down) {
			t.Errorf("handle error = %v, want %v", err, down)
		}
	})
}

// refillCalls is a sqsrefill.Filler that records the pools it fills.
type refillCalls struct{ pools []string }

func (r *refillCalls) FillPool(_ context.Context, poolID string) (lifecycle.PoolFillSummary, error) {
	r.pools = append(r.pools, poolID)
	return lifecycle.PoolFillSummary{}, nil
}

func TestInvokeTellsRefillBatchesFromTheSchedule(t *testing.T) {
	e := MustEnv(t)
	MustSessions(t, e, 1)
	e.clock.Set(t0.Add(11*time.Minute + 30*time.Second))
	fills := &refillCalls{}
	h := sweep.NewHandler(sweep.New(e.svc, sweep.Config{Rate: rate.Inf}, quiet()), quiet())

	batch, err := os.ReadFile("../../events/queue/poolrefill.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Invoke(t.Context(), batch); err == nil {
		t.Error("an SQS batch without a refill handler was taken")
	}
	h.Refills = sqsrefill.NewHandler(fills, quiet())
	out, err := h.Invoke(t.Context(), batch)
	if _, ok := out.(events.SQSEventResponse); err != nil || !ok {
		t.Fatalf("invoke with the refill batch = %T, %v; want the refill handler's answer", out, err)
	}
	if len(fills.pools) != 1 || fills.pools[0] != "pool_0000000000000000" {
		t.Errorf("pools filled = %v, want the batch's one pool", fills.pools)
	}

	scheduled, err := os.ReadFile("../../events/scheduled/sweep.json")
	if err != nil {
		t.Fatal(err)
	}
	out, err = h.Invoke(t.Context(), scheduled)
	sum, ok := out.(sweep.Summary)
	if err != nil || !ok || sum.Paused != 1 {
		t.Errorf("invoke with the scheduled event = %+v (%T), %v; want a sweep that paused 1", out, out, err)
	}
	if len(fills.pools) != 1 {
		t.Errorf("the scheduled event reached the refill handler")
	}
}
