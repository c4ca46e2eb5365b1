package outbox_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
)

// TestCheckpointSettledIsAnEvent: a checkpoint item's write that makes it
// ready or failed is a checkpoint event (event_id "<checkpoint>:<version>",
// no usage); any other write of it is none.
func TestCheckpointSettledIsAnEvent(t *testing.T) {
	const id = "chk_01k0000000abcdefghijklmnop"
	image := func(state, version string) outbox.Image {
		return outbox.Image{"pk": "SESSION#ses_c", "sk": "CHECKPOINT#" + id, "id": id, "session_id": "ses_c",
			"account_id": "acc_1", "state": state, "version": version, "kind": "snapshot", "keeps": "filesystem",
			"trigger": "api", "label": "good", "size_bytes": "1024", "updated_at": "2026-03-01T12:00:04.000000000Z",
			"expires_at": "2026-03-31T12:00:04.000000000Z", "source_sandbox_id": "sbx_1"}
	}
	saving := image("saving", "1")
	for state, detail := range map[string]string{"ready": "Checkpoint Ready", "failed": "Checkpoint Failed"} {
		ev, ok, err := outbox.Change{Op: outbox.OpModify, Old: saving, New: image(state, "2")}.Event()
		if err != nil || !ok {
			t.Fatalf("%s: Event() = ok %v, err %v; want a checkpoint event", state, ok, err)
		}
		c := ev.Checkpoint
		if ev.DetailType() != detail || ev.EventID != id+":2" || !ev.IsCheckpoint() || ev.SessionID != "ses_c" || ev.AccountID != "acc_1" ||
			c.ID != id || c.SizeBytes != 1024 || c.Label != "good" || c.Keeps != lifecycle.KeepsFilesystem || c.ExpiresAt == nil {
			t.Errorf("%s: event %+v (checkpoint %+v)", state, ev, c)
		}
		if want := time.Date(2026, 3, 1, 12, 0, 4, 0, time.UTC); !ev.Time.Equal(want) {
			t.Errorf("%s: time %v, want %v", state, ev.Time, want)
		}
		if d := lifecycle.UsageDeltas(ev); d != nil {
			t.Errorf("%s: usage deltas %+v, want none", state, d)
		}
	}
	for name, c := range map[string]outbox.Change{
		"Insert":  {Op: outbox.OpInsert, New: saving},
		"Renewal": {Op: outbox.OpModify, Old: saving, New: image("saving", "2")},
		"Expiry":  {Op: outbox.OpModify, Old: image("ready", "2"), New: image("ready", "3")},
		"Remove":  {Op: outbox.OpRemove, Old: image("ready", "2")},
	} {
		if _, ok, err := c.Event(); ok || err != nil {
			t.Errorf("%s: Event() = ok %v, err %v; want none", name, ok, err)
		}
	}
}
