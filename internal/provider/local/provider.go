package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

var _ lifecycle.Provider = (*Provider)(nil)

// Operation names, the Op of the *lifecycle.ProviderError values returned.
const (
	opCreate     = "create"
	opGet        = "get"
	opList       = "list"
	opPause      = "pause"
	opResume     = "resume"
	opSetTimeout = "set_timeout"
	opProbe      = "probe"
	opKill       = "kill"
	opTimeout    = "timeout"
	opFiles      = "files"
)

// defaultListLimit is List's page size when the request gives none.
const defaultListLimit = 100

// pollInterval is how often the provider rereads /proc while it waits for a
// process to reach a signalled state, or retries a held lock.
const pollInterval = 2 * time.Millisecond

// Provider is the local process-based lifecycle.Provider. Its state is the
// directory Config.Dir and /proc (see the package comment); two Providers
// over the same Dir, in one process or two, see the same sandboxes. It is
// safe for concurrent use.
type Provider struct {
	cfg   Config
	log   *slog.Logger
	clock lifecycle.Clock
	hooks *notifier // nil without Config.WebhookURL

	mu sync.Mutex
	// exited holds, for each child this Provider started and has not yet
	// reaped, a channel closed once it is reaped. It only speeds up Kill;
	// nothing else depends on it.
	exited map[int]chan struct{}
	// fronts are the open preview fronts (front.go), by public port;
	// closed is set by Close, after which none opens.
	fronts map[int]*front
	closed bool
	// seen is the last record read or written of each sandbox, by id
	// (removed.go): how Tick ends the processes of a sandbox whose folder
	// was removed behind the provider's back.
	seen map[string]record
	// switches are the standing faults Inject switched on (tests only).
	switches fakekit.Switches
}

// New returns a Provider for cfg, creating cfg.Dir if needed, and opens the
// preview fronts (front.go) of the sandboxes already there whose ports no
// other process holds. Off Linux it returns an error: the local provider
// needs /proc and process groups.
func New(cfg Config) (*Provider, error) {
	if !supported {
		return nil, errUnsupported
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, fmt.Errorf("local provider dir: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local provider dir: %w", err)
	}
	p := &Provider{
		cfg:    cfg,
		log:    cfg.Logger.With("provider", ProviderName),
		clock:  cfg.Clock,
		exited: map[int]chan struct{}{},
		fronts: map[int]*front{},
		seen:   map[string]record{},
	}
	if cfg.WebhookURL != "" {
		p.hooks = newNotifier(cfg)
	}
	p.adoptFronts()
	return p, nil
}

// Name returns "local".
func (p *Provider) Name() string { return ProviderName }

// Dir returns the absolute state folder.
func (p *Provider) Dir() string { return p.cfg.Dir }

// FilesDir returns the files directory of sandbox id (a web sandbox serves
// it). Errors: gone when there is no such sandbox directory.
func (p *Provider) FilesDir(sandboxID string) (string, error) {
	if !validID(sandboxID) {
		return "", p.gone(opFiles, sandboxID, errors.New("not a local sandbox id"))
	}
	dir := filepath.Join(p.sandboxDir(sandboxID), filesName)
	if _, err := os.Stat(dir); err != nil {
		return "", p.gone(opFiles, sandboxID, err)
	}
	return dir, nil
}

var _ lifecycle.TemplateChecker = (*Provider)(nil)

// CheckTemplate returns nil for a template of Templates. Errors: a
// lifecycle CodeInvalid *Error naming the templates there are.
func (p *Provider) CheckTemplate(_ context.Context, template string) error {
	if !slices.Contains(Templates, template) {
		return lifecycle.Errorf(lifecycle.CodeInvalid,
			"Unknown template %q: the local provider has %q and %q.", template, TemplateBase, TemplateWeb)
	}
	return nil
}

// Create starts a sandbox from req.Template ("base" or "web") with the
// provider-side timeout req.Timeout (0: Config.DefaultTimeout). A web
// sandbox answers HTTP on its PreviewURL when Create returns. Errors: an
// error wrapping a lifecycle CodeInvalid *Error for an unknown template or a
// timeout that is negative or above Config.MaxTimeout; transient when ctx
// is done; a plain error when the child cannot be started.
func (p *Provider) Create(ctx context.Context, req lifecycle.CreateRequest) (sb lifecycle.Sandbox, err error) {
	if err := p.CheckTemplate(ctx, req.Template); err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox: %w", err)
	}
	timeout, err := p.timeout(req.Timeout, true)
	if err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return lifecycle.Sandbox{}, p.transient(opCreate, "", err)
	}

	now := p.clock.Now()
	id := newID()
	dir := p.sandboxDir(id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	var cmd *exec.Cmd
	defer func() {
		if err == nil {
			return
		}
		if cmd != nil {
			_ = signalGroup(cmd.Process.Pid, sigKill)
		}
		p.closeFronts(id)
		if rerr := os.RemoveAll(dir); rerr != nil {
			p.log.Warn("remove directory of failed sandbox", "sandbox_id", id, "err", rerr)
		}
		p.forget(id)
	}()
	if err := p.prepareDir(id, req.Template, now); err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}

	rec := record{
		ID: id, Template: req.Template, CreatedAt: now,
		ExecutionID: newUUID(), ExecutionStartedAt: now,
		TimeoutSeconds: int64(timeout / time.Second), ExpiresAt: now.Add(timeout),
		AutoPause: req.AutoPause, Metadata: maps.Clone(req.Metadata),
	}
	var exited chan struct{}
	var inner int
	cmd, exited, inner, err = p.startChild(id, req.Template)
	if err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	var public net.Listener
	if inner != 0 {
		// The preview URL is the front's port; the child listens on inner.
		if public, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: listen for the preview port: %w", id, err)
		}
		rec.Port = public.Addr().(*net.TCPAddr).Port
		rec.Upstreams = map[string]int{strconv.Itoa(rec.Port): inner}
	}
	rec.PID, rec.PGID = cmd.Process.Pid, cmd.Process.Pid // setsid: pgid = sid = pid
	st, err := readProcStat(rec.PID)
	if err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: the child exited at start (see %s): %w",
			id, filepath.Join(dir, logName), err)
	}
	rec.StartTicks = st.StartTicks
	if err := p.writeRecord(rec); err != nil {
		if public != nil {
			_ = public.Close()
		}
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	if public != nil {
		p.openFront(id, public, inner)
	}
	if rec.Template == TemplateWeb {
		if err := p.awaitServing(ctx, rec, exited); err != nil {
			if ctx.Err() != nil {
				return lifecycle.Sandbox{}, p.transient(opCreate, id, err)
			}
			return lifecycle.Sandbox{}, fmt.Errorf("create sandbox %s: %w", id, err)
		}
	}
	p.log.Info("sandbox created", "sandbox_id", id, "template", rec.Template, "pid", rec.PID,
		"port", rec.Port, "timeout_s", rec.TimeoutSeconds, "auto_pause", rec.AutoPause)
	p.notify(lifecycle.ProviderEventCreated, rec, now, "")
	return p.sandbox(rec, lifecycle.SandboxRunning), nil
}

// Get reads a sandbox's record and its process state; it never touches the
// sandbox. StartedAt is when the current run began (create or the last
// resume); ExpiresAt is set while running, PausedAt while paused. Errors: gone when there is no record or the process has exited.
func (p *Provider) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return lifecycle.Sandbox{}, p.transient(opGet, sandboxID, err)
	}
	rec, state, err := p.load(opGet, sandboxID)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	return p.sandbox(rec, state), nil
}

// List returns one page of live sandboxes in id order. PageToken is the last
// id of the previous page. Errors: an error wrapping a CodeInvalid *Error for
// a bad state, limit or page token; transient when ctx is done.
func (p *Provider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	limit := req.Limit
	switch {
	case limit < 0:
		return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: %w", lifecycle.Errorf(lifecycle.CodeInvalid, "Limit must not be negative."))
	case limit == 0:
		limit = defaultListLimit
	}
	if req.PageToken != "" && !validID(req.PageToken) {
		return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: %w", lifecycle.Errorf(lifecycle.CodeInvalid, "The page token is not valid."))
	}
	states := req.States
	if len(states) == 0 {
		states = []lifecycle.SandboxState{lifecycle.SandboxRunning, lifecycle.SandboxPaused}
	}
	for _, s := range states {
		if s != lifecycle.SandboxRunning && s != lifecycle.SandboxPaused {
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: %w", lifecycle.Errorf(lifecycle.CodeInvalid, "Unknown sandbox state %q.", s))
		}
	}
	ids, err := p.listIDs()
	if err != nil {
		return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: %w", err)
	}
	var page lifecycle.SandboxPage
	for _, id := range ids {
		if id <= req.PageToken {
			continue
		}
		if err := ctx.Err(); err != nil {
			return lifecycle.SandboxPage{}, p.transient(opList, "", err)
		}
		rec, state, err := p.load(opList, id)
		if errors.Is(err, lifecycle.ErrSandboxGone) {
			continue
		}
		if err != nil {
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: %w", err)
		}
		if !slices.Contains(states, state) || !hasMetadata(rec.Metadata, req.Metadata) {
			continue
		}
		if len(page.Sandboxes) == limit {
			// One more match exists: the page is full and not the last.
			page.NextToken = page.Sandboxes[limit-1].ID
			break
		}
		page.Sandboxes = append(page.Sandboxes, p.sandbox(rec, state))
	}
	return page, nil
}

// hasMetadata reports whether md carries every pair of want.
func hasMetadata(md, want map[string]string) bool {
	for k, v := range want {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Pause stops the sandbox's process group (SIGSTOP) and waits until its
// process is stopped; pausing a paused sandbox succeeds and sends no event.
// Errors: gone; transient when ctx is done or the process does not stop.
func (p *Provider) Pause(ctx context.Context, sandboxID string) error {
	unlock, err := p.lock(ctx, opPause, sandboxID)
	if err != nil {
		return err
	}
	defer unlock()
	rec, state, err := p.load(opPause, sandboxID)
	if err != nil {
		return err
	}
	if state == lifecycle.SandboxPaused {
		return nil
	}
	return p.pauseLocked(ctx, opPause, rec, p.clock.Now())
}

// pauseLocked pauses a running sandbox; the caller holds its lock.
func (p *Provider) pauseLocked(ctx context.Context, op string, rec record, now time.Time) error {
	if p.cfg.DropProcesses {
		p.signalCommands(rec, sigKill)
		// Wait for the reapers: each writes an exit file into the
		// sandbox's directory, which a later Kill would otherwise race.
		if err := p.awaitCommandsExit(ctx, op, rec); err != nil {
			return err
		}
		rec.Commands = nil
	} else {
		p.signalCommands(rec, sigStop)
	}
	if err := signalGroup(rec.PGID, sigStop); err != nil {
		return p.classify(op, rec.ID, err)
	}
	if err := p.await(ctx, op, rec, procStat.stopped); err != nil {
		return err
	}
	rec.PausedAt = now
	if err := p.writeRecord(rec); err != nil {
		return fmt.Errorf("%s sandbox %s: %w", op, rec.ID, err)
	}
	p.log.Info("sandbox paused", "sandbox_id", rec.ID, "op", op)
	p.notify(lifecycle.ProviderEventPaused, rec, now, "")
	return nil
}

// Resume continues a paused sandbox (SIGCONT to its process group) with the
// provider-side timeout (0: Config.DefaultTimeout), starting a new
// execution. A running sandbox only has its timeout extended, never
// shortened, like E2B's connect. Errors: an error wrapping a CodeInvalid
// *Error for a bad timeout; gone; transient when ctx is done or the process
// does not continue.
func (p *Provider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	timeout, err := p.timeout(timeout, true)
	if err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: %w", sandboxID, err)
	}
	unlock, err := p.lock(ctx, opResume, sandboxID)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	defer unlock()
	rec, state, err := p.load(opResume, sandboxID)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	now := p.clock.Now()
	rec.TimeoutSeconds = int64(timeout / time.Second)
	if state == lifecycle.SandboxRunning {
		rec.ExpiresAt = latest(rec.ExpiresAt, now.Add(timeout))
		rec.PausedAt = time.Time{} // continued from outside, if it was set
		if err := p.writeRecord(rec); err != nil {
			return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: %w", sandboxID, err)
		}
		return p.sandbox(rec, state), nil
	}
	if err := signalGroup(rec.PGID, sigCont); err != nil {
		return lifecycle.Sandbox{}, p.classify(opResume, sandboxID, err)
	}
	if err := p.await(ctx, opResume, rec, func(s procStat) bool { return !s.stopped() }); err != nil {
		return lifecycle.Sandbox{}, err
	}
	p.signalCommands(rec, sigCont)
	rec.PausedAt = time.Time{}
	rec.ExecutionID, rec.ExecutionStartedAt = newUUID(), now
	rec.ExpiresAt = now.Add(timeout)
	if err := p.writeRecord(rec); err != nil {
		return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: %w", sandboxID, err)
	}
	p.log.Info("sandbox resumed", "sandbox_id", sandboxID, "timeout_s", rec.TimeoutSeconds)
	p.notify(lifecycle.ProviderEventResumed, rec, now, "")
	return p.sandbox(rec, lifecycle.SandboxRunning), nil
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// SetTimeout sets the sandbox's provider-side timeout to now+timeout; it may
// shorten it. A paused sandbox is not timed (Resume sets a new timeout), so
// there it is only recorded. Errors: an error wrapping a
// CodeInvalid *Error for a timeout that is not positive or above
// Config.MaxTimeout; gone; transient when ctx is done.
func (p *Provider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	timeout, err := p.timeout(timeout, false)
	if err != nil {
		return fmt.Errorf("set timeout of sandbox %s: %w", sandboxID, err)
	}
	unlock, err := p.lock(ctx, opSetTimeout, sandboxID)
	if err != nil {
		return err
	}
	defer unlock()
	rec, _, err := p.load(opSetTimeout, sandboxID)
	if err != nil {
		return err
	}
	rec.TimeoutSeconds = int64(timeout / time.Second)
	rec.ExpiresAt = p.clock.Now().Add(timeout)
	if err := p.writeRecord(rec); err != nil {
		return fmt.Errorf("set timeout of sandbox %s: %w", sandboxID, err)
	}
	return nil
}

// Probe checks a sandbox: a paused one only through its record and /proc (a
// stopped process is never woken); a running web one must also answer an
// HTTP GET of its preview URL within Config.ProbeTimeout. Errors: gone;
// transient when ctx is done or a running web sandbox does not answer.
func (p *Provider) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	if err := ctx.Err(); err != nil {
		return lifecycle.Probe{}, p.transient(opProbe, sandboxID, err)
	}
	rec, state, err := p.load(opProbe, sandboxID)
	if err != nil {
		return lifecycle.Probe{}, err
	}
	if state == lifecycle.SandboxPaused {
		return lifecycle.Probe{State: state}, nil
	}
	if rec.Template == TemplateWeb {
		ctx, cancel := context.WithTimeout(ctx, p.cfg.ProbeTimeout)
		defer cancel()
		if err := p.get(ctx, previewURL(rec)); err != nil {
			return lifecycle.Probe{}, lifecycle.Transientf(opProbe, sandboxID, time.Second,
				"the sandbox runs but its preview does not answer: %w", err)
		}
	}
	return lifecycle.Probe{State: state, ExpiresAt: rec.ExpiresAt}, nil
}

// get makes one GET of url; any answer below 500 counts.
func (p *Provider) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Kill ends the sandbox's process group (SIGKILL, which also ends a stopped
// process) and its background commands, waits until they have exited, and
// removes its directory. Killing a sandbox that is gone, or an id that was
// never one, succeeds (and ends the commands it recorded that still run,
// and removes whatever directory is left). Errors: transient when ctx is
// done or the process does not exit.
func (p *Provider) Kill(ctx context.Context, sandboxID string) error {
	if !validID(sandboxID) {
		return nil
	}
	unlock, err := p.lock(ctx, opKill, sandboxID)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	rec, _, err := p.load(opKill, sandboxID)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		// The sandbox's process is gone, but a background command may
		// still run (it leads its own session): it goes with the folder.
		if rec, rerr := p.readRecord(sandboxID); rerr == nil {
			p.signalCommands(rec, sigKill)
			if err := p.awaitCommandsExit(ctx, opKill, rec); err != nil {
				return err
			}
		}
		return p.removeDir(sandboxID)
	}
	if err != nil {
		return err
	}
	return p.killLocked(ctx, opKill, rec, p.clock.Now(), e2bhook.KillRequest)
}

// killLocked kills a live sandbox and removes its directory; the caller
// holds its lock.
func (p *Provider) killLocked(ctx context.Context, op string, rec record, now time.Time, reason string) error {
	p.signalCommands(rec, sigKill)
	if err := signalGroup(rec.PGID, sigKill); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s sandbox %s: %w", op, rec.ID, err)
	}
	if err := p.awaitExit(ctx, op, rec); err != nil {
		return err
	}
	// The commands this Provider started are reaped (their exit files
	// written) before their directory goes.
	if err := p.awaitCommandsExit(ctx, op, rec); err != nil {
		return err
	}
	if err := p.removeDir(rec.ID); err != nil {
		return err
	}
	p.log.Info("sandbox killed", "sandbox_id", rec.ID, "reason", reason)
	p.notify(lifecycle.ProviderEventKilled, rec, now, reason)
	return nil
}

// Flush waits until every webhook delivery in flight has finished (delivered
// or given up), or ctx is done.
func (p *Provider) Flush(ctx context.Context) error {
	if p.hooks == nil {
		return nil
	}
	return p.hooks.flush(ctx)
}

// Close closes the preview fronts (the previews refuse connections until
// another Provider over the folder opens them), stops sending webhooks and
// waits for deliveries in flight until ctx is done, then abandons them.
// Sandboxes keep running: they belong to the state folder, not to the
// Provider.
func (p *Provider) Close(ctx context.Context) error {
	p.closeAllFronts()
	if p.hooks == nil {
		return nil
	}
	return p.hooks.close(ctx)
}

// notify sends a webhook of type typ for rec, when webhooks are configured.
func (p *Provider) notify(typ lifecycle.ProviderEventType, rec record, now time.Time, killReason string) {
	if p.hooks != nil {
		p.hooks.send(p.newEvent(typ, rec, now, killReason))
	}
}

// timeout resolves a requested provider-side timeout: 0 is the default when
// zeroIsDefault, and the result must be positive and at most MaxTimeout.
// It is truncated to whole seconds, as E2B takes it.
func (p *Provider) timeout(d time.Duration, zeroIsDefault bool) (time.Duration, error) {
	if d == 0 && zeroIsDefault {
		d = p.cfg.DefaultTimeout
	}
	d = d.Truncate(time.Second)
	if d <= 0 || d > p.cfg.MaxTimeout {
		return 0, lifecycle.Errorf(lifecycle.CodeInvalid,
			"The sandbox timeout must be between 1 second and %d seconds.", int64(p.cfg.MaxTimeout/time.Second))
	}
	return d, nil
}

// gone returns a gone *lifecycle.ProviderError.
func (p *Provider) gone(op, id string, cause error) error {
	return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, id, cause)
}

// transient returns a transient *lifecycle.ProviderError with no retry hint.
func (p *Provider) transient(op, id string, cause error) error {
	return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, id, cause)
}

// classify turns a process error into a provider error: gone when the
// process has exited, otherwise a plain wrapped error.
func (p *Provider) classify(op, id string, err error) error {
	var pe *lifecycle.ProviderError
	if errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return p.gone(op, id, err)
	}
	return fmt.Errorf("%s sandbox %s: %w", op, id, err)
}
