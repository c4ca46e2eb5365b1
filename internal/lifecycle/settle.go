package lifecycle

import (
	"context"
	"time"
)

// settleContext returns a context for the write that records a provider
// call's outcome: detached from ctx's cancellation and bounded by
// SettleTimeout, so a cancelled request does not strand a session in a
// transitional state until its lease runs out.
func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), SettleTimeout)
}

// settle is "call the provider, then settle the outcome", the shape of
// create, pause and resume: call runs on ctx bounded by timeout (by ctx
// alone when timeout is zero), then record gets call's result and error on
// a settle context (settleContext), so the outcome is recorded even when the
// caller has gone away. It returns record's error.
func settle[T any](ctx context.Context, timeout time.Duration,
	call func(context.Context) (T, error),
	record func(wctx context.Context, v T, err error) error) error {
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		pctx, cancel = context.WithTimeout(ctx, timeout)
	}
	v, err := call(pctx)
	cancel()
	wctx, wcancel := settleContext(ctx)
	defer wcancel()
	return record(wctx, v, err)
}
