package lifecycle

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// stubRunner is a provider that runs commands, to see that LimitCalls
// keeps CommandRunner and limits its calls.
type stubRunner struct{ stubProvider }

func (stubRunner) KeepsProcesses() bool { return true }
func (stubRunner) StartCommand(context.Context, string, Command) (CommandStatus, error) {
	return CommandStatus{}, nil
}
func (stubRunner) CommandStatus(context.Context, string, string) (CommandStatus, error) {
	return CommandStatus{}, nil
}
func (stubRunner) PortURL(context.Context, string, int) (string, error) { return "https://p", nil }
func (stubRunner) PortClosed(int, http.Header, []byte) bool             { return false }

// grantLog records the waits the limiter asked for: a call that waited d
// was let through d after the (standing) clock's time.
type grantLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (g *grantLog) sleep(_ context.Context, d time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waits = append(g.waits, d)
	return nil
}

// TestLimitCallsNeverExceedsTheRate: 40 callers making 5 calls each at
// one instant through a 10/s bucket of depth 5 are let through at most
// 5 + 10×w calls in any window of w, every one of them is let through
// (none is refused), and the last waits exactly (200 - 5)/10 s: the
// bucket paces, it does not starve.
func TestLimitCallsNeverExceedsTheRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := NewManualClock(t0)
	g := &grantLog{}
	const perSecond, burst, callers, each = 10.0, 5, 40, 5
	p := LimitCalls(stubRunner{stubProvider{nil}}, LimitConfig{Limit: CallLimit{PerSecond: perSecond, Burst: burst},
		Clock: clock, Sleep: g.sleep})

	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for j := range each {
				var err error
				switch (i + j) % 5 {
				case 0:
					err = p.Pause(ctx, "sb")
				case 1:
					_, err = p.Resume(ctx, "sb", time.Minute)
				case 2:
					err = p.SetTimeout(ctx, "sb", time.Minute)
				case 3:
					_, err = p.Create(ctx, CreateRequest{})
				default:
					_, err = p.(CommandRunner).StartCommand(ctx, "sb", Command{})
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}

	// Every call happened at t0 + its wait (the clock stood still).
	times := make([]time.Duration, 0, callers*each)
	for range callers*each - len(g.waits) {
		times = append(times, 0)
	}
	times = append(times, g.waits...)
	slices.Sort(times)
	if got := callers*each - len(g.waits); got != burst {
		t.Errorf("%d calls went through without waiting, want the bucket's depth %d", got, burst)
	}
	for _, w := range []time.Duration{time.Second / 2, time.Second, 3 * time.Second, 10 * time.Second} {
		allowed := burst + int(perSecond*w.Seconds())
		for i, start := range times {
			n, _ := slices.BinarySearch(times, start+w) // calls in [start, start+w)
			if n-i > allowed {
				t.Fatalf("%d calls within %v from t0+%v, want at most %d", n-i, w, start, allowed)
			}
		}
	}
	want := time.Duration(float64(callers*each-burst) / perSecond * float64(time.Second))
	if last := times[len(times)-1]; last < want-time.Millisecond || last > want+time.Millisecond {
		t.Errorf("the last call waited %v, want %v", last, want)
	}
}

// TestLimitCallsWithoutTimeForATokenFailsTransientAtOnce: a call whose
// deadline comes before its token does not wait: it fails at once with a
// transient error carrying the wait as RetryAfter, and gives its token
// back, so the next call after one refill goes straight through.
func TestLimitCallsWithoutTimeForATokenFailsTransientAtOnce(t *testing.T) {
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	slept := 0
	p := LimitCalls(stubProvider{nil}, LimitConfig{Limit: CallLimit{PerSecond: 1.0 / 60, Burst: 1}, Clock: clock,
		Sleep: func(context.Context, time.Duration) error { slept++; return nil }})
	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := p.Pause(ctx, "sb")
	var pe *ProviderError
	if !errors.Is(err, ErrProviderTransient) || !errors.As(err, &pe) {
		t.Fatalf("second call within 5 s = %v, want a transient ProviderError", err)
	}
	if pe.RetryAfter < 59*time.Second || pe.RetryAfter > time.Minute || pe.Op != "pause" || pe.SandboxID != "sb" {
		t.Errorf("error %+v: want op pause on sb, RetryAfter about 1 min", pe)
	}
	if slept != 0 {
		t.Errorf("slept %d times, want none", slept)
	}
	clock.Advance(time.Minute)
	if err := p.Pause(t.Context(), "sb"); err != nil || slept != 0 {
		t.Errorf("after one refill: err %v, slept %d; want straight through (the refused call gave its token back)", err, slept)
	}
}

// TestLimitCallsCancelWhileWaitingReturnsPromptly: a caller waiting for
// a token (on the real wait) returns soon after its ctx is cancelled, with
// a transient error that wraps the cancellation.
func TestLimitCallsCancelWhileWaitingReturnsPromptly(t *testing.T) {
	p := LimitCalls(stubProvider{nil}, LimitConfig{Limit: CallLimit{PerSecond: 1.0 / 3600, Burst: 1}})
	if _, err := p.Get(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := p.Get(ctx, "sb")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it start waiting
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrProviderTransient) || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want transient wrapping context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled caller still waits for its token")
	}
}

// TestLimitCallsKeepsOptionalInterfaces: the limited provider offers
// exactly the optional interfaces of the one it wraps, and an off limit
// returns the provider itself.
func TestLimitCallsKeepsOptionalInterfaces(t *testing.T) {
	limit := LimitConfig{Limit: CallLimit{PerSecond: 100}}
	for _, tc := range []struct {
		name                string
		p                   Provider
		report, check, runs bool
	}{
		{"Plain", stubProvider{nil}, false, false, false},
		{"Both", stubBoth{stubProvider{nil}}, true, true, false},
		{"Runner", stubRunner{stubProvider{nil}}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := LimitCalls(tc.p, limit)
			_, r := p.(TimeoutReporter)
			_, c := p.(TemplateChecker)
			_, cr := p.(CommandRunner)
			if r != tc.report || c != tc.check || cr != tc.runs {
				t.Errorf("TimeoutReporter %v, TemplateChecker %v, CommandRunner %v; want %v, %v, %v", r, c, cr, tc.report, tc.check, tc.runs)
			}
			if p.Name() != "stub" {
				t.Errorf("name %q", p.Name())
			}
		})
	}
	plain := stubProvider{nil}
	if p := LimitCalls(plain, LimitConfig{}); p != Provider(plain) {
		t.Errorf("an off limit wrapped the provider: %T", p)
	}
}
