package reliability_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2bhook"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// Regression tests for the defects a code review confirmed that depend on
// DynamoDB or the webhook handler, one test per finding. Each is built so
// that the code before the fixes fails it; the comment marked "Old code:"
// says what that code did. The findings that are rules of the Service alone
// (1-3 and 5-10) are tested without a database in internal/lifecycle
// (rules_test.go).

// MustSnapshot pauses a session through the API and fails the test if that
// fails.
func (w *world) MustSnapshot(tb testing.TB, id string) {
	tb.Helper()
	if _, err := w.svc.Snapshot(tb.Context(), account, id); err != nil {
		tb.Fatalf("snapshot %s: %v", id, err)
	}
}

// sandboxState returns the provider's state of a sandbox, or "gone".
func (w *world) sandboxState(id string) lifecycle.SandboxState {
	sb, ok := w.fake.Sandbox(id)
	if !ok {
		return "gone"
	}
	return sb.State
}

// MustLossyWorld returns a world whose store sits on a fresh table reached
// through a dynamotest.LostAnswerClient, with SDK retries that do not wait.
func MustLossyWorld(tb testing.TB) (*world, *dynamotest.LostAnswerClient) {
	tb.Helper()
	w := MustWorld(tb, 1)
	table := dynamotest.MustTable(tb)
	client, hc := dynamotest.MustLossyClient(tb)
	w.store = reliability.NewRecordingStore(dynamo.New(dynamo.Config{Client: client, Table: table, Log: quiet()}))
	streams, arn := dynamotest.MustStream(tb, table)
	w.outbox = outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: w.events, Log: quiet()})
	w.rewire(tb, func(c *lifecycle.Config) { c.Store = w.store })
	return w, hc
}

// Finding 4: a PutItem whose answer was lost after it committed was retried
// by the SDK, failed its own condition and was taken for a lost race.
func TestLostWriteAnswerIsOwnSuccess(t *testing.T) {
	t.Run("CreateRunning", func(t *testing.T) {
		w, hc := MustLossyWorld(t)
		hc.Arm(`"state":{"S":"running"}`)
		// Old code: conflict on the provisioning → running write; Create killed the
		// sandbox of a session the table records as running, and published no event.
		sess, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		got := w.MustSession(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
			t.Errorf("provider sandbox %s, want running", st)
		}
		if got, want := len(w.EventsFor(t, sess.ID)), 2; got != want {
			t.Errorf("events = %d, want %d (created, provisioning → running)", got, want)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("IdempotencyClaim", func(t *testing.T) {
		w, hc := MustLossyWorld(t)
		in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-lost-claim"}
		hc.Arm("idempotency#")
		// Old code: the retried claim saw our own claim, found no session under it
		// yet and answered 409 "still in progress".
		sess, replayed, err := w.svc.Create(t.Context(), account, in)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		if replayed || sess.State != lifecycle.StateRunning {
			t.Errorf("create: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
		}
		again, replayed, err := w.svc.Create(t.Context(), account, in)
		if err != nil || !replayed || again.ID != sess.ID {
			t.Errorf("replay: id=%v replayed=%v err=%v, want a replay of %s", again, replayed, err, sess.ID)
		}
		if got, want := w.fake.Calls(fake.OpCreate), 1; got != want {
			t.Errorf("provider creates = %d, want %d", got, want)
		}
		w.MustHistory(t, sess.ID)
	})
}

// Finding 11: webhooks. An updated event set a provider timeout on a paused
// session; an event for a session mid-operation was claimed, so its
// redelivery after the operation settled was swallowed as a duplicate.
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
		// Old code: sandbox_expires_at = at + 1 h on a paused session.
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
		// Old code: the first delivery claimed the event id; this one was a duplicate
		// and the session stayed paused while its sandbox ran.
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
