package reliability_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// TestWebhookRules: an updated event sets no provider timeout on a paused
// session, and an event that arrives while the session is mid-operation is
// not claimed, so its redelivery after the operation settled is applied
// rather than swallowed as a duplicate.
func TestWebhookRules(t *testing.T) {
	t.Run("UpdatedOnPaused", func(t *testing.T) {
		w := MustWorld(t, 1)
		sess := w.MustCreate(t, 600)
		w.MustSnapshot(t, sess.ID)
		at := w.clock.Advance(time.Second)
		d := reliability.Delivery{Event: lifecycle.ProviderEvent{ID: "evt_updated_paused", Provider: e2bhook.Provider,
			Type: lifecycle.ProviderEventUpdated, SandboxID: sess.SandboxID, Timestamp: at, Timeout: time.Hour}}
		status, outcome, err := w.deliver(t.Context(), d, "r-updated")
		if err != nil || status != http.StatusOK {
			t.Fatalf("deliver: status %d outcome %s err %v", status, outcome, err)
		}
		got := w.MustSession(t, sess.ID)
		// A paused sandbox has no provider timeout to record.
		if !got.SandboxExpiresAt.IsZero() {
			t.Errorf("paused session has sandbox_expires_at %s, want none", got.SandboxExpiresAt)
		}
		if got.State != lifecycle.StatePaused || !got.LastProviderEventAt.Equal(at) {
			t.Errorf("stored %s, last provider event %s; want paused, %s", got.State, got.LastProviderEventAt, at)
		}
	})

	t.Run("DeferredRedelivered", func(t *testing.T) {
		w := MustWorld(t, 1)
		sess := w.MustCreate(t, 600)
		var (
			once        sync.Once
			d           reliability.Delivery
			firstStatus int
			firstErr    error
		)
		// Between the provider's pause and the write recording it, traffic wakes
		// the sandbox and its resumed webhook arrives.
		w.store.SetRefuse(func(next *lifecycle.Session, from lifecycle.State) error {
			if from != lifecycle.StatePausing || next.State != lifecycle.StatePaused {
				return nil
			}
			once.Do(func() {
				w.fake.SetState(sess.SandboxID, lifecycle.SandboxRunning)
				d = reliability.Delivery{Event: lifecycle.ProviderEvent{ID: "evt_resumed_mid_pause", Provider: e2bhook.Provider,
					Type: lifecycle.ProviderEventResumed, SandboxID: sess.SandboxID, Timestamp: w.clock.Now().Add(time.Second)}}
				firstStatus, _, firstErr = w.deliver(context.Background(), d, "r-first")
			})
			return nil
		})
		w.MustSnapshot(t, sess.ID)
		w.store.SetRefuse(nil)
		if firstErr != nil || firstStatus != http.StatusServiceUnavailable {
			t.Fatalf("delivery mid-pause: status %d err %v, want 503", firstStatus, firstErr)
		}
		w.clock.Advance(2 * time.Second)
		// The first delivery did not claim the event id, so this one applies and
		// the session follows its running sandbox.
		status, outcome, err := w.deliver(t.Context(), d, "r-again")
		if err != nil || status != http.StatusOK || outcome != string(lifecycle.WebhookApplied) {
			t.Errorf("redelivery: status %d outcome %s err %v, want 200 applied", status, outcome, err)
		}
		if got := w.MustSession(t, sess.ID).State; got != lifecycle.StateRunning {
			t.Errorf("table %s, want running as the provider", got)
		}
		status, outcome, err = w.deliver(t.Context(), d, "r-third")
		if err != nil || status != http.StatusOK || outcome != string(lifecycle.WebhookDuplicate) {
			t.Errorf("third delivery: status %d outcome %s err %v, want 200 duplicate", status, outcome, err)
		}
		w.MustHistory(t, sess.ID)
	})
}

// TestWebhookFutureTimestampClamped: a signed event dated 2099 is clamped to
// the receiver's clock, so the real events after it still apply;
// one within the allowed skew keeps its timestamp.
func TestWebhookFutureTimestampClamped(t *testing.T) {
	w := MustWorld(t, 1)
	sess := w.MustCreate(t, 600)
	apply := func(id string, typ lifecycle.ProviderEventType, at time.Time) lifecycle.WebhookOutcome {
		t.Helper()
		out, err := w.svc.ApplyProviderEvent(t.Context(), lifecycle.ProviderEvent{
			ID: id, Provider: w.fake.Name(), Type: typ, SandboxID: sess.SandboxID, Timestamp: at, Timeout: time.Hour,
		})
		if err != nil {
			t.Fatalf("apply %s: %v", id, err)
		}
		return out
	}
	now := w.clock.Now()
	if got, want := apply("evt_2099", lifecycle.ProviderEventUpdated, time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)), lifecycle.WebhookRecorded; got != want {
		t.Fatalf("future updated event: %s, want %s", got, want)
	}
	if got := w.MustSession(t, sess.ID).LastProviderEventAt; got.After(now.Add(lifecycle.MaxProviderClockSkew)) {
		t.Fatalf("last provider event at %v, beyond the allowed skew of now %v", got, now)
	}
	w.clock.Advance(time.Second)
	if got, want := apply("evt_paused", lifecycle.ProviderEventPaused, w.clock.Now()), lifecycle.WebhookApplied; got != want {
		t.Fatalf("real paused event after the future one: %s, want %s", got, want)
	}
	if got, want := w.MustSession(t, sess.ID).State, lifecycle.StatePaused; got != want {
		t.Errorf("state %s, want %s", got, want)
	}
	skewed := w.clock.Now().Add(2 * time.Minute) // within the skew: kept as is
	if got, want := apply("evt_resumed", lifecycle.ProviderEventResumed, skewed), lifecycle.WebhookApplied; got != want {
		t.Fatalf("resumed event within the skew: %s, want %s", got, want)
	}
	if got := w.MustSession(t, sess.ID).LastProviderEventAt; !got.Equal(skewed) {
		t.Errorf("last provider event at %v, want %v (within the skew, not clamped)", got, skewed)
	}
}

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
