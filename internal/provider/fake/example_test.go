package fake_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// A test makes the next pause fail transiently, then checks that the code
// under test retried.
func ExampleProvider_FailNext() {
	ctx := context.Background()
	p := fake.New(fake.Config{Clock: lifecycle.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))})
	sb, _ := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
	p.FailNext(fake.OpPause, lifecycle.ErrProviderTransient)

	err := p.Pause(ctx, sb.ID)
	fmt.Println(errors.Is(err, lifecycle.ErrProviderTransient), err)
	fmt.Println(p.Pause(ctx, sb.ID))
	got, _ := p.Sandbox(sb.ID)
	fmt.Println(got.State, p.Calls(fake.OpPause), got.PreviewURL)
	// Output:
	// true pause sandbox fake_1: provider is temporarily unavailable: injected fault
	// <nil>
	// paused 2 https://3000-fake_1.fake.test
}
