package retry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

func TestParseAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"86401", 0},
		{"999999999", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := ParseAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	ctx := context.Background()
	for n := range 6 {
		full := min(100*time.Millisecond<<n, 2*time.Second)
		d, ok := Backoff(ctx, n, 100*time.Millisecond, 2*time.Second, 0)
		if !ok || d < full/2 || d > full {
			t.Errorf("Backoff(%d) = %v, %v; want within [%v, %v]", n, d, ok, full/2, full)
		}
	}
	for n := range 40 { // doubling past the cap, and past 32 doublings, stays capped
		ceil := min(100*time.Millisecond<<min(n, 20), time.Second)
		for range 50 {
			if d, ok := Backoff(ctx, n, 100*time.Millisecond, time.Second, 0); !ok || d < ceil/2 || d > ceil {
				t.Fatalf("Backoff(%d) = %v, %v; want within [%v, %v]", n, d, ok, ceil/2, ceil)
			}
		}
	}
	if d, ok := Backoff(ctx, 0, 100*time.Millisecond, 2*time.Second, 800*time.Millisecond); !ok || d != 800*time.Millisecond {
		t.Errorf("retryAfter 800ms: %v, %v; want 800ms", d, ok)
	}
	if _, ok := Backoff(ctx, 0, 100*time.Millisecond, 2*time.Second, 3*time.Second); ok {
		t.Error("retryAfter beyond maxWait: retried")
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, ok := Backoff(short, 5, time.Second, 10*time.Second, 0); ok {
		t.Error("wait past the deadline: retried")
	}
}

// errTransient and errFinal are the failures TestDo's attempts return.
var (
	errTransient = errors.New("transient")
	errFinal     = errors.New("final")
)

// afterError carries a Retry-After, as a provider error does.
type afterError struct{ after time.Duration }

func (e afterError) Error() string { return "throttled" }

func TestDo(t *testing.T) {
	transient := func(err error, n int) bool { return !errors.Is(err, errFinal) && n < 3 }
	policy := func(waits *[]time.Duration) Policy {
		return Policy{Name: "test", Retryable: transient, Base: 100 * time.Millisecond, MaxWait: time.Second,
			Log: slog.New(slog.DiscardHandler),
			After: func(err error) time.Duration {
				var a afterError
				if errors.As(err, &a) {
					return a.after
				}
				return 0
			},
			Sleep: func(ctx context.Context, d time.Duration) error { *waits = append(*waits, d); return ctx.Err() }}
	}
	// failing returns an attempt that fails with errs in turn, then succeeds,
	// and counts its calls.
	failing := func(calls *int, errs ...error) func(context.Context) error {
		return func(context.Context) error {
			*calls++
			if *calls <= len(errs) {
				return errs[*calls-1]
			}
			return nil
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		errs      []error
		want      error
		calls     int
		minFirst  time.Duration // the first wait is at least this
		waitCount int
	}{
		{"OK", nil, nil, 1, 0, 0},
		{"RetriedThenOK", []error{errTransient, errTransient}, nil, 3, 50 * time.Millisecond, 2},
		{"RetriesRunOut", []error{errTransient, errTransient, errTransient, errTransient, errTransient}, errTransient, 4, 50 * time.Millisecond, 3},
		{"FinalNotRetried", []error{errFinal}, errFinal, 1, 0, 0},
		{"RetryAfterHonoured", []error{afterError{800 * time.Millisecond}}, nil, 2, 800 * time.Millisecond, 1},
		{"RetryAfterBeyondCapEnds", []error{afterError{2 * time.Second}}, afterError{2 * time.Second}, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			calls := 0
			err := Do(ctx, policy(&waits), failing(&calls, tc.errs...), "op", "test")
			if !errors.Is(err, tc.want) && err != tc.want {
				t.Errorf("Do = %v, want %v", err, tc.want)
			}
			if calls != tc.calls || len(waits) != tc.waitCount {
				t.Errorf("%d calls and %d waits, want %d and %d", calls, len(waits), tc.calls, tc.waitCount)
			}
			if len(waits) > 0 && waits[0] < tc.minFirst {
				t.Errorf("first wait %v, want at least %v", waits[0], tc.minFirst)
			}
		})
	}
	t.Run("CancelledDuringWait", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		pol := policy(new([]time.Duration))
		pol.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
		calls := 0
		if err := Do(cctx, pol, failing(&calls, errTransient, errTransient), "op", "test"); !errors.Is(err, errTransient) || calls != 1 {
			t.Errorf("Do = %v after %d calls, want the transient error after 1", err, calls)
		}
	})
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct{ n, def, want int }{{0, 3, 3}, {-1, 3, 0}, {5, 3, 5}} {
		if got := Limit(tc.n, tc.def); got != tc.want {
			t.Errorf("Limit(%d, %d) = %d, want %d", tc.n, tc.def, got, tc.want)
		}
	}
}
