package lifecycle_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/governor"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
)

// capabilities is every optional provider interface, by name: what has
// reports of p.
func capabilities(p lifecycle.Provider, has func(name string, p lifecycle.Provider, raw bool) bool, raw bool) []string {
	var out []string
	for _, name := range capabilityNames {
		if has(name, p, raw) {
			out = append(out, name)
		}
	}
	return out
}

var capabilityNames = []string{"TimeoutReporter", "TemplateChecker", "CommandRunner", "Snapshotter",
	"PauseSnapshotter", "Forker", "Files", "WorkspaceArchiver"}

// has answers whether p offers the capability name: with a type assertion
// (raw, for an adapter) or with lifecycle.Has (for a wrapped provider).
func has(name string, p lifecycle.Provider, raw bool) bool {
	check := func(typed, through bool) bool {
		if raw {
			return typed
		}
		return through
	}
	switch name {
	case "TimeoutReporter":
		_, ok := p.(lifecycle.TimeoutReporter)
		return check(ok, lifecycle.Has[lifecycle.TimeoutReporter](p))
	case "TemplateChecker":
		_, ok := p.(lifecycle.TemplateChecker)
		return check(ok, lifecycle.Has[lifecycle.TemplateChecker](p))
	case "CommandRunner":
		_, ok := p.(lifecycle.CommandRunner)
		return check(ok, lifecycle.Has[lifecycle.CommandRunner](p))
	case "Snapshotter":
		_, ok := p.(lifecycle.Snapshotter)
		return check(ok, lifecycle.Has[lifecycle.Snapshotter](p))
	case "PauseSnapshotter":
		_, ok := p.(lifecycle.PauseSnapshotter)
		return check(ok, lifecycle.Has[lifecycle.PauseSnapshotter](p))
	case "Forker":
		_, ok := p.(lifecycle.Forker)
		return check(ok, lifecycle.Has[lifecycle.Forker](p))
	case "Files":
		_, ok := p.(lifecycle.Files)
		return check(ok, lifecycle.Has[lifecycle.Files](p))
	case "WorkspaceArchiver":
		_, ok := p.(lifecycle.WorkspaceArchiver)
		return check(ok, lifecycle.Has[lifecycle.WorkspaceArchiver](p))
	}
	panic("unknown capability " + name)
}

// wrapMetrics records what the wrappers report: the limiters' and the
// governor's grants by class, and the Service's provider errors.
type wrapMetrics struct {
	mu      sync.Mutex
	granted map[lifecycle.CallPriority]int
	errors  int
}

func newWrapMetrics() *wrapMetrics {
	return &wrapMetrics{granted: map[lifecycle.CallPriority]int{}}
}

func (m *wrapMetrics) CallGranted(_ string, class lifecycle.CallPriority, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.granted[class]++
}
func (m *wrapMetrics) CallRefused(string, lifecycle.CallPriority) {}
func (m *wrapMetrics) Leased(string, int, time.Duration)          {}
func (m *wrapMetrics) Throttled(string, lifecycle.CallPriority)   {}
func (m *wrapMetrics) Fallback(string, bool)                      {}
func (m *wrapMetrics) Paused(string)                              {}
func (m *wrapMetrics) Resumed()                                   {}
func (m *wrapMetrics) PauseLag(time.Duration)                     {}
func (m *wrapMetrics) ProviderError(string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errors++
}

func (m *wrapMetrics) snapshot() (map[lifecycle.CallPriority]int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.granted), m.errors
}

// wrapper is one way a provider is wrapped in Sandman.
type wrapper struct {
	name string
	wrap func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider
	// limits: the call takes a token (a grant reported); measures: a
	// failed call is counted; attributes: the call is made for the account.
	limits, measures, attributes bool
}

const wrapAccount = "acc_wrapped"

var wrappers = []wrapper{
	{name: "calllimit", limits: true, wrap: func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider {
		return calllimit.Wrap(p, calllimit.Config{Limit: calllimit.Limit{PerSecond: 1000}, Metrics: m})
	}},
	{name: "governor", limits: true, wrap: func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider {
		return governor.Wrap(p, governor.Config{Limit: calllimit.Limit{PerSecond: 1000}, Table: &governor.MemTable{}, Metrics: m})
	}},
	{name: "metrics", measures: true, wrap: func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider {
		return lifecycle.Measure(p, m)
	}},
	{name: "account", attributes: true, wrap: func(p lifecycle.Provider, _ *wrapMetrics) lifecycle.Provider {
		return lifecycle.ForAccount(p, wrapAccount)
	}},
	// As the app and the Service stack them: the fleet governor on the
	// adapter (internal/app), the metrics (NewService), a session's account
	// (Service.provider).
	{name: "stack", limits: true, measures: true, attributes: true, wrap: func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider {
		g := governor.Wrap(p, governor.Config{Limit: calllimit.Limit{PerSecond: 1000}, Table: &governor.MemTable{}, Metrics: m})
		return lifecycle.ForAccount(lifecycle.Measure(g, m), wrapAccount)
	}},
	// The same with the governor off (SANDMAN_GOVERNOR=off): the process's
	// own limiter.
	{name: "stack-calllimit", limits: true, measures: true, attributes: true, wrap: func(p lifecycle.Provider, m *wrapMetrics) lifecycle.Provider {
		l := calllimit.Wrap(p, calllimit.Config{Limit: calllimit.Limit{PerSecond: 1000}, Metrics: m})
		return lifecycle.ForAccount(lifecycle.Measure(l, m), wrapAccount)
	}},
}

// adapters returns every real adapter, built as for a deployment (no call
// is made), and the two doubles: one with every capability, one with none.
func adapters(t *testing.T) map[string]lifecycle.Provider {
	t.Helper()
	out := map[string]lifecycle.Provider{"full": &fullDouble{}, "none": &plainDouble{}}
	e, err := e2b.New(e2b.Config{APIKey: "key", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := daytona.New(daytona.Config{APIKey: "key", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vercel.New(vercel.Config{Token: "token", ProjectID: "prj", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	out["e2b"], out["daytona"], out["vercel"] = e, d, v
	if l, err := local.New(local.Config{Dir: t.TempDir(), Command: []string{"true"}}); err == nil {
		out["local"] = l
		t.Cleanup(func() { _ = l.Close(context.Background()) })
	} else {
		t.Logf("no local provider here: %v", err)
	}
	return out
}

// TestWrappersCarryExactlyTheBaseCapabilities: every wrapper of every
// adapter, alone and stacked as the app stacks them, offers exactly the
// optional interfaces its adapter offers (lifecycle.Has), no fewer (a
// checkpoint would find no snapshots) and no more (a capability check must
// answer false for an adapter without it).
func TestWrappersCarryExactlyTheBaseCapabilities(t *testing.T) {
	for name, base := range adapters(t) {
		want := capabilities(base, has, true)
		switch name {
		case "full":
			if !slices.Equal(want, capabilityNames) {
				t.Fatalf("the full double offers %v, want all of %v", want, capabilityNames)
			}
		case "none":
			if len(want) != 0 {
				t.Fatalf("the plain double offers %v", want)
			}
		}
		if got := capabilities(base, has, false); !slices.Equal(got, want) {
			t.Errorf("%s unwrapped: lifecycle.Has answers %v, the type %v", name, got, want)
		}
		for _, w := range wrappers {
			t.Run(name+"/"+w.name, func(t *testing.T) {
				p := w.wrap(base, newWrapMetrics())
				if p == base {
					t.Fatal("not wrapped")
				}
				if got := capabilities(p, has, false); !slices.Equal(got, want) {
					t.Errorf("wrapped offers %v, the adapter %v", got, want)
				}
				if p.Name() != base.Name() {
					t.Errorf("name %q, want %q", p.Name(), base.Name())
				}
			})
		}
	}
}

// capabilityCall is one call of an optional interface, made with
// lifecycle.As as the Service makes it.
type capabilityCall struct {
	op    lifecycle.Op
	class lifecycle.CallPriority // its class when the ctx sets none
	call  func(ctx context.Context, p lifecycle.Provider) (offered bool, err error)
}

func as[T any](p lifecycle.Provider, f func(T) error) (bool, error) {
	c, ok := lifecycle.As[T](p)
	if !ok {
		return false, nil
	}
	return true, f(c)
}

var capabilityCalls = []capabilityCall{
	{lifecycle.OpSetTimeout, lifecycle.PriorityRefresh, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(r lifecycle.TimeoutReporter) error {
			_, err := r.SetTimeoutUntil(ctx, "sb", time.Minute)
			return err
		})
	}},
	{lifecycle.OpStartCommand, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(r lifecycle.CommandRunner) error {
			_, err := r.StartCommand(ctx, "sb", lifecycle.Command{})
			return err
		})
	}},
	{lifecycle.OpCommandStatus, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(r lifecycle.CommandRunner) error { _, err := r.CommandStatus(ctx, "sb", "app"); return err })
	}},
	{lifecycle.OpPortURL, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(r lifecycle.CommandRunner) error { _, err := r.PortURL(ctx, "sb", 3000); return err })
	}},
	{lifecycle.OpSnapshot, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.Snapshotter) error {
			_, err := s.Snapshot(ctx, "sb", lifecycle.SnapshotRequest{Name: "chk"})
			return err
		})
	}},
	{lifecycle.OpGetSnapshot, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.Snapshotter) error { _, err := s.GetSnapshot(ctx, "ref"); return err })
	}},
	{lifecycle.OpListSnapshots, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.Snapshotter) error { _, err := s.ListSnapshots(ctx, "sb"); return err })
	}},
	{lifecycle.OpDeleteSnapshot, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.Snapshotter) error { return s.DeleteSnapshot(ctx, "ref") })
	}},
	{lifecycle.OpCreateFromSnapshot, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.Snapshotter) error {
			_, err := s.CreateFromSnapshot(ctx, "ref", lifecycle.CreateRequest{})
			return err
		})
	}},
	{lifecycle.OpPauseSnapshot, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(s lifecycle.PauseSnapshotter) error { _, _, err := s.PauseSnapshot(ctx, "sb"); return err })
	}},
	{lifecycle.OpFork, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(f lifecycle.Forker) error { _, err := f.Fork(ctx, "sb", lifecycle.CreateRequest{}); return err })
	}},
	{lifecycle.OpWriteFile, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(f lifecycle.Files) error { return f.WriteFile(ctx, "sb", "/a", []byte("a")) })
	}},
	{lifecycle.OpReadFile, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(f lifecycle.Files) error { _, err := f.ReadFile(ctx, "sb", "/a"); return err })
	}},
	{lifecycle.OpExportTar, lifecycle.PriorityBackground, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(a lifecycle.WorkspaceArchiver) error {
			_, err := a.ExportTar(ctx, "sb", "/w", nil, io.Discard)
			return err
		})
	}},
	{lifecycle.OpImportTar, lifecycle.PriorityUser, func(ctx context.Context, p lifecycle.Provider) (bool, error) {
		return as(p, func(a lifecycle.WorkspaceArchiver) error { return a.ImportTar(ctx, "sb", "/w", bytes.NewReader(nil)) })
	}},
}

// TestACapabilityCallGoesThroughTheWrapper: each call of an optional
// interface, asked for with lifecycle.As, reaches the provider through
// every wrapper's rule: a token of its class (calllimit, governor), its
// failure counted (metrics), made for the session's account; and a
// provider without the capability is never asked.
func TestACapabilityCallGoesThroughTheWrapper(t *testing.T) {
	for _, w := range wrappers {
		for _, c := range capabilityCalls {
			t.Run(w.name+"/"+string(c.op), func(t *testing.T) {
				full, m := &fullDouble{}, newWrapMetrics()
				p := w.wrap(full, m)
				offered, err := c.call(t.Context(), p)
				if !offered || !errors.Is(err, errDouble) {
					t.Fatalf("offered %v, err %v; want the double's answer", offered, err)
				}
				calls := full.made()
				if len(calls) != 1 || calls[0].op != c.op {
					t.Fatalf("the provider saw %v, want one %s", calls, c.op)
				}
				if got, want := calls[0].account, map[bool]string{true: wrapAccount}[w.attributes]; got != want {
					t.Errorf("made for account %q, want %q", got, want)
				}
				granted, errs := m.snapshot()
				if want := map[bool]int{true: 1}[w.limits]; granted[c.class] != want || len(granted) > want {
					t.Errorf("grants %v, want %d of class %s", granted, want, c.class)
				}
				if want := map[bool]int{true: 1}[w.measures]; errs != want {
					t.Errorf("%d provider errors counted, want %d", errs, want)
				}
				if offered, _ := c.call(t.Context(), w.wrap(&plainDouble{}, m)); offered {
					t.Error("a provider without the capability offers it wrapped")
				}
			})
		}
	}
}

// TestACapabilityCallTakesTheClassItsCtxSets: a restore job's calls are
// user calls whatever their own class (lifecycle.WithCallPriority).
func TestACapabilityCallTakesTheClassItsCtxSets(t *testing.T) {
	m := newWrapMetrics()
	p := wrappers[1].wrap(&fullDouble{}, m)
	ctx := lifecycle.WithCallPriority(t.Context(), lifecycle.PriorityUser)
	sn, _ := lifecycle.As[lifecycle.Snapshotter](p)
	_, _ = sn.GetSnapshot(ctx, "ref")
	if granted, _ := m.snapshot(); granted[lifecycle.PriorityUser] != 1 || len(granted) != 1 {
		t.Errorf("grants %v, want one user call", granted)
	}
}

// TestAsSeesThroughWrappersOnly: a capability is offered when every layer
// down to the innermost provider implements it; Unwrap is followed.
func TestAsSeesThroughWrappersOnly(t *testing.T) {
	plain := lifecycle.Wrap(&plainDouble{}, passThrough(&plainDouble{}))
	if lifecycle.Has[lifecycle.Snapshotter](plain) {
		t.Error("a wrapped plain provider offers snapshots")
	}
	if _, ok := plain.(lifecycle.Snapshotter); !ok {
		t.Fatal("the wrapper should implement every interface as a type")
	}
	// A call made around As is an error, never a call.
	if _, err := plain.(lifecycle.Snapshotter).Snapshot(t.Context(), "sb", lifecycle.SnapshotRequest{}); err == nil ||
		!strings.Contains(err.Error(), "does not offer") {
		t.Errorf("snapshot of a provider without snapshots = %v", err)
	}
	inner := lifecycle.Wrap(&fullDouble{}, passThrough(&fullDouble{}))
	full := lifecycle.Wrap(inner, passThrough(inner))
	if sn, ok := lifecycle.As[lifecycle.Snapshotter](full); !ok || sn != full.(lifecycle.Snapshotter) {
		t.Errorf("As = %v, %v; want the outer wrapper", sn, ok)
	}
	if p := lifecycle.Wrap(&plainDouble{}, nil); p != lifecycle.Provider(p.(*plainDouble)) {
		t.Error("a nil Around wrapped the provider")
	}
}

// passThrough is the Around of a wrapper of p with no rule.
func passThrough(p lifecycle.Provider) lifecycle.Around {
	return func(ctx context.Context, _ lifecycle.Call, next func(context.Context, lifecycle.Provider) error) error {
		return next(ctx, p)
	}
}
