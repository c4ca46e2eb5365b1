package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestErrors(t *testing.T) {
	err := &lifecycle.Error{Code: lifecycle.CodeUnavailable, Type: lifecycle.TypeSandboxExpired, Message: "gone"}
	wrapped := errors.Join(errors.New("context"), err)
	if got, want := lifecycle.ErrorCode(wrapped), lifecycle.CodeUnavailable; got != want {
		t.Fatalf("ErrorCode = %q, want %q", got, want)
	}
	if got, want := lifecycle.ErrorCode(errors.New("bug")), lifecycle.CodeInternal; got != want {
		t.Fatalf("ErrorCode = %q, want %q", got, want)
	}
	if got, want := err.ErrorType(), "sandbox_expired"; got != want {
		t.Fatalf("ErrorType = %q, want %q", got, want)
	}
	pe := lifecycle.Transientf("pause", "sb1", 3*time.Second, "503")
	if !errors.Is(pe, lifecycle.ErrProviderTransient) || errors.Is(pe, lifecycle.ErrSandboxGone) {
		t.Fatal("ProviderError kind not matched by errors.Is")
	}
	if got, want := lifecycle.RetryAfter(errors.Join(pe)), 3*time.Second; got != want {
		t.Fatalf("RetryAfter = %v, want %v", got, want)
	}
}
