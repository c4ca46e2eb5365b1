package governor_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// stub is a provider that records the order its calls reach it in (the
// label the caller's ctx carries) and can answer 429 or make extra
// attempts through the call's gate.
type stub struct {
	mu       sync.Mutex
	order    []string
	answer   func(ctx context.Context) error
	attempts int // extra gate attempts per call (an adapter's retries)
}

type label struct{}

func (s *stub) call(ctx context.Context) error {
	if g := lifecycle.CallGateOf(ctx); g != nil {
		for range s.attempts + 1 {
			if err := g.Attempt(ctx); err != nil {
				return err
			}
		}
	}
	l, _ := ctx.Value(label{}).(string)
	s.mu.Lock()
	s.order = append(s.order, l)
	answer := s.answer
	s.mu.Unlock()
	if answer != nil {
		return answer(ctx)
	}
	return nil
}

func (s *stub) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

func (s *stub) Name() string { return "stub" }
func (s *stub) Create(ctx context.Context, _ lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, s.call(ctx)
}
func (s *stub) Get(ctx context.Context, _ string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, s.call(ctx)
}
func (s *stub) List(ctx context.Context, _ lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, s.call(ctx)
}
func (s *stub) Pause(ctx context.Context, _ string) error { return s.call(ctx) }
func (s *stub) Resume(ctx context.Context, _ string, _ time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, s.call(ctx)
}
func (s *stub) SetTimeout(ctx context.Context, _ string, _ time.Duration) error { return s.call(ctx) }
func (s *stub) Probe(ctx context.Context, _ string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, s.call(ctx)
}
func (s *stub) Kill(ctx context.Context, _ string) error { return s.call(ctx) }

// simClock is a manual clock whose sleeps advance it: the governor's lease
// loop backs off in simulated time, instantly.
type simClock struct{ *lifecycle.ManualClock }

func newSimClock() simClock {
	return simClock{lifecycle.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

func (c simClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// frozenClock is a manual clock whose sleeps wait until the test moves
// it: calls waiting for tokens stay waiting until then.
type frozenClock struct{ *lifecycle.ManualClock }

func newFrozenClock() frozenClock {
	return frozenClock{lifecycle.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

func (c frozenClock) sleep(ctx context.Context, d time.Duration) error {
	until := c.Now().Add(d)
	for c.Now().Before(until) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// settle waits until the provider's calls stop coming (the bucket is
// drained at the frozen time) and returns how many came.
func settle(t *testing.T, st *stub) int {
	t.Helper()
	n := -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		if m := len(st.calls()); m == n {
			return n
		} else {
			n = m
		}
	}
	t.Fatal("the calls never settled")
	return 0
}

// served moves clock on 100 ms at a time until the provider has been
// asked label's call, and returns how many calls went through before it.
func served(t *testing.T, clock frozenClock, st *stub, label string) int {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		for i, l := range st.calls() {
			if l == label {
				return i
			}
		}
		clock.Advance(100 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was never served", label)
	return 0
}

// TestAUserCallGoesBeforeWaitingBackgroundCalls: 30 pauses drain a 10/s
// bucket and wait; a resume that comes after them is let through before
// all but one or two of them, in a few tokens' time.
func TestAUserCallGoesBeforeWaitingBackgroundCalls(t *testing.T) {
	clock := newFrozenClock()
	st := &stub{}
	p := governor.Wrap(st, governor.Config{Limit: calllimit.Limit{PerSecond: 10, Burst: 10}, Table: &governor.MemTable{},
		Clock: clock, Sleep: clock.sleep, Log: quiet()})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 30 {
		wg.Go(func() { _ = p.Pause(context.WithValue(ctx, label{}, "pause"), "sb") })
	}
	before := settle(t, st)
	wg.Go(func() { _, _ = p.Resume(context.WithValue(ctx, label{}, "resume"), "sb", time.Minute) })
	if at := served(t, clock, st, "resume"); at > before+2 {
		t.Errorf("%d pauses went through before the resume that came after %d of them, want at most 2 more", at, before)
	}
}

// TestAnAccountOverItsShareYieldsToAnother: account a's 30 creates drain a
// 10/s bucket and wait (a is over its share: b made a call too); b's
// resume that comes after them goes before all but one or two of them.
func TestAnAccountOverItsShareYieldsToAnother(t *testing.T) {
	clock := newFrozenClock()
	st := &stub{}
	p := governor.Wrap(st, governor.Config{Limit: calllimit.Limit{PerSecond: 10, Burst: 10}, Table: &governor.MemTable{},
		Clock: clock, Sleep: clock.sleep, Log: quiet()})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctxA := context.WithValue(lifecycle.WithCallAccount(ctx, "a"), label{}, "a")
	ctxB := context.WithValue(lifecycle.WithCallAccount(ctx, "b"), label{}, "b")
	if _, err := p.Resume(ctxB, "sb", time.Minute); err != nil { // b is known
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 30 {
		wg.Go(func() { _, _ = p.Create(ctxA, lifecycle.CreateRequest{}) })
	}
	before := settle(t, st)
	wg.Go(func() { _, _ = p.Resume(context.WithValue(ctxB, label{}, "b again"), "sb", time.Minute) })
	if at := served(t, clock, st, "b again"); at > before+2 {
		t.Errorf("%d of a's creates went through before b's resume that came after %d calls, want at most 2 more", at, before)
	}
}

// failingTable is a Table that fails, or answers after a delay.
type failingTable struct {
	delay time.Duration
	err   error
	calls atomic.Int32
}

func (f *failingTable) Take(ctx context.Context, _ governor.Take) (governor.State, bool, error) {
	f.calls.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return governor.State{}, false, ctx.Err()
		}
	}
	return governor.State{}, false, f.err
}

func (f *failingTable) Cut(context.Context, governor.Cut) (governor.State, error) {
	return governor.State{}, f.err
}

// fallbacks records the governor's fallback metric.
type fallbacks struct {
	calllimit.Metrics
	mu  sync.Mutex
	ons []bool
}

func (f *fallbacks) Leased(string, int, time.Duration)                         {}
func (f *fallbacks) Throttled(string, lifecycle.CallPriority)                  {}
func (f *fallbacks) CallGranted(string, lifecycle.CallPriority, time.Duration) {}
func (f *fallbacks) CallRefused(string, lifecycle.CallPriority)                {}
func (f *fallbacks) Fallback(_ string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ons = append(f.ons, on)
}

// TestATableThatFailsOrStallsFallsBackWithinTheCallsBudget: with the table
// failing, or stalling past its timeout, calls go through the per-process
// limiter (at its share of the limit) instead, each within its budget;
// the fallback is reported; and the table is not asked again until
// RetryTable has passed.
func TestATableThatFailsOrStallsFallsBackWithinTheCallsBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table *failingTable
	}{
		{"failing", &failingTable{err: errors.New("table down")}},
		{"stalled", &failingTable{delay: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &stub{}
			m := &fallbacks{}
			p := governor.Wrap(st, governor.Config{Limit: calllimit.Limit{PerSecond: 1000}, Table: tc.table, Fallback: 0.5,
				TableTimeout: 20 * time.Millisecond, RetryTable: time.Hour, Metrics: m, Log: quiet()})
			for i := range 20 {
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
				start := time.Now()
				_, err := p.Resume(ctx, "sb", time.Minute)
				cancel()
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if took := time.Since(start); took > time.Second {
					t.Errorf("call %d took %v", i, took)
				}
			}
			if n := tc.table.calls.Load(); n != 1 {
				t.Errorf("the table was asked %d times, want once before RetryTable", n)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if len(m.ons) != 1 || !m.ons[0] {
				t.Errorf("fallback reports %v, want one: on", m.ons)
			}
		})
	}
}

// TestAWaitingCallEndsWithItsBudget: once the bucket is drained, a call
// with 50 ms left leaves within them, refused (transient), and the
// provider is not asked for it.
func TestAWaitingCallEndsWithItsBudget(t *testing.T) {
	st := &stub{}
	p := governor.Wrap(st, governor.Config{Limit: calllimit.Limit{PerSecond: 1, Burst: 1}, Table: &governor.MemTable{}, Log: quiet()})
	for i := range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		start := time.Now()
		err := p.Pause(ctx, "sb")
		took := time.Since(start)
		cancel()
		if err == nil {
			continue // the bucket's depth
		}
		var pe *lifecycle.ProviderError
		if !errors.As(err, &pe) || !pe.Refused || !errors.Is(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want a transient, refused provider error", err)
		}
		if took > time.Second {
			t.Errorf("the refused call took %v, want about its 50 ms budget", took)
		}
		if n := len(st.calls()); n != i {
			t.Errorf("the provider was asked %d times for %d calls let through", n, i)
		}
		return
	}
	t.Error("20 calls in a row were let through a 1/s bucket")
}

// TestA429CutsTheFleetsRateAndTheCallIsAskedAgain: a provider's 429 with
// Retry-After 2 s to one process's call: the call is asked again after 2 s
// (and succeeds), and the bucket every process leases from is cut to half
// its rate.
func TestA429CutsTheFleetsRateAndTheCallIsAskedAgain(t *testing.T) {
	clock := newSimClock()
	tb := &governor.MemTable{}
	var once sync.Once
	st := &stub{}
	st.answer = func(ctx context.Context) error {
		var err error
		once.Do(func() {
			lifecycle.CallGateOf(ctx).Answered(429, 2*time.Second)
			err = &lifecycle.ProviderError{Kind: lifecycle.ErrProviderTransient, Op: "create", Refused: true, RetryAfter: 2 * time.Second}
		})
		return err
	}
	cfg := governor.Config{Limit: calllimit.Limit{PerSecond: 100}, Table: tb, Clock: clock, Sleep: clock.sleep, Log: quiet()}
	p := governor.Wrap(st, cfg)
	start := clock.Now()
	if _, err := p.Create(t.Context(), lifecycle.CreateRequest{}); err != nil {
		t.Fatalf("create after a 429: %v", err)
	}
	if n := len(st.calls()); n != 2 {
		t.Errorf("the provider was asked %d times, want twice (the 429, then again)", n)
	}
	if waited := clock.Now().Sub(start); waited < 2*time.Second {
		t.Errorf("asked again after %v, want the Retry-After's 2 s", waited)
	}
	tk := governor.Take{Key: "stub#0", Now: clock.Now(), Delta: 0, Max: clock.Now().Add(time.Hour)}
	s, _, _ := tb.Take(t.Context(), tk)
	if f := s.Factor(start); f != 0.5 {
		t.Errorf("the fleet's rate after the 429 is %v of the limit, want 0.5", f)
	}
}

// TestAnAdaptersRetriesTakeTokens: a call whose adapter makes two more
// attempts takes three tokens of the fleet's bucket.
func TestAnAdaptersRetriesTakeTokens(t *testing.T) {
	clock := newSimClock()
	st := &stub{attempts: 2}
	p := governor.Wrap(st, governor.Config{Limit: calllimit.Limit{PerSecond: 10, Burst: 10}, Table: &governor.MemTable{},
		Clock: clock, Sleep: clock.sleep, Log: quiet()})
	start := clock.Now()
	for range 10 {
		if err := p.Pause(t.Context(), "sb"); err != nil {
			t.Fatal(err)
		}
	}
	// 30 tokens at 10 a second, the first few from the bucket's depth.
	if took := clock.Now().Sub(start); took < 2*time.Second {
		t.Errorf("10 calls of 3 attempts took %v of the bucket, want over 2 s (30 tokens at 10/s)", took)
	}
}

// switchTable is a MemTable that fails while down.
type switchTable struct {
	governor.MemTable
	down  atomic.Bool
	takes atomic.Int32
}

func (s *switchTable) Take(ctx context.Context, t governor.Take) (governor.State, bool, error) {
	s.takes.Add(1)
	if s.down.Load() {
		return governor.State{}, false, errors.New("table down")
	}
	return s.MemTable.Take(ctx, t)
}

// TestInFallbackAProcessTakesItsShareFromEmpty: with the table down, 20
// pauses of a process whose share is a tenth of a 100/s limit take 2 s
// (10 a second, the first after one token's time: the per-process bucket
// starts empty, as the fleet spent the provider's burst), and the table is
// asked once.
func TestInFallbackAProcessTakesItsShareFromEmpty(t *testing.T) {
	clock := newSimClock()
	tb := &switchTable{}
	tb.down.Store(true)
	p := governor.Wrap(&stub{}, governor.Config{Limit: calllimit.Limit{PerSecond: 100, Burst: 100}, Table: tb, Fallback: 0.1,
		RetryTable: time.Hour, Clock: clock, Sleep: clock.sleep, Log: quiet()})
	start := clock.Now()
	for i := range 20 {
		if err := p.Pause(t.Context(), "sb"); err != nil {
			t.Fatalf("pause %d: %v", i, err)
		}
	}
	if took := clock.Now().Sub(start); took < 1900*time.Millisecond || took > 2100*time.Millisecond {
		t.Errorf("20 pauses in fallback took %v, want 2 s (10 a second from an empty bucket)", took)
	}
	if n := tb.takes.Load(); n != 1 {
		t.Errorf("the table was asked %d times, want once before RetryTable", n)
	}
}

// TestACallWaitingInFallbackTakesTheTablesTokenWhenItIsBack: a call
// waiting for the per-process bucket's next token (a second away) when the
// table answers again is let through with a token leased from the table,
// before that second: a process's calls never come from the two budgets
// at once (its fallback's queue drained at its share while the fleet
// leased again at the whole rate: 429s for every class after an outage).
func TestACallWaitingInFallbackTakesTheTablesTokenWhenItIsBack(t *testing.T) {
	clock := newFrozenClock()
	tb := &switchTable{}
	tb.down.Store(true)
	m := &fallbacks{}
	p := governor.Wrap(&stub{}, governor.Config{Limit: calllimit.Limit{PerSecond: 100, Burst: 100}, Table: tb, Fallback: 0.01,
		RetryTable: 100 * time.Millisecond, Metrics: m, Clock: clock, Sleep: clock.sleep, Log: quiet()})
	done := make(chan error, 1)
	go func() { done <- p.Pause(t.Context(), "sb") }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		m.mu.Lock()
		on := len(m.ons) > 0
		m.mu.Unlock()
		if on {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never in fallback")
		}
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the pause went through (%v) at the fallback's start, want it to wait for the empty bucket's first token", err)
	default:
	}
	tb.down.Store(false)
	clock.Advance(200 * time.Millisecond) // past RetryTable: the next call probes the table
	go func() { done <- p.Pause(t.Context(), "sb") }()
	for i := range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("pause %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 2 pauses let through with the table back, at %v into the fallback's 1 s token", i, 200*time.Millisecond)
		}
	}
}

// archiveStub is a stub whose workspace streams are provider calls too
// (lifecycle.WorkspaceArchiver).
type archiveStub struct{ *stub }

func (s archiveStub) ExportTar(ctx context.Context, _, _ string, _ []string, _ io.Writer) (int64, error) {
	return 0, s.call(ctx)
}
func (s archiveStub) ImportTar(ctx context.Context, _, _ string, _ io.Reader) error {
	return s.call(ctx)
}

// TestAStreamIsNotAskedAgainAfterA429: a workspace import refused with a
// 429 is not asked again by the governor (its reader is spent): the
// refusal goes back to the caller, whose job retries, and the fleet's rate
// is cut all the same.
func TestAStreamIsNotAskedAgainAfterA429(t *testing.T) {
	clock := newSimClock()
	st := &stub{}
	st.answer = func(ctx context.Context) error {
		lifecycle.CallGateOf(ctx).Answered(429, 2*time.Second)
		return &lifecycle.ProviderError{Kind: lifecycle.ErrProviderTransient, Op: "import_tar", Refused: true, RetryAfter: 2 * time.Second}
	}
	p := governor.Wrap(archiveStub{st}, governor.Config{Limit: calllimit.Limit{PerSecond: 100}, Table: &governor.MemTable{},
		Clock: clock, Sleep: clock.sleep, Log: quiet()})
	wa, ok := lifecycle.As[lifecycle.WorkspaceArchiver](p)
	if !ok {
		t.Fatal("the governed provider hides its WorkspaceArchiver")
	}
	if err := wa.ImportTar(t.Context(), "sb", "/w", strings.NewReader("tar")); !lifecycle.Refused(err) {
		t.Fatalf("import after a 429 = %v, want the provider's refusal", err)
	}
	if n := len(st.calls()); n != 1 {
		t.Errorf("the provider was asked %d times, want once", n)
	}
}
