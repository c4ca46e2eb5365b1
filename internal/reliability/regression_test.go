package reliability_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestLateWebhookIsStale: a provider webhook older than Sandman's own, newer
// transition must not move the session back (found by TestChaos).
func TestLateWebhookIsStale(t *testing.T) {
	w := MustWorld(t, 1)
	sess := w.MustCreate(t, 600)
	w.observer.Observe()                                                      // baseline
	w.clock.Advance(time.Minute)                                              //
	w.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused)                  // E2B auto-pauses at t1
	late := w.observer.Observe()                                              // its "paused" webhook is delayed
	if _, err := w.svc.Reconnect(t.Context(), account, sess.ID); err != nil { // probe: table → paused (reconcile)
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	if _, err := w.svc.Resume(t.Context(), account, sess.ID); err != nil { // t2: running
		t.Fatal(err)
	}
	for _, d := range late { // the t1 webhook arrives now
		w.deliver(t.Context(), d, "r1")
	}
	got := w.MustSession(t, sess.ID)
	sb, _ := w.fake.Sandbox(sess.SandboxID)
	if got.State != lifecycle.StateRunning {
		t.Errorf("table %s (reason %s), provider %s: a late webhook moved the session backwards", got.State, got.Reason, sb.State)
	}
}

// TestCreateWithLostAnswerLeaksNothing: a provider create that took effect
// but answered an error leaves no sandbox behind (found by TestChaos).
func TestCreateWithLostAnswerLeaksNothing(t *testing.T) {
	w := MustWorld(t, 1)
	w.fake.SetFault(fake.OpCreate, fake.Fault{Rate: 1, Applied: true})
	_, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
	t.Logf("create: %v", err)
	w.fake.ClearFaults()
	w.clock.Advance(time.Hour)
	t.Logf("sweep: %+v", w.MustSweep(t))
	if sbs := w.fake.Sandboxes(); len(sbs) != 0 {
		t.Errorf("leaked: %+v", sbs)
	}
}

// TestDeleteDuringCreateLeaksNothing: a delete while the provider creates,
// plus one failed cleanup kill, leaves no sandbox behind once the sweep has
// run (found by TestChaos).
func TestDeleteDuringCreateLeaksNothing(t *testing.T) {
	w := MustWorld(t, 1)
	var id string
	w.rewire(t, func(c *lifecycle.Config) { c.NewID = func() string { id = lifecycle.NewSessionID(); return id } })
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op == fake.OpCreate {
			if _, err := w.svc.Delete(t.Context(), account, id); err != nil { // provisioning → killed
				t.Error(err)
			}
			w.fake.FailNext(fake.OpKill, nil) // the create's cleanup kill fails once
		}
	})
	_, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
	t.Logf("create: %v", err)
	w.fake.SetOnCall(nil)
	w.clock.Advance(time.Hour)
	t.Logf("sweep: %+v", w.MustSweep(t))
	if sbs := w.fake.Sandboxes(); len(sbs) != 0 {
		t.Errorf("session %s, leaked: %+v", w.MustSession(t, id).State, sbs)
	}
}
