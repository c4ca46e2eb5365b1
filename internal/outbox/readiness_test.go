package outbox_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
)

func TestReadinessChangeIsAnEvent(t *testing.T) {
	image := func(version, readiness, updated string) outbox.Image {
		img := outbox.Image{"pk": "SESSION#ses_r", "sk": "SESSION", "id": "ses_r", "account_id": "acc_1", "state": "running",
			"version": version, "reason": "request", "state_changed_at": "2026-03-01T12:00:00.000000000Z", "updated_at": updated}
		if readiness != "" {
			img["readiness"] = readiness
		}
		return img
	}
	starting := image("2", "starting", "2026-03-01T12:00:00.000000000Z")
	for name, c := range map[string]struct {
		readiness  string
		detailType string
	}{"Ready": {"ready", "Session Ready"}, "Failed": {"failed", "Session Not Ready"}} {
		t.Run(name, func(t *testing.T) {
			ev, ok, err := outbox.Change{Op: outbox.OpModify, Old: starting, New: image("3", c.readiness, "2026-03-01T12:00:04.000000000Z")}.Event()
			if err != nil || !ok {
				t.Fatalf("Event() = ok %v, err %v; want a readiness event", ok, err)
			}
			if ev.DetailType() != c.detailType || ev.EventID != "ses_r:3" || !ev.IsReadiness() {
				t.Errorf("event %+v: detail-type %q, want %q with event_id ses_r:3", ev, ev.DetailType(), c.detailType)
			}
			if want := time.Date(2026, 3, 1, 12, 0, 4, 0, time.UTC); !ev.Time.Equal(want) {
				t.Errorf("time %v, want the write's updated_at %v", ev.Time, want)
			}
			if want := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC); !ev.Since.Equal(want) {
				t.Errorf("since %v, want when the session became running %v (the app's wait)", ev.Since, want)
			}
			if d := lifecycle.UsageDeltas(ev); d != nil {
				t.Errorf("usage deltas of a readiness event = %+v, want none", d)
			}
		})
	}
	t.Run("HeartbeatWhileReadyIsNot", func(t *testing.T) {
		ready := image("3", "ready", "2026-03-01T12:00:04.000000000Z")
		if _, ok, err := (outbox.Change{Op: outbox.OpModify, Old: ready, New: image("4", "ready", "2026-03-01T12:01:00.000000000Z")}).Event(); ok || err != nil {
			t.Fatalf("Event() = ok %v, err %v; want ignored", ok, err)
		}
	})
}
