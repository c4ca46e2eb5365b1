package fakekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

type advancer struct{ at time.Time }

func (a *advancer) Advance(d time.Duration) time.Time { a.at = a.at.Add(d); return a.at }

func TestClockSleep(t *testing.T) {
	if fakekit.ClockSleep(struct{}{}) != nil {
		t.Error("a clock without Advance got a Sleep")
	}
	c := &advancer{}
	sleep := fakekit.ClockSleep(c)
	if err := sleep(context.Background(), time.Minute); err != nil || c.at != (time.Time{}).Add(time.Minute) {
		t.Errorf("sleep = %v, clock at %s", err, c.at)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Minute); !errors.Is(err, context.Canceled) || c.at != (time.Time{}).Add(time.Minute) {
		t.Errorf("sleep of a done ctx = %v, clock at %s", err, c.at)
	}
}
