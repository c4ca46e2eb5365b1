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
// caller. It carries exactly p's optional interfaces, their calls
// governed too (lifecycle.Wrap), as calllimit.Wrap does.
func Wrap(p lifecycle.Provider, cfg Config) lifecycle.Provider {
	if cfg.Limit.Off() {
		return p
	}
	w := &governed{p: p, g: newGovernor(p, cfg)}
	return lifecycle.Wrap(p, w.around)
}

// governed is Wrap's rule (around) for the provider p.
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

// around makes one provider call (lifecycle.Around) through the
// governor, in its class (lifecycle.ClassOf), asking again after a 429 as
// Wrap says unless the call cannot be made twice (c.Once).
func (w *governed) around(ctx context.Context, c lifecycle.Call, next func(context.Context, lifecycle.Provider) error) error {
	class, op := lifecycle.ClassOf(ctx, c.Op), string(c.Op)
	for n := 0; ; n++ {
		if err := w.g.admit(ctx, class, op, c.SandboxID); err != nil {
			return err
		}
		gt := &gate{g: w.g, class: class, op: op, sb: c.SandboxID}
		err := next(lifecycle.WithCallGate(ctx, gt), w.p)
		gt.mu.Lock()
		throttled, after := gt.throttled, gt.after
		gt.mu.Unlock()
		var pe *lifecycle.ProviderError
		if err == nil || c.Once || !throttled || n >= maxRetries429 || !errors.As(err, &pe) || !pe.Refused {
			return err
		}
		// The provider turned the call away (429, not processed): ask
		// again after its Retry-After, when the call has time for it.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= after {
			return err
		}
		if serr := w.g.sleep(ctx, after); serr != nil {
			return err
		}
	}
}
