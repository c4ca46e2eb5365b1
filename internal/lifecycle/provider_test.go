package lifecycle_test

import (
	"errors"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestSettleRefused: a retried call's last 429 stays a refusal only when
// every attempt before it was refused too; the last error is not changed.
func TestSettleRefused(t *testing.T) {
	refused := func() *lifecycle.ProviderError {
		e := lifecycle.Transientf("pause", "sbx", 0, "429")
		e.Refused = true
		return e
	}
	unknown := lifecycle.Transientf("pause", "sbx", 0, "timeout")
	tests := []struct {
		name    string
		earlier []error
		want    bool
	}{
		{"OnlyAttempt", nil, true},
		{"AllRefused", []error{refused(), refused()}, true},
		{"TimeoutBefore", []error{unknown, refused()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := refused()
			got := lifecycle.SettleRefused(last, tt.earlier)
			if lifecycle.Refused(got) != tt.want {
				t.Errorf("Refused = %v, want %v", lifecycle.Refused(got), tt.want)
			}
			if !last.Refused {
				t.Error("SettleRefused changed the last error")
			}
			if !errors.Is(got, lifecycle.ErrProviderTransient) {
				t.Errorf("%v is no longer transient", got)
			}
		})
	}
	if plain := errors.New("x"); lifecycle.SettleRefused(plain, []error{unknown}) != plain {
		t.Error("a plain error was changed")
	}
}
