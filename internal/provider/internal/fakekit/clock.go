package fakekit

import (
	"context"
	"time"
)

// ClockSleep returns an adapter's Sleep for tests against a fake on a
// manual clock (one with Advance, such as lifecycle.ManualClock): it
// advances the clock by the wait instead of sleeping (ctx's error, once
// ctx is done), so the fake's transitions settle and its timers fire as
// the adapter polls, and no test sleeps. It returns nil for any other
// clock (the adapter then sleeps for real).
func ClockSleep(clock any) func(ctx context.Context, d time.Duration) error {
	mc, ok := clock.(interface{ Advance(time.Duration) time.Time })
	if !ok {
		return nil
	}
	return func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		mc.Advance(d)
		return nil
	}
}
