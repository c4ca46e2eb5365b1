package lifecycle

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// stubProvider fails every call with err; it optionally reports timeouts
// and checks templates, to see that measure keeps exactly those.
type stubProvider struct {
	err error
}

func (p stubProvider) Name() string { return "stub" }
func (p stubProvider) Create(context.Context, CreateRequest) (Sandbox, error) {
	return Sandbox{}, p.err
}
func (p stubProvider) Get(context.Context, string) (Sandbox, error) { return Sandbox{}, p.err }
func (p stubProvider) List(context.Context, ListRequest) (SandboxPage, error) {
	return SandboxPage{}, p.err
}
func (p stubProvider) Pause(context.Context, string) error { return p.err }
func (p stubProvider) Resume(context.Context, string, time.Duration) (Sandbox, error) {
	return Sandbox{}, p.err
}
func (p stubProvider) SetTimeout(context.Context, string, time.Duration) error { return p.err }
func (p stubProvider) Probe(context.Context, string) (Probe, error)            { return Probe{}, p.err }
func (p stubProvider) Kill(context.Context, string) error                      { return p.err }

// stubRunner is a provider that runs commands, to see that measure keeps
// CommandRunner.
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

type stubReporter struct{ stubProvider }

func (p stubReporter) SetTimeoutUntil(context.Context, string, time.Duration) (time.Time, error) {
	return time.Unix(42, 0), p.err
}

type stubChecker struct{ stubProvider }

func (stubChecker) CheckTemplate(context.Context, string) error {
	return Errorf(CodeInvalid, "checked")
}

type stubBoth struct{ stubProvider }

func (p stubBoth) SetTimeoutUntil(context.Context, string, time.Duration) (time.Time, error) {
	return time.Unix(42, 0), p.err
}
func (stubBoth) CheckTemplate(context.Context, string) error { return Errorf(CodeInvalid, "checked") }

// countingMetrics counts ProviderError calls by "provider/kind".
type countingMetrics struct {
	noMetrics
	mu     sync.Mutex
	errors map[string]int
}

func (m *countingMetrics) ProviderError(provider, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors[provider+"/"+kind]++
}

func TestMeasureKeepsOptionalInterfaces(t *testing.T) {
	transient := Transientf("op", "sb", 0, "boom")
	for _, tc := range []struct {
		name           string
		p              Provider
		report, checks bool
	}{
		{"Plain", stubProvider{transient}, false, false},
		{"TimeoutReporter", stubReporter{stubProvider{transient}}, true, false},
		{"TemplateChecker", stubChecker{stubProvider{transient}}, false, true},
		{"Both", stubBoth{stubProvider{transient}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &countingMetrics{errors: map[string]int{}}
			p := measure(tc.p, m)
			if got := p.Name(); got != "stub" {
				t.Errorf("name %q, want stub", got)
			}
			ctx := t.Context()
			// Every Provider method goes through and is counted once.
			_, _ = p.Create(ctx, CreateRequest{})
			_, _ = p.Get(ctx, "sb")
			_, _ = p.List(ctx, ListRequest{})
			_ = p.Pause(ctx, "sb")
			_, _ = p.Resume(ctx, "sb", time.Minute)
			_ = p.SetTimeout(ctx, "sb", time.Minute)
			_, _ = p.Probe(ctx, "sb")
			_ = p.Kill(ctx, "sb")
			want := 8
			r, isR := As[TimeoutReporter](p)
			if isR != tc.report {
				t.Fatalf("TimeoutReporter: %v, want %v", isR, tc.report)
			}
			if isR {
				at, err := r.SetTimeoutUntil(ctx, "sb", time.Minute)
				if !at.Equal(time.Unix(42, 0)) || err != transient {
					t.Errorf("SetTimeoutUntil = %s, %v; want the provider's answer", at, err)
				}
				want++
			}
			c, isC := As[TemplateChecker](p)
			if isC != tc.checks {
				t.Fatalf("TemplateChecker: %v, want %v", isC, tc.checks)
			}
			if isC {
				// An unknown template is the caller's mistake: not counted.
				if err := c.CheckTemplate(ctx, "x"); !IsCode(err, CodeInvalid) {
					t.Errorf("CheckTemplate = %v, want the provider's invalid", err)
				}
			}
			if got := m.errors["stub/transient"]; got != want || len(m.errors) != 1 {
				t.Errorf("counted %v, want stub/transient = %d only", m.errors, want)
			}
		})
	}
}

func TestProviderErrorKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{NewProviderError(ErrSandboxGone, "get", "sb", nil), ProviderErrorGone},
		{fmt.Errorf("wrapped: %w", NewProviderError(ErrSandboxConflict, "pause", "sb", nil)), ProviderErrorConflict},
		{Transientf("pause", "sb", time.Second, "429"), ProviderErrorTransient},
		// A transient error caused by a deadline is transient: the kind wins.
		{NewProviderError(ErrProviderTransient, "get", "sb", context.DeadlineExceeded), ProviderErrorTransient},
		{NewProviderError(ErrCheckpointGone, "get_snapshot", "", nil), ProviderErrorGone},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ProviderErrorTimeout},
		{context.Canceled, ""},
		{fmt.Errorf("bad api key"), ProviderErrorOther},
	} {
		if got := ProviderErrorKind(tc.err); got != tc.want {
			t.Errorf("ProviderErrorKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestServiceWrapsProvidersOnlyWithMetrics(t *testing.T) {
	p := stubReporter{stubProvider{}}
	plain := NewService(Config{Provider: p})
	if plain.providerFor("") != Provider(p) {
		t.Errorf("without metrics the provider is wrapped: %T", plain.providerFor(""))
	}
	// Rebuilt from its Config (whose Metrics is now the no-op default): still not wrapped.
	if again := NewService(plain.Config()); again.providerFor("stub") != Provider(p) {
		t.Errorf("rebuilt without metrics, the provider is wrapped: %T", again.providerFor("stub"))
	}
	m := &countingMetrics{errors: map[string]int{}}
	measured := NewService(Config{Provider: p, Metrics: m})
	for _, name := range []string{"", "stub"} {
		got := measured.providerFor(name)
		if got == Provider(p) {
			t.Errorf("providerFor(%q): not wrapped with metrics", name)
		}
		if !Has[TimeoutReporter](got) {
			t.Errorf("providerFor(%q): lost TimeoutReporter", name)
		}
	}
}

// TestMeasureKeepsCommandRunner: counting a provider's failures keeps its
// command runner, which readiness jobs need (a Service built with metrics,
// as every Lambda function's is, must still start apps).
func TestMeasureKeepsCommandRunner(t *testing.T) {
	p := measure(stubRunner{stubProvider{nil}}, &countingMetrics{errors: map[string]int{}})
	if !Has[CommandRunner](p) {
		t.Error("measure dropped CommandRunner")
	}
}
