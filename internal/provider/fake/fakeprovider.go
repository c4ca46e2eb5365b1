// Package fakeprovider is an in-memory lifecycle.Provider for tests and
// benchmarks. It keeps real state (running and paused sandboxes, their
// provider-side timeouts read from an injected lifecycle.Clock, templates,
// metadata, preview URLs), follows E2B's semantics where they matter to
// Sandman (docs/providers/e2b.md), and can inject faults per operation:
// errors at a seeded, reproducible rate, latency, and one-shot failures.
//
// Semantics, after E2B:
//   - Sandbox ids are "fake_<n>" (Config.IDPrefix changes "fake"), n counting from 1; the preview URL of a
//     sandbox is "https://3000-<id>.fake.test".
//   - A running sandbox whose timeout has passed (by the clock) is paused
//     when it was created with AutoPause, and is gone otherwise. The check
//     happens whenever the sandbox is looked at.
//   - Pausing a paused sandbox succeeds; resuming a running one only extends
//     its timeout; killing a sandbox that is gone succeeds.
//   - Get, Pause, Resume, SetTimeout and Probe of an unknown, killed or
//     forgotten sandbox fail with lifecycle.ErrSandboxGone.
//   - A call whose context is done fails with lifecycle.ErrProviderTransient
//     wrapping the context's error, and changes nothing.
//
// Every method is safe for concurrent use.
package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.Provider = (*Provider)(nil)

// Op names a provider operation, for faults and call counters. Its value is
// the Op field of the *lifecycle.ProviderError the fake returns.
type Op string

// The provider operations, one per lifecycle.Provider method except Name.
const (
	OpCreate     Op = "create"
	OpGet        Op = "get"
	OpList       Op = "list"
	OpPause      Op = "pause"
	OpResume     Op = "resume"
	OpSetTimeout Op = "set_timeout"
	OpProbe      Op = "probe"
	OpKill       Op = "kill"
)

// Ops lists every operation.
var Ops = []Op{OpCreate, OpGet, OpList, OpPause, OpResume, OpSetTimeout, OpProbe, OpKill}

// Defaults of the fake.
const (
	// DefaultName is what Name returns unless Config.Name says otherwise.
	DefaultName = "fake"
	// DefaultTimeout is the provider-side timeout of a Create or Resume that
	// names none: 300 s, E2B's default.
	DefaultTimeout = 300 * time.Second
	// DefaultPageSize is List's page size when the request names none: 100,
	// as E2B's list endpoint.
	DefaultPageSize = 100
	// PreviewPort is the port whose preview URL the fake reports.
	PreviewPort = 3000
	// PreviewDomain is the domain of the fake's preview URLs.
	PreviewDomain = "fake.test"
)

// Fault makes calls of one operation fail or slow down. The zero Fault does
// nothing.
type Fault struct {
	// Kind is the error kind of an injected failure: lifecycle.ErrProviderTransient
	// (the default when nil), lifecycle.ErrSandboxGone or lifecycle.ErrSandboxConflict.
	Kind error
	// Rate is the chance, 0 to 1, that a call fails; values outside are
	// clamped. Draws come from the fake's seeded source (see Config.Seed).
	Rate float64
	// Delay is latency added to every call of the operation, before it takes
	// effect. The wait ends early, failing the call, when ctx is done.
	Delay time.Duration
	// RetryAfter is the retry-after hint carried by an injected failure.
	RetryAfter time.Duration
	// Applied makes an injected failure happen after the operation took
	// effect, as when the provider acted but its answer was lost. By default
	// a failed call changes nothing.
	Applied bool
	// Refused marks an injected failure that does not take effect as a
	// refusal before acting (lifecycle.ProviderError.Refused, a 429).
	Refused bool
}

// Config is what a Provider is built from (New). Every zero field means the
// default named on it, filled in once by New.
type Config struct {
	// Name is what Name returns. Default DefaultName.
	Name string
	// IDPrefix makes sandbox ids "<prefix>_<n>". Default "fake"; give two
	// fakes in one test different prefixes so they never hand out the same
	// id.
	IDPrefix string
	// Clock measures timeouts. Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Seed seeds the source of fault draws, so a run that makes the same
	// calls in the same order fails the same calls. Default 1.
	Seed uint64
	// Sleep is the wait used for Fault.Delay; it must return early with
	// ctx's error when ctx is done. A test can pass one that records the
	// delay instead of waiting. Default lifecycle.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// DropProcesses makes a pause lose the sandbox's commands (Vercel
	// Sandbox, Daytona stop/start); by default they survive it (E2B's full
	// pause). See KeepsProcesses.
	DropProcesses bool
	// BootDelay is how long after its start a command listens on its port
	// (by Clock); default 0: at once.
	BootDelay time.Duration
}

// Provider is the in-memory provider. Build it with New.
type Provider struct {
	cfg      Config
	name     string
	idPrefix string
	clock    lifecycle.Clock
	sleep    func(ctx context.Context, d time.Duration) error

	mu        sync.Mutex
	rng       *rand.Rand
	seq       int
	sandboxes map[string]*sandbox
	faults    map[Op]Fault
	failNext  map[Op][]error
	calls     map[Op]int
	callsFor  map[callKey]int
	onCall    func(op Op, sandboxID string)
	// starts and previewHits count command starts and preview requests
	// (commands.go).
	starts, previewHits int
}

type callKey struct {
	op Op
	id string
}

// sandbox is the fake's record of one sandbox.
type sandbox struct {
	seq       int
	id        string
	template  string
	state     lifecycle.SandboxState
	autoPause bool
	timeout   time.Duration // the last timeout asked for, reused by SetState
	startedAt time.Time
	expiresAt time.Time // running only
	pausedAt  time.Time // paused only
	metadata  map[string]string
	commands  map[string]*command // by name (commands.go)
	dropProcs bool                // Config.DropProcesses
}

// New returns an empty Provider built from cfg with the defaults of Config
// filled in.
func New(cfg Config) *Provider {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.IDPrefix == "" {
		cfg.IDPrefix = "fake"
	}
	if cfg.Clock == nil {
		cfg.Clock = lifecycle.SystemClock{}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Sleep == nil {
		cfg.Sleep = lifecycle.Sleep
	}
	p := &Provider{
		cfg:       cfg,
		name:      cfg.Name,
		idPrefix:  cfg.IDPrefix,
		clock:     cfg.Clock,
		sleep:     cfg.Sleep,
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
		sandboxes: make(map[string]*sandbox),
		faults:    make(map[Op]Fault),
		failNext:  make(map[Op][]error),
		calls:     make(map[Op]int),
		callsFor:  make(map[callKey]int),
	}
	return p
}

// Name returns the provider's name.
func (p *Provider) Name() string { return p.name }

// Create starts a running sandbox with req's template, metadata and timeout
// (DefaultTimeout when zero). Errors: only injected ones.
func (p *Provider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	var out lifecycle.Sandbox
	err := p.call(ctx, OpCreate, "", func(now time.Time) error {
		p.seq++
		timeout := orDefault(req.Timeout)
		sb := &sandbox{
			seq:       p.seq,
			id:        p.idPrefix + "_" + strconv.Itoa(p.seq),
			template:  req.Template,
			state:     lifecycle.SandboxRunning,
			autoPause: req.AutoPause,
			timeout:   timeout,
			startedAt: now,
			expiresAt: now.Add(timeout),
			metadata:  maps.Clone(req.Metadata),
			dropProcs: p.cfg.DropProcesses,
		}
		p.sandboxes[sb.id] = sb
		out = sb.view()
		return nil
	})
	return out, err
}

// Get returns a sandbox. Errors: gone, injected ones.
func (p *Provider) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	var out lifecycle.Sandbox
	err := p.call(ctx, OpGet, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpGet, sandboxID, now)
		if err != nil {
			return err
		}
		out = sb.view()
		return nil
	})
	return out, err
}

// List returns one page of sandboxes in creation order. The page token is
// opaque; one the fake did not issue is an unclassified error, as E2B's 400.
// Errors: injected ones.
func (p *Provider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	var out lifecycle.SandboxPage
	err := p.call(ctx, OpList, "", func(now time.Time) error {
		after := 0
		if req.PageToken != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(req.PageToken, "after_"))
			if err != nil || !strings.HasPrefix(req.PageToken, "after_") || n < 0 {
				return fmt.Errorf("list sandboxes: invalid page token %q", req.PageToken)
			}
			after = n
		}
		limit := req.Limit
		if limit <= 0 {
			limit = DefaultPageSize
		}
		states := req.States
		if len(states) == 0 {
			states = []lifecycle.SandboxState{lifecycle.SandboxRunning, lifecycle.SandboxPaused}
		}
		var match []*sandbox
		for _, sb := range p.sandboxes {
			if !p.expire(sb, now) || sb.seq <= after || !slices.Contains(states, sb.state) {
				continue
			}
			if !hasAll(sb.metadata, req.Metadata) {
				continue
			}
			match = append(match, sb)
		}
		slices.SortFunc(match, func(a, b *sandbox) int { return a.seq - b.seq })
		if len(match) > limit {
			match = match[:limit]
			out.NextToken = "after_" + strconv.Itoa(match[limit-1].seq)
		}
		out.Sandboxes = make([]lifecycle.Sandbox, 0, len(match))
		for _, sb := range match {
			out.Sandboxes = append(out.Sandboxes, sb.view())
		}
		return nil
	})
	return out, err
}

// Pause pauses a running sandbox; pausing a paused one succeeds and changes
// nothing. Errors: gone, injected ones.
func (p *Provider) Pause(ctx context.Context, sandboxID string) error {
	return p.call(ctx, OpPause, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpPause, sandboxID, now)
		if err != nil {
			return err
		}
		if sb.state == lifecycle.SandboxRunning {
			sb.pause(now)
		}
		return nil
	})
}

// Resume continues a paused sandbox with its timeout at now+timeout
// (DefaultTimeout when zero); on a running one it only extends the timeout,
// never shortening it, as E2B's connect. Errors: gone, injected ones.
func (p *Provider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	var out lifecycle.Sandbox
	err := p.call(ctx, OpResume, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpResume, sandboxID, now)
		if err != nil {
			return err
		}
		timeout = orDefault(timeout)
		sb.timeout = timeout
		if sb.state == lifecycle.SandboxPaused {
			sb.resume(now)
		} else if exp := now.Add(timeout); exp.After(sb.expiresAt) {
			sb.expiresAt = exp
		}
		out = sb.view()
		return nil
	})
	return out, err
}

// SetTimeout sets a running sandbox's timeout to now+timeout, which may
// shorten it; on a paused one it is remembered for SetState and changes
// nothing visible. Errors: gone, injected ones.
func (p *Provider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	return p.call(ctx, OpSetTimeout, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpSetTimeout, sandboxID, now)
		if err != nil {
			return err
		}
		sb.timeout = timeout
		if sb.state == lifecycle.SandboxRunning {
			sb.expiresAt = now.Add(timeout)
		}
		return nil
	})
}

// Probe reports a sandbox's state and, when running, its timeout. It never
// resumes a paused sandbox. Errors: gone, injected ones.
func (p *Provider) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	var out lifecycle.Probe
	err := p.call(ctx, OpProbe, sandboxID, func(now time.Time) error {
		sb, err := p.lookup(OpProbe, sandboxID, now)
		if err != nil {
			return err
		}
		out = lifecycle.Probe{State: sb.state, ExpiresAt: sb.expiresAt}
		return nil
	})
	return out, err
}

// Kill deletes a sandbox; killing one that is gone succeeds. Errors:
// injected ones.
func (p *Provider) Kill(ctx context.Context, sandboxID string) error {
	return p.call(ctx, OpKill, sandboxID, func(time.Time) error {
		delete(p.sandboxes, sandboxID)
		return nil
	})
}

// SetFault sets op's fault, replacing any earlier one; the zero Fault clears
// it.
func (p *Provider) SetFault(op Op, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f == (Fault{}) {
		delete(p.faults, op)
		return
	}
	f.Rate = min(max(f.Rate, 0), 1)
	p.faults[op] = f
}

// ClearFaults removes every fault and every pending FailNext.
func (p *Provider) ClearFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.faults)
	clear(p.failNext)
}

// FailNext makes the next call of op fail with kind (lifecycle.ErrProviderTransient
// when nil) without taking effect. Calls queue: FailNext twice fails the
// next two calls. A one-shot failure comes before any Fault rate draw.
func (p *Provider) FailNext(op Op, kind error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext[op] = append(p.failNext[op], kind)
}

// SetOnCall sets a hook called at the start of every call of every
// operation with the sandbox id ("" for Create and List), after the call is
// counted and before it takes effect, outside the fake's lock: the hook may
// call the fake (SetState, Forget, even provider methods) or anything else,
// e.g. record a heartbeat between a sweep's query and its pause. nil removes
// it.
func (p *Provider) SetOnCall(f func(op Op, sandboxID string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onCall = f
}

// Calls returns how many times op was called, failed calls included.
func (p *Provider) Calls(op Op) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

// CallsFor returns how many times op was called for sandboxID, failed calls
// included. Create and List count under "".
func (p *Provider) CallsFor(op Op, sandboxID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.callsFor[callKey{op, sandboxID}]
}

// ResetCalls sets every call counter back to zero.
func (p *Provider) ResetCalls() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.calls)
	clear(p.callsFor)
}

// SetState changes a sandbox's state from outside Sandman, as E2B's own
// auto-pause or traffic would: paused stamps PausedAt with the clock's time;
// running restarts the timeout it last had (DefaultTimeout by default). It
// is not a call: not counted, no hook, no fault. It reports whether the
// sandbox exists.
func (p *Provider) SetState(sandboxID string, state lifecycle.SandboxState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	sb, ok := p.sandboxes[sandboxID]
	if !ok || !p.expire(sb, now) {
		return false
	}
	switch {
	case state == lifecycle.SandboxPaused && sb.state != state:
		sb.pause(now)
	case state == lifecycle.SandboxRunning && sb.state != state:
		sb.resume(now)
	}
	return true
}

// Forget drops a sandbox as if the provider lost it: from then on it is
// gone. It is not a call. It reports whether the sandbox existed.
func (p *Provider) Forget(sandboxID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.sandboxes[sandboxID]
	delete(p.sandboxes, sandboxID)
	return ok
}

// Sandbox returns a sandbox as the provider currently sees it (its timeout
// applied by the clock), and false when it is gone. It is not a call.
func (p *Provider) Sandbox(sandboxID string) (lifecycle.Sandbox, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sb, ok := p.sandboxes[sandboxID]
	if !ok || !p.expire(sb, p.clock.Now()) {
		return lifecycle.Sandbox{}, false
	}
	return sb.view(), true
}

// Sandboxes returns every sandbox that exists, in creation order. It is not
// a call.
func (p *Provider) Sandboxes() []lifecycle.Sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	var all []*sandbox
	for _, sb := range p.sandboxes {
		if p.expire(sb, now) {
			all = append(all, sb)
		}
	}
	slices.SortFunc(all, func(a, b *sandbox) int { return a.seq - b.seq })
	out := make([]lifecycle.Sandbox, len(all))
	for i, sb := range all {
		out[i] = sb.view()
	}
	return out
}

// call runs one provider call: count it, call the hook, check ctx, wait the
// fault's delay, draw the fault, then apply do under the lock with the
// clock's time. do's errors are returned as they are.
func (p *Provider) call(ctx context.Context, op Op, id string, do func(now time.Time) error) error {
	p.mu.Lock()
	p.calls[op]++
	p.callsFor[callKey{op, id}]++
	hook := p.onCall
	delay := p.faults[op].Delay
	p.mu.Unlock()

	if hook != nil {
		hook(op, id)
	}
	if err := ctx.Err(); err != nil {
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, string(op), id, err)
	}
	if delay > 0 {
		if err := p.sleep(ctx, delay); err != nil {
			return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, string(op), id, err)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	applied, injected := p.draw(op, id)
	if injected != nil && !applied {
		return injected
	}
	if err := do(p.clock.Now()); err != nil {
		return err
	}
	return injected
}

// draw returns the injected failure of this call of op, if any, and whether
// the operation takes effect anyway. Callers hold p.mu.
func (p *Provider) draw(op Op, id string) (applied bool, err error) {
	if q := p.failNext[op]; len(q) > 0 {
		p.failNext[op] = q[1:]
		return false, injectedError(op, id, q[0], 0, false)
	}
	f, ok := p.faults[op]
	if !ok || f.Rate <= 0 || p.rng.Float64() >= f.Rate {
		return false, nil
	}
	return f.Applied, injectedError(op, id, f.Kind, f.RetryAfter, f.Refused && !f.Applied)
}

func injectedError(op Op, id string, kind error, retryAfter time.Duration, refused bool) error {
	if kind == nil {
		kind = lifecycle.ErrProviderTransient
	}
	e := lifecycle.NewProviderError(kind, string(op), id, errors.New("injected fault"))
	e.RetryAfter, e.Refused = retryAfter, refused && kind == lifecycle.ErrProviderTransient
	return e
}

// lookup returns a sandbox that still exists at now, or a gone error.
// Callers hold p.mu.
func (p *Provider) lookup(op Op, id string, now time.Time) (*sandbox, error) {
	sb, ok := p.sandboxes[id]
	if !ok || !p.expire(sb, now) {
		return nil, lifecycle.NewProviderError(lifecycle.ErrSandboxGone, string(op), id, nil)
	}
	return sb, nil
}

// expire applies a running sandbox's timeout at now: paused with AutoPause,
// deleted without. It reports whether the sandbox still exists. Callers hold
// p.mu.
func (p *Provider) expire(sb *sandbox, now time.Time) bool {
	if sb.state != lifecycle.SandboxRunning || sb.expiresAt.After(now) {
		return true
	}
	if sb.autoPause {
		sb.pause(sb.expiresAt)
		return true
	}
	delete(p.sandboxes, sb.id)
	return false
}

func (sb *sandbox) pause(at time.Time) {
	sb.state, sb.pausedAt, sb.expiresAt = lifecycle.SandboxPaused, at, time.Time{}
	if sb.dropProcs {
		sb.commands = nil
	}
}

func (sb *sandbox) resume(now time.Time) {
	sb.state, sb.pausedAt, sb.expiresAt = lifecycle.SandboxRunning, time.Time{}, now.Add(orDefault(sb.timeout))
}

// view returns the lifecycle view of sb, sharing nothing with it.
func (sb *sandbox) view() lifecycle.Sandbox {
	return lifecycle.Sandbox{
		ID:         sb.id,
		Template:   sb.template,
		State:      sb.state,
		StartedAt:  sb.startedAt,
		ExpiresAt:  sb.expiresAt,
		PausedAt:   sb.pausedAt,
		PreviewURL: PreviewURL(sb.id),
		Metadata:   maps.Clone(sb.metadata),
	}
}

// PreviewURL returns the fake's preview URL of a sandbox,
// "https://3000-<id>.fake.test".
func PreviewURL(sandboxID string) string {
	return fmt.Sprintf("https://%d-%s.%s", PreviewPort, sandboxID, PreviewDomain)
}

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}

func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
