package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
)

func TestRequestBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		left  time.Duration // 0: no deadline
		limit time.Duration
		want  time.Duration
	}{
		{"NoDeadline", 0, 29 * time.Second, 29 * time.Second},
		{"ReserveBeforeLambdaDeadline", 29 * time.Second, 29 * time.Second, 17 * time.Second},
		{"LimitWins", 5 * time.Minute, 29 * time.Second, 29 * time.Second},
		{"HalfWhenShort", 10 * time.Second, 29 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.left > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.left)
				defer cancel()
			}
			got := httpapi.RequestBudget(ctx, tc.limit)
			if d := got - tc.want; d > 0 || d < -time.Second {
				t.Fatalf("RequestBudget = %v, want about %v", got, tc.want)
			}
		})
	}
}
