package calllimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// stubRunner is a provider that runs commands, to see that Wrap
// keeps CommandRunner and limits its calls.
type stubRunner struct{ stubProvider }

func (stubRunner) KeepsProcesses() bool { return true }
func (stubRunner) StartCommand(context.Context, string, lifecycle.Command) (lifecycle.CommandStatus, error) {
	return lifecycle.CommandStatus{}, nil
}
func (stubRunner) CommandStatus(context.Context, string, string) (lifecycle.CommandStatus, error) {
	return lifecycle.CommandStatus{}, nil
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
	clock := lifecycle.NewManualClock(t0)
	g := &grantLog{}
	const perSecond, burst, callers, each = 10.0, 5, 40, 5
	p := Wrap(stubRunner{stubProvider{nil}}, Config{Limit: Limit{PerSecond: perSecond, Burst: burst},
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
					_, err = p.Create(ctx, lifecycle.CreateRequest{})
				default:
					_, err = p.(lifecycle.CommandRunner).StartCommand(ctx, "sb", lifecycle.Command{})
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
	clock := lifecycle.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	slept := 0
	p := Wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 1.0 / 60, Burst: 1}, Clock: clock,
		Sleep: func(context.Context, time.Duration) error { slept++; return nil }})
	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := p.Pause(ctx, "sb")
	var pe *lifecycle.ProviderError
	if !errors.Is(err, lifecycle.ErrProviderTransient) || !errors.As(err, &pe) {
		t.Fatalf("second call within 5 s = %v, want a transient lifecycle.ProviderError", err)
	}
	if pe.RetryAfter < 59*time.Second || pe.RetryAfter > time.Minute || pe.Op != "pause" || pe.SandboxID != "sb" {
		t.Errorf("error %+v: want op pause on sb, lifecycle.RetryAfter about 1 min", pe)
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
	p := Wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 1.0 / 3600, Burst: 1}})
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
		if !errors.Is(err, lifecycle.ErrProviderTransient) || !errors.Is(err, context.Canceled) {
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
	limit := Config{Limit: Limit{PerSecond: 100}}
	for _, tc := range []struct {
		name                string
		p                   lifecycle.Provider
		report, check, runs bool
	}{
		{"Plain", stubProvider{nil}, false, false, false},
		{"Both", stubBoth{stubProvider{nil}}, true, true, false},
		{"Runner", stubRunner{stubProvider{nil}}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Wrap(tc.p, limit)
			r := lifecycle.Has[lifecycle.TimeoutReporter](p)
			c := lifecycle.Has[lifecycle.TemplateChecker](p)
			cr := lifecycle.Has[lifecycle.CommandRunner](p)
			if r != tc.report || c != tc.check || cr != tc.runs {
				t.Errorf("lifecycle.TimeoutReporter %v, lifecycle.TemplateChecker %v, lifecycle.CommandRunner %v; want %v, %v, %v", r, c, cr, tc.report, tc.check, tc.runs)
			}
			if p.Name() != "stub" {
				t.Errorf("name %q", p.Name())
			}
		})
	}
	plain := stubProvider{nil}
	if p := Wrap(plain, Config{}); p != lifecycle.Provider(plain) {
		t.Errorf("an off limit wrapped the provider: %T", p)
	}
}

// gatedSleep is a limiter Sleep on a standing clock: it records the label
// of each caller's ctx (callLabel) in the order the calls are let through
// (one held token at a time, so that is the order of the grants) and holds
// every sleeper until open is closed.
type gatedSleep struct {
	mu     sync.Mutex
	order  []string
	asleep chan string
	open   chan struct{}
}

type callLabel struct{}

func newGatedSleep() *gatedSleep {
	return &gatedSleep{asleep: make(chan string, 100), open: make(chan struct{})}
}

func (g *gatedSleep) sleep(ctx context.Context, _ time.Duration) error {
	label, _ := ctx.Value(callLabel{}).(string)
	g.mu.Lock()
	g.order = append(g.order, label)
	g.mu.Unlock()
	g.asleep <- label
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitFor polls until cond holds under the limiter's lock (the callers are
// goroutines: there is no event to wait on).
func waitFor(t *testing.T, l *limiter, what string, cond func(q *Queue) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		ok := cond(l.q)
		l.mu.Unlock()
		if ok {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// TestLimitCallsServesAUserBeforeQueuedPausesAndRefreshes: while one pause
// waits out its token, 10 pauses and 10 refreshes queue, then a resume
// arrives: the resume is let through next, then the pauses in arrival
// order, then the refreshes.
func TestLimitCallsServesAUserBeforeQueuedPausesAndRefreshes(t *testing.T) {
	g := newGatedSleep()
	p, l := wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 10, Burst: 1},
		Clock: lifecycle.NewManualClock(queueT0), Sleep: g.sleep})
	labelled := func(label string) context.Context { return context.WithValue(t.Context(), callLabel{}, label) }
	if err := p.Pause(labelled("first"), "sb"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	call := func(f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f() }()
	}
	call(func() error { return p.Pause(labelled("held"), "sb") })
	<-g.asleep
	var want []string
	for i := range 10 {
		pause, refresh := fmt.Sprintf("pause %d", i), fmt.Sprintf("refresh %d", i)
		call(func() error { return p.Pause(labelled(pause), "sb") })
		waitFor(t, l, pause+" waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityBackground) == i+1 })
		call(func() error { return p.SetTimeout(labelled(refresh), "sb", time.Minute) })
		waitFor(t, l, refresh+" waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityRefresh) == i+1 })
		want = append(want, pause)
	}
	for i := range 10 {
		want = append(want, fmt.Sprintf("refresh %d", i))
	}
	call(func() error { _, err := p.Resume(labelled("resume"), "sb", time.Minute); return err })
	waitFor(t, l, "the resume waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityUser) == 1 })
	close(g.open)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call failed: %v", err)
		}
	}
	want = append([]string{"held", "resume"}, want...)
	if !slices.Equal(g.order, want) {
		t.Errorf("calls let through in the order\n%q\nwant\n%q", g.order, want)
	}
}

// TestLimitCallsCancelledWaiterLeavesItsQueue: a pause waiting in its
// queue whose ctx is cancelled returns at once, transient and refused (the
// provider was not asked) with a retry-after, is no longer in the queue, and
// the token it would have had goes to the next call, at the same time.
func TestLimitCallsCancelledWaiterLeavesItsQueue(t *testing.T) {
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	open := make(chan struct{})
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		select {
		case <-open:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p, l := wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 10, Burst: 1},
		Clock: lifecycle.NewManualClock(queueT0), Sleep: sleep})
	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 3)
	go func() { done <- p.Pause(t.Context(), "held") }()
	waitFor(t, l, "a token is held", func(q *Queue) bool { return q.Held() != nil })
	ctx, cancel := context.WithCancel(t.Context())
	cancelled := make(chan error, 1)
	go func() { cancelled <- p.Pause(ctx, "cancelled") }()
	waitFor(t, l, "the pause waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityBackground) == 1 })
	go func() { done <- p.SetTimeout(t.Context(), "next", time.Minute) }()
	waitFor(t, l, "the refresh waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityRefresh) == 1 })

	cancel()
	err := <-cancelled
	var pe *lifecycle.ProviderError
	if !errors.As(err, &pe) || !errors.Is(err, lifecycle.ErrProviderTransient) || !errors.Is(err, context.Canceled) || !pe.Refused || pe.RetryAfter <= 0 {
		t.Fatalf("cancelled waiter: %v (%+v), want transient, refused, wrapping context.Canceled, with a retry-after", err, pe)
	}
	waitFor(t, l, "the cancelled pause has left", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityBackground) == 0 })
	close(open)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v: the refresh takes the token the cancelled pause would have had", waits, want)
	}
}

// TestWithCallPriorityOverridesTheMethodsClass: a Get (background) made
// with WithCallPriority(ctx, PriorityUser) queues as a user call, and a
// SetTimeout made as background queues as background.
func TestWithCallPriorityOverridesTheMethodsClass(t *testing.T) {
	g := newGatedSleep()
	p, l := wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 10, Burst: 1},
		Clock: lifecycle.NewManualClock(queueT0), Sleep: g.sleep})
	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() { _ = p.Pause(t.Context(), "held") })
	<-g.asleep
	run(func() { _, _ = p.Get(lifecycle.WithCallPriority(t.Context(), lifecycle.PriorityUser), "sb") })
	run(func() {
		_ = p.SetTimeout(lifecycle.WithCallPriority(t.Context(), lifecycle.PriorityBackground), "sb", time.Minute)
	})
	waitFor(t, l, "both wait", func(q *Queue) bool {
		return q.Waiting(lifecycle.PriorityUser) == 1 && q.Waiting(lifecycle.PriorityBackground) == 1 && q.Waiting(lifecycle.PriorityRefresh) == 0
	})
	close(g.open)
	wg.Wait()
}

// callRecord is one report a limiter made to its Metrics.
type callRecord struct {
	provider string
	class    lifecycle.CallPriority
	granted  bool
	wait     time.Duration
}

// recordedCalls is a Metrics that keeps every report.
type recordedCalls struct {
	mu  sync.Mutex
	got []callRecord
}

func (r *recordedCalls) CallGranted(provider string, class lifecycle.CallPriority, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, callRecord{provider, class, true, wait})
}

func (r *recordedCalls) CallRefused(provider string, class lifecycle.CallPriority) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, callRecord{provider, class, false, 0})
}

// TestLimitCallsReportsGrantsWaitsAndRefusals: through a 1/s bucket of
// depth 1 on a standing clock, a pause goes at once (wait 0), a refresh
// right behind it waits the 1 s to the next token, a resume whose deadline
// comes before its token and a get whose ctx has ended are refused, and
// after the clock moves a get goes at once: each reported with its
// provider, its class (an override's, not the method's) and its wait.
func TestLimitCallsReportsGrantsWaitsAndRefusals(t *testing.T) {
	clock := lifecycle.NewManualClock(queueT0)
	rec := &recordedCalls{}
	p := Wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 1, Burst: 1}, Clock: clock,
		Sleep: func(context.Context, time.Duration) error { return nil }, Metrics: rec})

	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTimeout(t.Context(), "sb", time.Minute); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Resume(short, "sb", time.Minute); !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("resume without time for its token: %v, want refused", err)
	}
	ended, end := context.WithCancel(t.Context())
	end()
	if _, err := p.Get(lifecycle.WithCallPriority(ended, lifecycle.PriorityUser), "sb"); !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Fatalf("get with an ended ctx: %v, want refused", err)
	}
	clock.Advance(5 * time.Second)
	if _, err := p.Get(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}

	want := []callRecord{
		{"stub", lifecycle.PriorityBackground, true, 0},
		{"stub", lifecycle.PriorityRefresh, true, time.Second},
		{"stub", lifecycle.PriorityUser, false, 0},
		{"stub", lifecycle.PriorityUser, false, 0},
		{"stub", lifecycle.PriorityBackground, true, 0},
	}
	if !slices.Equal(rec.got, want) {
		t.Errorf("reports\n%+v\nwant\n%+v", rec.got, want)
	}
}

// TestLimitCallsReportsTheWaitInTheQueue: a pause that waits in its
// queue behind a held token is reported with its whole wait, from its
// arrival to its own token: two token intervals on a 10/s bucket.
func TestLimitCallsReportsTheWaitInTheQueue(t *testing.T) {
	g := newGatedSleep()
	rec := &recordedCalls{}
	p, l := wrap(stubProvider{nil}, Config{Limit: Limit{PerSecond: 10, Burst: 1},
		Clock: lifecycle.NewManualClock(queueT0), Sleep: g.sleep, Metrics: rec})
	if err := p.Pause(t.Context(), "sb"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- p.Pause(t.Context(), "held") }()
	<-g.asleep
	go func() { done <- p.SetTimeout(t.Context(), "queued", time.Minute) }()
	waitFor(t, l, "the refresh waits", func(q *Queue) bool { return q.Waiting(lifecycle.PriorityRefresh) == 1 })
	close(g.open)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The held pause and the refresh it wakes report concurrently.
	slices.SortFunc(rec.got, func(a, b callRecord) int { return int(a.wait - b.wait) })
	want := []callRecord{
		{"stub", lifecycle.PriorityBackground, true, 0},
		{"stub", lifecycle.PriorityBackground, true, 100 * time.Millisecond},
		{"stub", lifecycle.PriorityRefresh, true, 200 * time.Millisecond},
	}
	if !slices.Equal(rec.got, want) {
		t.Errorf("reports\n%+v\nwant\n%+v", rec.got, want)
	}
}
