package reliability_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// TestE2BRecordedExpiryIsApplied: heartbeats push E2B's timeout out, and
// E2B silently caps it at the last start + the plan's maximum run length
// (docs/providers/e2b.md, "Checked against the real spec"). The session's
// sandbox_expires_at must be the expiry E2B applied, never the one asked
// for (now+timeout would run past the fake's real endAt).
func TestE2BRecordedExpiryIsApplied(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, err := e2b.New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t), Log: quiet()})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: p,
		Clock: srv.Clock, Policy: lifecycle.DefaultPolicy(), Log: quiet()})
	sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 1200})
	if err != nil {
		t.Fatal(err)
	}
	refreshes := 0
	for range 14 { // 56 minutes of activity, past the 1 h cap's horizon
		srv.Clock.Advance(4 * time.Minute)
		before := srv.Requests(e2btest.OpTimeout)
		if _, err := svc.Heartbeat(t.Context(), account, sess.ID); err != nil {
			t.Fatalf("heartbeat at %s: %v", srv.Clock.Now(), err)
		}
		refreshes += srv.Requests(e2btest.OpTimeout) - before
		got, err := svc.Get(t.Context(), account, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		sb, ok := srv.Sandbox(sess.SandboxID)
		if !ok {
			t.Fatalf("sandbox gone at %s", srv.Clock.Now())
		}
		if !got.SandboxExpiresAt.Equal(sb.EndAt) {
			t.Fatalf("at %s: recorded sandbox_expires_at %s, E2B's endAt %s",
				srv.Clock.Now().Format(time.TimeOnly), got.SandboxExpiresAt.Format(time.TimeOnly), sb.EndAt.Format(time.TimeOnly))
		}
	}
	if refreshes == 0 {
		t.Fatal("no heartbeat refreshed E2B's timeout: the test proves nothing")
	}
}
