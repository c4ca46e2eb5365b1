package governor

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Wrap returns p behind the fleet's governor for it: every provider call
// (the methods calllimit.Wrap limits, with the same classes and
// lifecycle.WithCallPriority overrides) takes a token leased from cfg.Table
// first, in the order of its rank (class, then whether its account is over
// its fair share), waiting for it at most until its ctx ends (then a
// transient, Refused *lifecycle.ProviderError: the provider was not asked).
// Each of the adapter's own retries within the call takes a token too
// (lifecycle.CallGate). A provider's 429 cuts the fleet's rate (AIMD: half,
// then back by 2 % of the limit a second), holds every lease until its
// Retry-After, and the call is asked again after that wait, with a new
// token, when its ctx leaves time (up to 3 times). While the table is slow
// (an update over cfg.TableTimeout) or fails, calls take their tokens from
// a bucket of the process's own at cfg.Fallback × cfg.Limit (a tenth of a
// second deep, empty when the fallback begins), in the same order, and
// the table is tried again after cfg.RetryTable. cfg.Limit.Off() returns p unchanged.
// Build it once per process and provider and give that one value to every
// caller. It keeps p's optional interfaces as calllimit.Wrap does.
func Wrap(p lifecycle.Provider, cfg Config) lifecycle.Provider {
	if cfg.Limit.Off() {
		return p
	}
	base := &governed{p: p, g: newGovernor(p, cfg)}
	var tr lifecycle.TimeoutReporter
	if _, ok := p.(lifecycle.TimeoutReporter); ok {
		tr = governedTimeout{base}
	}
	var cr lifecycle.CommandRunner
	if r, ok := p.(lifecycle.CommandRunner); ok {
		cr = governedCommands{base, r}
	}
	tc, _ := p.(lifecycle.TemplateChecker)
	return lifecycle.WithOptional(base, tr, tc, cr)
}

// governed is Wrap's Provider.
type governed struct {
	p lifecycle.Provider
	g *governor
}

// gate is a call's lifecycle.CallGate: its first attempt has its token,
// each later one takes another; a 429 is reported to the fleet.
type gate struct {
	g      *governor
	class  lifecycle.CallPriority
	op, sb string

	mu        sync.Mutex
	attempts  int
	throttled bool
	after     time.Duration
}

// Attempt implements lifecycle.CallGate.
func (gt *gate) Attempt(ctx context.Context) error {
	gt.mu.Lock()
	gt.attempts++
	first := gt.attempts == 1
	gt.mu.Unlock()
	if first {
		return nil
	}
	return gt.g.admit(ctx, gt.class, gt.op, gt.sb)
}

// Answered implements lifecycle.CallGate.
func (gt *gate) Answered(status int, retryAfter time.Duration) {
	if status != http.StatusTooManyRequests {
		return
	}
	gt.mu.Lock()
	gt.throttled, gt.after = true, max(gt.after, retryAfter)
	gt.mu.Unlock()
	gt.g.throttled(gt.class, retryAfter)
}

// call makes one provider call f of class def (unless ctx sets another)
// through the governor, asking again after a 429 as Wrap says.
func call[T any](w *governed, ctx context.Context, def lifecycle.CallPriority, op, sb string, f func(context.Context, lifecycle.Provider) (T, error)) (T, error) {
	class := def
	if c, ok := lifecycle.CallPriorityOf(ctx); ok {
		class = c
	}
	for n := 0; ; n++ {
		if err := w.g.admit(ctx, class, op, sb); err != nil {
			var zero T
			return zero, err
		}
		gt := &gate{g: w.g, class: class, op: op, sb: sb}
		v, err := f(lifecycle.WithCallGate(ctx, gt), w.p)
		gt.mu.Lock()
		throttled, after := gt.throttled, gt.after
		gt.mu.Unlock()
		var pe *lifecycle.ProviderError
		if err == nil || !throttled || n >= maxRetries429 || !errors.As(err, &pe) || !pe.Refused {
			return v, err
		}
		// The provider turned the call away (429, not processed): ask
		// again after its Retry-After, when the call has time for it.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= after {
			return v, err
		}
		if serr := w.g.sleep(ctx, after); serr != nil {
			return v, err
		}
	}
}

func (w *governed) Name() string { return w.p.Name() }

func (w *governed) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return call(w, ctx, lifecycle.PriorityUser, "create", "", func(ctx context.Context, p lifecycle.Provider) (lifecycle.Sandbox, error) {
		return p.Create(ctx, req)
	})
}

func (w *governed) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	return call(w, ctx, lifecycle.PriorityBackground, "get", sandboxID, func(ctx context.Context, p lifecycle.Provider) (lifecycle.Sandbox, error) {
		return p.Get(ctx, sandboxID)
	})
}

func (w *governed) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return call(w, ctx, lifecycle.PriorityBackground, "list", "", func(ctx context.Context, p lifecycle.Provider) (lifecycle.SandboxPage, error) {
		return p.List(ctx, req)
	})
}

func (w *governed) Pause(ctx context.Context, sandboxID string) error {
	_, err := call(w, ctx, lifecycle.PriorityBackground, "pause", sandboxID, func(ctx context.Context, p lifecycle.Provider) (struct{}, error) {
		return struct{}{}, p.Pause(ctx, sandboxID)
	})
	return err
}

func (w *governed) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	return call(w, ctx, lifecycle.PriorityUser, "resume", sandboxID, func(ctx context.Context, p lifecycle.Provider) (lifecycle.Sandbox, error) {
		return p.Resume(ctx, sandboxID, timeout)
	})
}

func (w *governed) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	_, err := call(w, ctx, lifecycle.PriorityRefresh, "set_timeout", sandboxID, func(ctx context.Context, p lifecycle.Provider) (struct{}, error) {
		return struct{}{}, p.SetTimeout(ctx, sandboxID, timeout)
	})
	return err
}

func (w *governed) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	return call(w, ctx, lifecycle.PriorityUser, "probe", sandboxID, func(ctx context.Context, p lifecycle.Provider) (lifecycle.Probe, error) {
		return p.Probe(ctx, sandboxID)
	})
}

func (w *governed) Kill(ctx context.Context, sandboxID string) error {
	_, err := call(w, ctx, lifecycle.PriorityBackground, "kill", sandboxID, func(ctx context.Context, p lifecycle.Provider) (struct{}, error) {
		return struct{}{}, p.Kill(ctx, sandboxID)
	})
	return err
}

// governedTimeout is the governed TimeoutReporter.
type governedTimeout struct{ w *governed }

func (t governedTimeout) SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error) {
	return call(t.w, ctx, lifecycle.PriorityRefresh, "set_timeout", sandboxID, func(ctx context.Context, p lifecycle.Provider) (time.Time, error) {
		return p.(lifecycle.TimeoutReporter).SetTimeoutUntil(ctx, sandboxID, timeout)
	})
}

// governedCommands is the governed CommandRunner: starting a command,
// reading it and resolving a port URL are provider calls; KeepsProcesses
// and PortClosed are answered locally.
type governedCommands struct {
	w  *governed
	cr lifecycle.CommandRunner
}

func (c governedCommands) KeepsProcesses() bool { return c.cr.KeepsProcesses() }

func (c governedCommands) StartCommand(ctx context.Context, sandboxID string, cmd lifecycle.Command) (lifecycle.CommandStatus, error) {
	return call(c.w, ctx, lifecycle.PriorityUser, "start_command", sandboxID, func(ctx context.Context, p lifecycle.Provider) (lifecycle.CommandStatus, error) {
		return p.(lifecycle.CommandRunner).StartCommand(ctx, sandboxID, cmd)
	})
}

func (c governedCommands) CommandStatus(ctx context.Context, sandboxID, name string) (lifecycle.CommandStatus, error) {
	return call(c.w, ctx, lifecycle.PriorityUser, "command_status", sandboxID, func(ctx context.Context, p lifecycle.Provider) (lifecycle.CommandStatus, error) {
		return p.(lifecycle.CommandRunner).CommandStatus(ctx, sandboxID, name)
	})
}

func (c governedCommands) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	return call(c.w, ctx, lifecycle.PriorityUser, "port_url", sandboxID, func(ctx context.Context, p lifecycle.Provider) (string, error) {
		return p.(lifecycle.CommandRunner).PortURL(ctx, sandboxID, port)
	})
}

func (c governedCommands) PortClosed(status int, header http.Header, body []byte) bool {
	return c.cr.PortClosed(status, header, body)
}
