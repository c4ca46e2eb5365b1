package delivery_test

import (
	"slices"
	"testing"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestEventTypeIsTheDottedDetailType(t *testing.T) {
	for _, tc := range []struct {
		ev   lifecycle.Event
		want string
	}{
		{lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePaused}, "session.paused"},
		{lifecycle.Event{To: lifecycle.StateProvisioning}, "session.provisioning"},
		{lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StateRunning, Readiness: lifecycle.ReadinessReady}, "session.ready"},
		{lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StateRunning, Readiness: lifecycle.ReadinessFailed}, "session.not_ready"},
		{lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StateRestoring}, "session.restoring"},
		{lifecycle.NewCheckpointEvent(&lifecycle.Checkpoint{ID: "chk_1", State: lifecycle.CheckpointReady}), "checkpoint.ready"},
		{lifecycle.NewCheckpointEvent(&lifecycle.Checkpoint{ID: "chk_1", State: lifecycle.CheckpointFailed}), "checkpoint.failed"},
	} {
		got := delivery.EventType(tc.ev)
		if got != tc.want {
			t.Errorf("EventType(%q) = %q, want %q", tc.ev.DetailType(), got, tc.want)
		}
		if !slices.Contains(delivery.EventTypes, got) {
			t.Errorf("%q is not one of delivery.EventTypes, so no endpoint could subscribe to it", got)
		}
	}
}
