package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// Regression tests that need the whole service on DynamoDB Local.

// createCrashPoints are the steps of a create at which its process may die,
// each leaving its Idempotency-Key claimed: before the session is written,
// at the provider call, after the provider made the sandbox.
var createCrashPoints = []struct {
	name string
	at   func(reliability.Step) bool
}{
	{"BeforeSessionWritten", writeStep("", lifecycle.StateProvisioning)},
	{"AtProviderCreate", callStep("create")},
	{"AfterProviderCreate", writeStep(lifecycle.StateProvisioning, lifecycle.StateRunning)},
}

// dyingCreate runs one create with an Idempotency-Key in a process that dies
// at step at, and returns the id of the session it meant to write.
func dyingCreate(t *testing.T, w *world, key string, at func(reliability.Step) bool) string {
	t.Helper()
	crasher := &reliability.Crasher{At: at}
	var id string
	var mu sync.Mutex
	dying := lifecycle.NewService(lifecycle.Config{Store: crasher.Store(w.store), Provider: crasher.Provider(w.fake),
		Clock: w.clock, Policy: w.svc.Policy(), Log: quiet(),
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			id = lifecycle.NewSessionID()
			return id
		}})
	_, _, err := dying.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	if !errors.Is(err, reliability.ErrCrashed) {
		t.Errorf("create %s returned %v, want the crash", key, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return id
}

// checkKeyResolved retries a create with key and fails the test unless the
// key replays a live session or accepts a fresh create.
func checkKeyResolved(t *testing.T, w *world, key string) *lifecycle.Session {
	t.Helper()
	sess, replayed, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	switch {
	case err != nil:
		t.Errorf("key %s after the lease: %v (code %s), want a replay of a live session or a fresh create", key, err, lifecycle.ErrorCode(err))
		return nil
	case sess.State != lifecycle.StateRunning:
		t.Errorf("key %s after the lease: replayed=%v a %s session (reason %s), want running", key, replayed, sess.State, sess.Reason)
	}
	again, replayed, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	if err != nil || !replayed || again.ID != sess.ID {
		t.Errorf("key %s retried once more: %v replayed=%v, want a replay of %s", key, err, replayed, sess.ID)
	}
	return sess
}

// TestCreateClaimReleasedWhenSessionNeverWritten: a create that dies after
// claiming its Idempotency-Key (before its session is written, at the
// provider, or after the provider made the sandbox) no longer strands the
// key: before the lease a retry hears "still in progress", after it the key
// replays a live session or takes a fresh create, with or without a sweep
// in between, and no sandbox of the dead create is left.
func TestCreateClaimReleasedWhenSessionNeverWritten(t *testing.T) {
	for _, cp := range createCrashPoints {
		for _, sweepFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/Sweep=%v", cp.name, sweepFirst), func(t *testing.T) {
				w := MustWorld(t, 1)
				key := "key-" + cp.name
				dead := dyingCreate(t, w, key, cp.at)

				_, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
				if !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Fatalf("retry within the lease: %v, want conflict (still in progress)", err)
				}

				w.clock.Advance(w.svc.Policy().LeaseDuration + time.Second)
				if sweepFirst {
					w.MustSweep(t)
				}
				sess := checkKeyResolved(t, w, key)
				if sess != nil && sess.ID == dead {
					t.Errorf("the key replays the dead create's session %s", dead)
				}
				if left := sandboxesTagged(w, dead); len(left) != 0 {
					t.Errorf("sandboxes %v of the dead create are left", left)
				}
			})
		}
	}
}

// TestCrashMidCreateEveryKeyResolves is the crash test of Idempotency-Key claims: many
// creates, each with its own Idempotency-Key, are in flight when their
// process dies (at every crash point); after the lease every key either
// replays a live session or accepts a fresh create, and no sandbox leaks.
func TestCrashMidCreateEveryKeyResolves(t *testing.T) {
	w := MustWorld(t, 1)
	const clients = 24
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			dyingCreate(t, w, fmt.Sprintf("burst-%d", i), createCrashPoints[i%len(createCrashPoints)].at)
		})
	}
	wg.Wait()
	w.clock.Advance(w.svc.Policy().LeaseDuration + time.Second)
	w.MustSweep(t)
	live := map[string]bool{}
	var mu sync.Mutex
	for i := range clients {
		wg.Go(func() {
			if sess := checkKeyResolved(t, w, fmt.Sprintf("burst-%d", i)); sess != nil {
				mu.Lock()
				live[sess.SandboxID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, sb := range w.fake.Sandboxes() {
		if sb.State != "gone" && !live[sb.ID] {
			t.Errorf("sandbox %s (%s, session %s) belongs to no live session", sb.ID, sb.State, sb.Metadata[lifecycle.MetadataSessionID])
		}
	}
}

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
			wg.Go(func() { _, _ = w.svc.Snapshot(t.Context(), account, sess.ID) })
		}
		wg.Wait()
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

// templateProvider is the fake provider with a fixed list of templates it
// can check up front, as the local provider does.
type templateProvider struct{ *fake.Provider }

func (p templateProvider) CheckTemplate(_ context.Context, template string) error {
	if template != "base" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "unknown template %q", template)
	}
	return nil
}

// TestUnknownTemplateLeavesNoSession: a create naming a template the
// provider does not have is refused before anything is written: no session
// in the list, no provider call, the Idempotency-Key still free.
func TestUnknownTemplateLeavesNoSession(t *testing.T) {
	w := MustWorld(t, 1)
	svc := lifecycle.NewService(lifecycle.Config{Store: w.store, Provider: templateProvider{w.fake}, Clock: w.clock, Policy: w.svc.Policy(), Log: quiet()})
	_, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "nope", IdempotencyKey: "k"})
	if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Fatalf("create with an unknown template: %v, want invalid", err)
	}
	page, err := svc.List(t.Context(), account, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 0 {
		t.Errorf("list holds %d sessions (first %s, %s), want none", len(page.Sessions), page.Sessions[0].ID, page.Sessions[0].State)
	}
	if got := w.fake.Calls(fake.OpCreate); got != 0 {
		t.Errorf("provider creates = %d, want 0", got)
	}
	sess, replayed, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k"})
	if err != nil || replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("create with the same key and a real template: %v, replayed %v", err, replayed)
	}
}
