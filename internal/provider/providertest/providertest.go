// Package providertest is the conformance suite every lifecycle.Provider
// adapter runs against its fake: one table of behaviours (Behaviours) that
// the lifecycle service relies on, written once, run by each adapter's own
// test with a Harness that builds a fresh Provider over a fresh fake.
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env { ... }})
//	}
//
// The behaviours come from lifecycle.Provider's contract and from
// docs/providers/*.md: create with metadata and a guard timer; get running,
// paused and gone; pause twice; resume; set and extend the timeout, with the
// expiry the provider really applied; list by the deployment tag across
// pages, metadata values with URL syntax included; kill twice; transient
// errors carrying Retry-After; a probe of a paused sandbox never wakes it;
// then the command, checkpoint and workspace archive rows.
//
// Time never passes by itself: Env.Now and Env.Advance drive the fake's
// clock. Hooks a fake cannot offer are left nil and the suite says so in the
// test log; the table lists which behaviours need which hook.
package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Op names a Provider method, for fault injection.
type Op string

// The Provider methods a fake can be asked to fail.
const (
	OpCreate     Op = "create"
	OpGet        Op = "get"
	OpList       Op = "list"
	OpPause      Op = "pause"
	OpResume     Op = "resume"
	OpSetTimeout Op = "set_timeout"
	OpKill       Op = "kill"
)

// Env is one fresh Provider over one fresh fake, with the hooks the suite
// drives the fake with. Provider, Template and Now are required.
type Env struct {
	// Provider is the adapter under test, aimed at the fake.
	Provider lifecycle.Provider
	// Template is a template the fake can create sandboxes from.
	Template string
	// Now is the fake's (and the adapter's) clock.
	Now func() time.Time
	// Advance moves the fake's clock forward by d and applies every timeout
	// due by then (a running sandbox past its expiry pauses or is killed).
	// nil: the fake's clock cannot be moved; the guard-timer behaviour is
	// not run.
	Advance func(d time.Duration)
	// Fail makes the fake answer every call of op with a transient failure
	// (E2B: 429) carrying a Retry-After of retryAfter (whole seconds) until
	// the returned function is called. nil: the fake cannot inject faults.
	Fail func(op Op, retryAfter time.Duration) (stop func())
	// WakeRequests counts requests that reached sandboxes themselves, any
	// of which would wake a paused one with auto-resume (E2B: its proxy).
	// nil: the suite checks only that the sandbox still reads paused.
	WakeRequests func() int
	// RunLengthCap is the longest a sandbox may run since its last start
	// (E2B: the plan's maximum), after which the provider silently caps a
	// longer timeout; 0 when the provider refuses such a timeout instead.
	RunLengthCap time.Duration
	// Preview reaches the fake's preview URLs (lifecycle.CommandRunner's
	// PortURL); nil: http.DefaultClient.
	Preview *http.Client
	// App, when set, is the command the command rows start: one that
	// really serves HTTP on $PORT for a provider that runs real processes
	// (the local one). nil: "npm run dev" on port 3000, for fakes.
	App func() lifecycle.Command
	// BootDelay is how long a started command takes to listen on the fake
	// (waited out with Advance); 0: at once.
	BootDelay time.Duration
	// Inject switches a sandbox fault on the fake (fakekit.Injector's
	// Inject; the fault rows). nil: the fake takes no sandbox faults.
	Inject func(sandboxID string, f fakekit.SandboxFault, delay time.Duration) error
	// Tolerance is how far a reported expiry may lie from the one the suite
	// computes (a provider with whole-second times: 1 s). Default 1 s.
	Tolerance time.Duration
}

// Harness builds Envs for Run.
type Harness struct {
	// New returns a fresh Env; it registers its own cleanup with tb.
	New func(tb testing.TB) Env
}

// Behaviour is one row of the suite.
type Behaviour struct {
	Name string
	// Needs names the Env hook the row requires ("" for none); the row is
	// logged as not applicable when the hook is nil.
	Needs string
	Run   func(t *testing.T, e Env)
}

// The metadata the suite tags sandboxes with, as the lifecycle service
// does (lifecycle.MetadataSessionID and the deployment tag).
const (
	tagKey     = "sandman_deployment"
	sessionKey = "sandman_session_id"
)

// trickyValue holds every character of URL query syntax: a provider that
// does not encode metadata filters the way its server decodes them
// mis-filters on it.
const trickyValue = "x&y=z+1%20 %2B/?#"

// Run runs every behaviour as a subtest of t, each on a fresh Env.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("providertest: Harness.New is nil")
	}
	for _, b := range Behaviours() {
		t.Run(b.Name, func(t *testing.T) {
			e := h.New(t)
			if e.Provider == nil || e.Template == "" || e.Now == nil {
				t.Fatal("providertest: Env needs Provider, Template and Now")
			}
			if e.Tolerance == 0 {
				e.Tolerance = time.Second
			}
			if missing(e, b.Needs) {
				t.Logf("not applicable: this fake offers no %s hook", b.Needs)
				return
			}
			b.Run(t, e)
		})
	}
}

func missing(e Env, hook string) bool {
	switch hook {
	case "Advance":
		return e.Advance == nil
	case "Fail":
		return e.Fail == nil
	case "RunLengthCap":
		return e.RunLengthCap == 0
	case "CommandRunner":
		_, ok := e.Provider.(lifecycle.CommandRunner)
		return !ok
	case "Files":
		_, ok := e.Provider.(lifecycle.Files)
		return !ok
	case "Snapshotter":
		_, files := hasSnapshotCaps(e)
		return !files
	case "SnapshotRetention":
		caps, files := hasSnapshotCaps(e)
		return !files || caps.Retention == 0 || e.Advance == nil
	case "WorkspaceArchiver":
		return !hasArchiver(e)
	case "Inject":
		return e.Inject == nil
	case "InjectFiles":
		return e.Inject == nil || missing(e, "Files")
	case "InjectSnapshots":
		return e.Inject == nil || missing(e, "Snapshotter")
	case "InjectArchives":
		return e.Inject == nil || !hasArchiver(e) || !missing(e, "Snapshotter")
	case "Forker":
		_, fork := e.Provider.(lifecycle.Forker)
		_, files := e.Provider.(lifecycle.Files)
		return !fork || !files
	}
	return false
}

// Behaviours returns the table, in the order Run runs it.
func Behaviours() []Behaviour {
	return append([]Behaviour{
		{Name: "CreateWithMetadataAndGuardTimer", Run: createWithMetadata},
		{Name: "GetRunningPausedGone", Run: getRunningPausedGone},
		{Name: "PauseTwice", Run: pauseTwice},
		{Name: "ResumePaused", Run: resumePaused},
		{Name: "ResumeRunningOnlyExtends", Run: resumeRunningOnlyExtends},
		{Name: "SetTimeoutExtendsNeverEarlier", Run: setTimeout},
		{Name: "GuardTimerPauses", Needs: "Advance", Run: guardTimerPauses},
		{Name: "RunLengthCapIsRecorded", Needs: "RunLengthCap", Run: runLengthCap},
		{Name: "ListByTagAcrossPages", Run: listByTag},
		{Name: "KillTwice", Run: killTwice},
		{Name: "GoneSandbox", Run: goneSandbox},
		{Name: "CancelledContextIsTransient", Run: cancelledContext},
		{Name: "TransientCarriesRetryAfter", Needs: "Fail", Run: transientRetryAfter},
		{Name: "ProbeRunning", Run: probeRunning},
		{Name: "ProbePausedNeverWakes", Run: probePausedNeverWakes},
	}, slices.Concat(commandRows(), checkpointRows(), archiveRows(), faultRows())...)
}

// ctx returns a context that ends with the test.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// mustCreate creates a running sandbox with the guard timer and autoPause.
func mustCreate(t *testing.T, e Env, timeout time.Duration, md map[string]string) lifecycle.Sandbox {
	t.Helper()
	sb, err := e.Provider.Create(ctx(t), lifecycle.CreateRequest{
		Template: e.Template, Timeout: timeout, AutoPause: true, Metadata: md,
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if sb.ID == "" {
		t.Fatal("Create returned no sandbox id")
	}
	return sb
}

func mustGet(t *testing.T, e Env, id string) lifecycle.Sandbox {
	t.Helper()
	sb, err := e.Provider.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return sb
}

func mustPause(t *testing.T, e Env, id string) {
	t.Helper()
	if err := e.Provider.Pause(ctx(t), id); err != nil {
		t.Fatalf("Pause %s: %v", id, err)
	}
}

// near fails unless got is within e.Tolerance of want.
func near(t *testing.T, e Env, what string, got, want time.Time) {
	t.Helper()
	if d := got.Sub(want); d < -e.Tolerance || d > e.Tolerance {
		t.Errorf("%s = %s, want %s (±%s)", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano), e.Tolerance)
	}
}

func wantKind(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: err = %v, want %v", what, err, kind)
	}
}

// createWithMetadata: the reserved keys the service relies on (the session
// and deployment tags, lifecycle.MetadataSessionID and
// MetadataDeployment) read back exactly, URL syntax included. Other keys
// may be dropped by a provider with few tags (Vercel: 5), never altered:
// the service keeps the caller's metadata in its table.
func createWithMetadata(t *testing.T, e Env) {
	md := map[string]string{sessionKey: "sess_conformance", tagKey: "dep-a" + trickyValue, "note": trickyValue}
	now := e.Now()
	sb := mustCreate(t, e, 10*time.Minute, md)
	if got, want := sb.State, lifecycle.SandboxRunning; got != want {
		t.Errorf("Create: state %q, want %q", got, want)
	}
	near(t, e, "Create: ExpiresAt", sb.ExpiresAt, now.Add(10*time.Minute))
	got := mustGet(t, e, sb.ID)
	if got.State != lifecycle.SandboxRunning {
		t.Errorf("Get after Create: state %q, want running", got.State)
	}
	for k, v := range md {
		g, kept := got.Metadata[k]
		if (kept || k != "note") && g != v {
			t.Errorf("Get after Create: metadata[%q] = %q, want %q", k, g, v)
		}
	}
	near(t, e, "Get after Create: ExpiresAt", got.ExpiresAt, now.Add(10*time.Minute))
	near(t, e, "Create's ExpiresAt against Get's", sb.ExpiresAt, got.ExpiresAt)
}

func getRunningPausedGone(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxRunning || got.ExpiresAt.IsZero() {
		t.Errorf("Get running: state %q, expires %v; want running with an expiry", got.State, got.ExpiresAt)
	}
	mustPause(t, e, sb.ID)
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxPaused {
		t.Errorf("Get paused: state %q, want paused", got.State)
	}
	if err := e.Provider.Kill(ctx(t), sb.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	_, err := e.Provider.Get(ctx(t), sb.ID)
	wantKind(t, "Get killed", err, lifecycle.ErrSandboxGone)
}

func pauseTwice(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustPause(t, e, sb.ID)
	mustPause(t, e, sb.ID)
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxPaused {
		t.Errorf("after two pauses: state %q, want paused", got.State)
	}
}

func resumePaused(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, map[string]string{tagKey: "dep-a"})
	mustPause(t, e, sb.ID)
	now := e.Now()
	res, err := e.Provider.Resume(ctx(t), sb.ID, 7*time.Minute)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.State != lifecycle.SandboxRunning || res.ID != sb.ID {
		t.Errorf("Resume: %s %q, want %s running", res.ID, res.State, sb.ID)
	}
	got := mustGet(t, e, sb.ID)
	if got.State != lifecycle.SandboxRunning {
		t.Errorf("Get after Resume: state %q, want running", got.State)
	}
	if got.Metadata[tagKey] != "dep-a" {
		t.Errorf("Get after Resume: metadata lost: %v", got.Metadata)
	}
	notBefore(t, e, "Resume: ExpiresAt", res.ExpiresAt, now.Add(7*time.Minute))
	near(t, e, "Resume's ExpiresAt against Get's", res.ExpiresAt, got.ExpiresAt)
	// docs/DESIGN.md: a resume gives a fresh preview URL. It may differ from
	// Create's (Daytona renews its preview token on every start, Vercel
	// routes each session anew), but there is one.
	if sb.PreviewURL != "" && res.PreviewURL == "" {
		t.Errorf("Resume: no preview URL, though Create gave %q", sb.PreviewURL)
	}
}

// notBefore fails when got is more than e.Tolerance before want. A
// provider-side guard may fire later than asked (a provider that cannot
// shorten a session's deadline, such as Vercel), never earlier: docs/DESIGN.md
// keeps it past the idle deadline, and the sweep pauses on time anyway.
func notBefore(t *testing.T, e Env, what string, got, want time.Time) {
	t.Helper()
	if got.Before(want.Add(-e.Tolerance)) {
		t.Errorf("%s = %s, want no earlier than %s (±%s)", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano), e.Tolerance)
	}
}

// resumeRunningOnlyExtends: resuming a running sandbox never shortens its
// timeout (E2B's connect), and what Resume reports is what the provider kept.
func resumeRunningOnlyExtends(t *testing.T, e Env) {
	now := e.Now()
	sb := mustCreate(t, e, 20*time.Minute, nil)
	res, err := e.Provider.Resume(ctx(t), sb.ID, 5*time.Minute)
	if err != nil {
		t.Fatalf("Resume running: %v", err)
	}
	got := mustGet(t, e, sb.ID)
	near(t, e, "Get after a shorter Resume: ExpiresAt", got.ExpiresAt, now.Add(20*time.Minute))
	near(t, e, "Resume's ExpiresAt against Get's", res.ExpiresAt, got.ExpiresAt)
	res, err = e.Provider.Resume(ctx(t), sb.ID, 30*time.Minute)
	if err != nil {
		t.Fatalf("Resume running, longer: %v", err)
	}
	near(t, e, "Resume longer: ExpiresAt", res.ExpiresAt, now.Add(30*time.Minute))
}

func setTimeout(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	now := e.Now()
	if err := e.Provider.SetTimeout(ctx(t), sb.ID, 25*time.Minute); err != nil {
		t.Fatalf("SetTimeout 25m: %v", err)
	}
	near(t, e, "after SetTimeout 25m: ExpiresAt", mustGet(t, e, sb.ID).ExpiresAt, now.Add(25*time.Minute))
	if err := e.Provider.SetTimeout(ctx(t), sb.ID, 2*time.Minute); err != nil {
		t.Fatalf("SetTimeout 2m: %v", err)
	}
	// Shorter: the provider shortens its guard (E2B, Daytona) or keeps the
	// later one (Vercel cannot shorten a session); never earlier than asked,
	// never later than before.
	got := mustGet(t, e, sb.ID).ExpiresAt
	notBefore(t, e, "after SetTimeout 2m (shorter): ExpiresAt", got, now.Add(2*time.Minute))
	if got.After(now.Add(25*time.Minute + e.Tolerance)) {
		t.Errorf("after SetTimeout 2m (shorter): ExpiresAt = %s, later than the 25m set before", got)
	}
	if r, ok := e.Provider.(lifecycle.TimeoutReporter); ok {
		until, err := r.SetTimeoutUntil(ctx(t), sb.ID, 2*time.Minute)
		if err != nil {
			t.Fatalf("SetTimeoutUntil 2m: %v", err)
		}
		near(t, e, "SetTimeoutUntil's expiry against Get's", until, mustGet(t, e, sb.ID).ExpiresAt)
	}
}

func guardTimerPauses(t *testing.T, e Env) {
	sb := mustCreate(t, e, 2*time.Minute, nil)
	e.Advance(time.Minute)
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxRunning {
		t.Fatalf("one minute before the guard timer: state %q, want running", got.State)
	}
	e.Advance(time.Minute + time.Second)
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxPaused {
		t.Errorf("past the guard timer of an autoPause sandbox: state %q, want paused", got.State)
	}
}

// runLengthCap: a timeout past the run-length cap is accepted but capped at
// the last start + cap, and Resume reports the capped expiry.
func runLengthCap(t *testing.T, e Env) {
	start := e.Now()
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if err := e.Provider.SetTimeout(ctx(t), sb.ID, e.RunLengthCap+time.Hour); err != nil {
		t.Fatalf("SetTimeout beyond the cap: %v (the provider caps silently)", err)
	}
	near(t, e, "after SetTimeout beyond the cap: ExpiresAt", mustGet(t, e, sb.ID).ExpiresAt, start.Add(e.RunLengthCap))
	res, err := e.Provider.Resume(ctx(t), sb.ID, e.RunLengthCap)
	if err != nil {
		t.Fatalf("Resume beyond the cap: %v", err)
	}
	near(t, e, "Resume beyond the cap: ExpiresAt", res.ExpiresAt, start.Add(e.RunLengthCap))
}

// listByTag lists by the deployment tag, the one filter the service uses
// (lifecycle.Service.ListSandboxes), with a value full of URL syntax.
func listByTag(t *testing.T, e Env) {
	tagA := map[string]string{tagKey: "dep-a" + trickyValue}
	var want []string
	for range 5 {
		want = append(want, mustCreate(t, e, 10*time.Minute, tagA).ID)
	}
	for _, md := range []map[string]string{
		{tagKey: "dep-b" + trickyValue},
		{tagKey: "dep-ax"}, // shares a prefix with the tricky value
		{tagKey: "dep-a"},  // a prefix of it
	} {
		mustCreate(t, e, 10*time.Minute, md)
	}
	mustPause(t, e, want[1])
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("List: more than 10 pages of 2")
		}
		page, err := e.Provider.List(ctx(t), lifecycle.ListRequest{Metadata: tagA, Limit: 2, PageToken: token})
		if err != nil {
			t.Fatalf("List page %d: %v", pages, err)
		}
		if len(page.Sandboxes) > 2 {
			t.Errorf("List page %d: %d sandboxes, limit 2", pages, len(page.Sandboxes))
		}
		for _, sb := range page.Sandboxes {
			got = append(got, sb.ID)
			if sb.ID == want[1] && sb.State != lifecycle.SandboxPaused {
				t.Errorf("List: paused sandbox %s listed as %q", sb.ID, sb.State)
			}
		}
		if token = page.NextToken; token == "" {
			break
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List by %v across pages = %v, want %v", tagA, got, want)
	}
}

func killTwice(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	for i := range 2 {
		if err := e.Provider.Kill(ctx(t), sb.ID); err != nil {
			t.Fatalf("Kill %d: %v", i+1, err)
		}
	}
	_, err := e.Provider.Get(ctx(t), sb.ID)
	wantKind(t, "Get after two kills", err, lifecycle.ErrSandboxGone)
	paused := mustCreate(t, e, 10*time.Minute, nil)
	mustPause(t, e, paused.ID)
	if err := e.Provider.Kill(ctx(t), paused.ID); err != nil {
		t.Fatalf("Kill paused: %v", err)
	}
	_, err = e.Provider.Get(ctx(t), paused.ID)
	wantKind(t, "Get after killing a paused sandbox", err, lifecycle.ErrSandboxGone)
}

func goneSandbox(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if err := e.Provider.Kill(ctx(t), sb.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	wantKind(t, "Pause gone", e.Provider.Pause(ctx(t), sb.ID), lifecycle.ErrSandboxGone)
	_, err := e.Provider.Resume(ctx(t), sb.ID, time.Minute)
	wantKind(t, "Resume gone", err, lifecycle.ErrSandboxGone)
	wantKind(t, "SetTimeout gone", e.Provider.SetTimeout(ctx(t), sb.ID, time.Minute), lifecycle.ErrSandboxGone)
	_, err = e.Provider.Probe(ctx(t), sb.ID)
	wantKind(t, "Probe gone", err, lifecycle.ErrSandboxGone)
}

func cancelledContext(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Provider.Get(c, sb.ID)
	wantKind(t, "Get with a cancelled context", err, lifecycle.ErrProviderTransient)
	if !errors.Is(err, context.Canceled) && err != nil {
		t.Logf("Get with a cancelled context: %v (does not wrap context.Canceled)", err)
	}
}

func transientRetryAfter(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	const wait = 90 * time.Second // beyond any adapter's own retry window
	for _, c := range []struct {
		op   Op
		call func() error
	}{
		{OpGet, func() error { _, err := e.Provider.Get(ctx(t), sb.ID); return err }},
		{OpList, func() error { _, err := e.Provider.List(ctx(t), lifecycle.ListRequest{}); return err }},
		{OpSetTimeout, func() error { return e.Provider.SetTimeout(ctx(t), sb.ID, 10*time.Minute) }},
		{OpResume, func() error { _, err := e.Provider.Resume(ctx(t), sb.ID, 10*time.Minute); return err }},
		{OpPause, func() error { return e.Provider.Pause(ctx(t), sb.ID) }},
		{OpCreate, func() error {
			_, err := e.Provider.Create(ctx(t), lifecycle.CreateRequest{Template: e.Template, Timeout: time.Minute})
			return err
		}},
		{OpKill, func() error { return e.Provider.Kill(ctx(t), sb.ID) }},
	} {
		stop := e.Fail(c.op, wait)
		err := c.call()
		stop()
		wantKind(t, fmt.Sprintf("%s while failing", c.op), err, lifecycle.ErrProviderTransient)
		if got := lifecycle.RetryAfter(err); got != wait {
			t.Errorf("%s while failing: RetryAfter = %s, want %s", c.op, got, wait)
		}
		if err := c.call(); err != nil {
			t.Errorf("%s once the fault is gone: %v", c.op, err)
		}
	}
}

func probeRunning(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	pr, err := e.Provider.Probe(ctx(t), sb.ID)
	if err != nil {
		t.Fatalf("Probe running: %v", err)
	}
	if pr.State != lifecycle.SandboxRunning {
		t.Errorf("Probe running: state %q", pr.State)
	}
	near(t, e, "Probe running: ExpiresAt", pr.ExpiresAt, mustGet(t, e, sb.ID).ExpiresAt)
}

func probePausedNeverWakes(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustPause(t, e, sb.ID)
	before := 0
	if e.WakeRequests != nil {
		before = e.WakeRequests()
	}
	for range 3 {
		pr, err := e.Provider.Probe(ctx(t), sb.ID)
		if err != nil {
			t.Fatalf("Probe paused: %v", err)
		}
		if pr.State != lifecycle.SandboxPaused {
			t.Errorf("Probe paused: state %q", pr.State)
		}
	}
	if e.WakeRequests != nil {
		if got := e.WakeRequests() - before; got != 0 {
			t.Errorf("Probe of a paused sandbox sent %d requests to the sandbox", got)
		}
	}
	if got := mustGet(t, e, sb.ID); got.State != lifecycle.SandboxPaused {
		t.Errorf("after probing: state %q, want still paused", got.State)
	}
}
