package lifecycle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestSleep(t *testing.T) {
	t.Run("DoneContext", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// An hour-long wait on a done context must return at once; the
		// test's own deadline would catch a Sleep that waited.
		if got, want := lifecycle.Sleep(ctx, time.Hour), context.Canceled; !errors.Is(got, want) {
			t.Fatalf("Sleep(done ctx, 1h) = %v, want %v", got, want)
		}
	})
	t.Run("ZeroDuration", func(t *testing.T) {
		if err := lifecycle.Sleep(context.Background(), 0); err != nil {
			t.Fatalf("Sleep(ctx, 0) = %v, want nil", err)
		}
	})
	t.Run("NegativeDurationDoneContext", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if got, want := lifecycle.Sleep(ctx, -time.Second), context.Canceled; !errors.Is(got, want) {
			t.Fatalf("Sleep(done ctx, -1s) = %v, want %v", got, want)
		}
	})
}
