package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestApplyProviderEvent(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	ev := func(id string, typ lifecycle.ProviderEventType, at time.Time) lifecycle.ProviderEvent {
		return lifecycle.ProviderEvent{ID: id, Provider: e.fake.Name(), Type: typ, SandboxID: sess.SandboxID, Timestamp: at}
	}
	e.clock.Advance(time.Minute)
	for _, tc := range []struct {
		name  string
		ev    lifecycle.ProviderEvent
		want  lifecycle.WebhookOutcome
		state lifecycle.State
	}{
		{"Paused", ev("e1", lifecycle.ProviderEventPaused, e.clock.Now()), lifecycle.WebhookApplied, lifecycle.StatePaused},
		{"Duplicate", ev("e1", lifecycle.ProviderEventPaused, e.clock.Now()), lifecycle.WebhookDuplicate, lifecycle.StatePaused},
		{"Stale", ev("e0", lifecycle.ProviderEventResumed, svcT0.Add(-time.Hour)), lifecycle.WebhookStale, lifecycle.StatePaused},
		{"Resumed", ev("e2", lifecycle.ProviderEventResumed, e.clock.Now().Add(time.Second)), lifecycle.WebhookApplied, lifecycle.StateRunning},
		{"UnknownSandbox", lifecycle.ProviderEvent{ID: "e3", Provider: e.fake.Name(), Type: lifecycle.ProviderEventPaused,
			SandboxID: "nope", Timestamp: e.clock.Now()}, lifecycle.WebhookUnknownSandbox, lifecycle.StateRunning},
	} {
		got, err := e.svc.ApplyProviderEvent(t.Context(), tc.ev)
		if err != nil || got != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, got, err, tc.want)
		}
		if st := e.mustGet(t, sess.ID).State; st != tc.state {
			t.Errorf("%s: state %s, want %s", tc.name, st, tc.state)
		}
	}
}
