package lifecycle_test

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// recordedMetrics is a lifecycle.Metrics that keeps what it was told.
type recordedMetrics struct {
	mu      sync.Mutex
	pauses  map[string]int // by reason
	resumes int
	errors  map[string]int // by "provider/kind"
	lags    []time.Duration
}

func newRecordedMetrics() *recordedMetrics {
	return &recordedMetrics{pauses: map[string]int{}, errors: map[string]int{}}
}

func (m *recordedMetrics) Paused(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pauses[reason]++
}

func (m *recordedMetrics) Resumed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resumes++
}

func (m *recordedMetrics) ProviderError(provider, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[provider+"/"+kind]++
}

func (m *recordedMetrics) PauseLag(lag time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lags = append(m.lags, lag)
}

func TestMetricsFollowCommittedTransitions(t *testing.T) {
	m := newRecordedMetrics()
	e := newEnv(t, func(c *lifecycle.Config) { c.Metrics = m })
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})

	// A snapshot is a pause with reason request.
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	// A resume that needs a second attempt: one transient provider error,
	// one resume.
	e.fake.FailNext(fake.OpResume, lifecycle.ErrProviderTransient)
	e.clock.Advance(time.Minute)
	if _, err := e.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	// A snapshot whose pause the provider refuses: rolled back to running,
	// one conflict counted, no pause.
	e.fake.FailNext(fake.OpPause, lifecycle.ErrSandboxConflict)
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err == nil {
		t.Fatal("snapshot over a refused pause succeeded")
	}
	if got := e.mustGet(t, sess.ID).State; got != lifecycle.StateRunning {
		t.Fatalf("after the refused pause: %s, want running", got)
	}
	// The sweep (or a timer) pauses it 17 s after its idle deadline.
	due := e.mustGet(t, sess.ID)
	e.clock.Set(due.PauseDeadline().Add(17 * time.Second))
	if err := e.svc.PauseIfDue(t.Context(), due, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// A session that is not due is not paused, and reports no lag.
	other := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
	if err := e.svc.PauseIfDue(t.Context(), other, e.clock.Now()); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
		t.Fatalf("not due: %v, want conflict", err)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if want := map[string]int{lifecycle.ReasonRequest: 1, lifecycle.ReasonIdle: 1}; !maps.Equal(m.pauses, want) {
		t.Errorf("pauses %v, want %v", m.pauses, want)
	}
	if m.resumes != 1 {
		t.Errorf("resumes %d, want 1", m.resumes)
	}
	want := map[string]int{"fake/" + lifecycle.ProviderErrorTransient: 1, "fake/" + lifecycle.ProviderErrorConflict: 1}
	if !maps.Equal(m.errors, want) {
		t.Errorf("provider errors %v, want %v", m.errors, want)
	}
	if len(m.lags) != 1 || m.lags[0] != 17*time.Second {
		t.Errorf("lags %v, want [17s]", m.lags)
	}
}

func TestMetricsTimerPauseLag(t *testing.T) {
	m := newRecordedMetrics()
	e := newEnv(t, func(c *lifecycle.Config) { c.Metrics = m })
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	e.clock.Set(sess.PauseDeadline().Add(2 * time.Second))
	got, err := e.svc.FireTimer(t.Context(), sess.ID)
	if err != nil || got != lifecycle.TimerPaused {
		t.Fatalf("fire timer: %s, %v; want paused", got, err)
	}
	// A duplicate timer pauses nothing and reports nothing more.
	if got, err := e.svc.FireTimer(t.Context(), sess.ID); err != nil || got != lifecycle.TimerIdle {
		t.Fatalf("duplicate timer: %s, %v; want noop", got, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.lags) != 1 || m.lags[0] != 2*time.Second {
		t.Errorf("lags %v, want [2s]", m.lags)
	}
	if m.pauses[lifecycle.ReasonIdle] != 1 {
		t.Errorf("pauses %v, want idle 1", m.pauses)
	}
}
