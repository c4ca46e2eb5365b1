package reliability_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestDeleteRecognisesOwnKillWebhook: the provider's "killed" webhook for
// a kill Sandman asked for lands between the provider call and Sandman's own
// write. The session goes running → killed for the
// request, never through expired, and no Session Expired event is published.
func TestDeleteRecognisesOwnKillWebhook(t *testing.T) {
	w := MustWorld(t, 1)
	sess := w.MustCreate(t, 600)
	var hookErr error
	var once sync.Once
	w.fake.SetOnCall(func(op fake.Op, id string) {
		if op != fake.OpKill || id != sess.SandboxID {
			return
		}
		once.Do(func() {
			_, hookErr = w.svc.ApplyProviderEvent(context.Background(), lifecycle.ProviderEvent{
				ID: "evt_own_kill", Provider: w.fake.Name(), Type: lifecycle.ProviderEventKilled,
				SandboxID: sess.SandboxID, Timestamp: w.clock.Now(), KillReason: "request",
			})
		})
	})
	got, err := w.svc.Delete(t.Context(), account, sess.ID)
	w.fake.SetOnCall(nil)
	if err != nil || hookErr != nil {
		t.Fatalf("delete: %v; webhook: %v", err, hookErr)
	}
	if got.State != lifecycle.StateKilled || got.Reason != lifecycle.ReasonRequest {
		t.Errorf("delete answered %s (reason %s), want killed (request)", got.State, got.Reason)
	}
	for _, ev := range w.events.For(sess.ID) {
		if ev.To == lifecycle.StateExpired {
			t.Errorf("event %s→%s (%s) published for a delete", ev.From, ev.To, ev.Reason)
		}
	}
	if st := w.sandboxState(sess.SandboxID); st != "gone" {
		t.Errorf("provider %s, want gone", st)
	}
	w.MustHistory(t, sess.ID)
}

// racingStore makes the next writes of a session lose their race: before
// each of the first len(moves) writes to killed, moves[i] commits a
// competing write through the underlying store.
type racingStore struct {
	lifecycle.Store
	mu    sync.Mutex
	moves []func(ctx context.Context, s *lifecycle.Session) error
}

func (r *racingStore) UpdateSession(ctx context.Context, s *lifecycle.Session, from lifecycle.State, g lifecycle.Guard) error {
	r.mu.Lock()
	var move func(context.Context, *lifecycle.Session) error
	if s.State == lifecycle.StateKilled && len(r.moves) > 0 {
		move, r.moves = r.moves[0], r.moves[1:]
	}
	r.mu.Unlock()
	if move != nil {
		cur, err := r.Store.GetSession(ctx, s.ID)
		if err != nil {
			return err
		}
		if err := move(ctx, cur); err != nil {
			return fmt.Errorf("competing write: %w", err)
		}
	}
	return r.Store.UpdateSession(ctx, s, from, g)
}

// TestConcurrentDeleteAnswersKilled: a delete whose last attempt loses its
// race to another delete answers 200 with the killed session, not 409
// "changed meanwhile … found killed".
func TestConcurrentDeleteAnswersKilled(t *testing.T) {
	w := MustWorld(t, 1)
	sess := w.MustCreate(t, 600)
	touch := func(ctx context.Context, cur *lifecycle.Session) error { // another writer, e.g. a heartbeat
		cur.UpdatedAt = cur.UpdatedAt.Add(time.Millisecond)
		return w.store.UpdateSession(ctx, cur, cur.State, lifecycle.Guard{})
	}
	otherDelete := func(ctx context.Context, cur *lifecycle.Session) error {
		from := cur.State
		if err := cur.Transition(lifecycle.StateKilled, lifecycle.ReasonRequest, w.clock.Now(), w.svc.Policy()); err != nil {
			return err
		}
		return w.store.UpdateSession(ctx, cur, from, lifecycle.Guard{})
	}
	racing := &racingStore{Store: w.store, moves: []func(context.Context, *lifecycle.Session) error{touch, touch, otherDelete}}
	svc := lifecycle.NewService(lifecycle.Config{Store: racing, Provider: w.fake, Clock: w.clock, Policy: w.svc.Policy(), Log: quiet()})
	got, err := svc.Delete(t.Context(), account, sess.ID)
	if err != nil {
		t.Fatalf("delete that lost to another delete: %v (code %s), want the killed session", err, lifecycle.ErrorCode(err))
	}
	if got.State != lifecycle.StateKilled {
		t.Errorf("delete answered %s, want killed", got.State)
	}

	t.Run("Parallel", func(t *testing.T) {
		sess := w.MustCreate(t, 600)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				got, err := w.svc.Delete(t.Context(), account, sess.ID)
				if err != nil || got.State != lifecycle.StateKilled {
					t.Errorf("parallel delete: %v, want the killed session", err)
				}
			})
			wg.Go(func() { _, _ = w.svc.PauseNow(t.Context(), account, sess.ID) })
		}
		wg.Wait()
		w.MustHistory(t, sess.ID)
	})
}

// TestKilledSessionStatusAndReconnectShowNoURL: after a delete, status shows
// no preview_url and no sandbox_expires_at, and reconnect answers
// no_sandbox without the dead URL.
func TestKilledSessionStatusAndReconnectShowNoURL(t *testing.T) {
	w := MustWorld(t, 1)
	sess := w.MustCreate(t, 600)
	if _, err := w.svc.Delete(t.Context(), account, sess.ID); err != nil {
		t.Fatal(err)
	}
	got, env, err := w.svc.Status(t.Context(), account, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.PreviewURL != "" || !got.SandboxExpiresAt.IsZero() || !env.SandboxExpiresAt.IsZero() {
		t.Errorf("killed session: preview_url %q, sandbox_expires_at %v (envelope %v), want neither",
			got.PreviewURL, got.SandboxExpiresAt, env.SandboxExpiresAt)
	}
	res, err := w.svc.Reconnect(t.Context(), account, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != lifecycle.ReconnectNoSandbox || res.Session.PreviewURL != "" {
		t.Errorf("reconnect: %s with preview_url %q, want no_sandbox and none", res.Status, res.Session.PreviewURL)
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
