package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestEventDetailType(t *testing.T) {
	if got, want := (lifecycle.Event{To: lifecycle.StatePaused}).DetailType(), "Session Paused"; got != want {
		t.Fatalf("DetailType = %q, want %q", got, want)
	}
}
