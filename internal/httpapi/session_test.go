package httpapi_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// A session restoring for reason lost shows its recovery (how it was lost,
// the checkpoint and when it was taken) in the session and the status;
// every other session shows none, and on_lost defaults to restore.
func TestRecoveryIsShownWhileRestoringForLost(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	sess := &lifecycle.Session{ID: "ses_a", State: lifecycle.StateRestoring, Reason: lifecycle.ReasonLost,
		Lost: "partial checkpoint=chk_b age_seconds=3600 created_at=" + at.Format(time.RFC3339Nano)}
	got := httpapi.SessionJSON(sess)
	if got.OnLost != "restore" {
		t.Errorf("on_lost = %q, want restore", got.OnLost)
	}
	r := got.Recovery
	if r == nil || r.Lost != "partial" || r.CheckpointID == nil || *r.CheckpointID != "chk_b" ||
		r.CheckpointCreatedAt == nil || *r.CheckpointCreatedAt != "2026-12-07T10:00:00Z" {
		t.Fatalf("recovery = %+v, want partial from chk_b taken 2026-12-07T10:00:00Z", r)
	}
	if st := httpapi.StatusJSON(sess, lifecycle.Envelope{}); st.Recovery == nil || *st.Recovery.CheckpointID != "chk_b" {
		t.Errorf("status recovery = %+v, want the same", st.Recovery)
	}
	sess.Lost = "gone" // on_lost recreate: no checkpoint
	if r := httpapi.SessionJSON(sess).Recovery; r == nil || r.CheckpointID != nil || r.CheckpointCreatedAt != nil {
		t.Errorf("recreate recovery = %+v, want gone with null checkpoint fields", r)
	}
	sess.State, sess.Reason, sess.OnLost = lifecycle.StateRunning, lifecycle.ReasonRestore, lifecycle.OnLostExpire
	if got := httpapi.SessionJSON(sess); got.Recovery != nil || got.OnLost != "expire" {
		t.Errorf("running session: recovery %+v, on_lost %q; want null, expire", got.Recovery, got.OnLost)
	}
}
