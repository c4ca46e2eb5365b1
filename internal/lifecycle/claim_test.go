package lifecycle_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

func TestCreateIdempotencyKey(t *testing.T) {
	t.Run("ReplayReturnsTheFirstSession", func(t *testing.T) {
		e := newEnv(t)
		first := e.mustCreate(t, lifecycle.CreateInput{IdempotencyKey: "k1"})
		again, replayed, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "other", IdempotencyKey: "k1"})
		if err != nil || !replayed || again.ID != first.ID {
			t.Fatalf("replay = %v, %v, %v; want the first session replayed", again, replayed, err)
		}
		if n := e.fake.Calls(fake.OpCreate); n != 1 {
			t.Errorf("provider creates = %d, want 1", n)
		}
	})
	t.Run("OtherAccountIsNotAReplay", func(t *testing.T) {
		e := newEnv(t)
		first := e.mustCreate(t, lifecycle.CreateInput{IdempotencyKey: "k1"})
		other, replayed, err := e.svc.Create(t.Context(), "acct_2", lifecycle.CreateInput{Template: "base", IdempotencyKey: "k1"})
		if err != nil || replayed || other.ID == first.ID {
			t.Fatalf("other account: %v, replayed %v, %v; want a new session", other, replayed, err)
		}
	})
	t.Run("FailedCreateGivesTheKeyBack", func(t *testing.T) {
		e := newEnv(t)
		e.fake.FailNext(fake.OpCreate, lifecycle.ErrSandboxConflict)
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k2"})
		if lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Fatalf("failed create: %v, want conflict", err)
		}
		sess, replayed, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k2"})
		if err != nil || replayed || sess.State != lifecycle.StateRunning {
			t.Fatalf("retry: %v, replayed %v, %v; want a new running session", sess, replayed, err)
		}
	})
	t.Run("ReplayDuringCreateIsStillInProgress", func(t *testing.T) {
		e := newEnv(t)
		var inner *lifecycle.Session
		var replayed bool
		var err error
		e.fake.SetOnCall(func(op fake.Op, _ string) {
			if op == fake.OpCreate && inner == nil {
				e.fake.SetOnCall(nil)
				inner, replayed, err = e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k3"})
			}
		})
		first := e.mustCreate(t, lifecycle.CreateInput{IdempotencyKey: "k3"})
		// The first create holds the key and is under way (provisioning,
		// within its lease): the retry is told to come back (409,
		// Retry-After 1 s), and then replays the first session.
		if !lifecycle.IsCode(err, lifecycle.CodeConflict) || inner != nil || replayed {
			t.Fatalf("create during the first: %+v, replayed %v, %v; want conflict (still in progress)", inner, replayed, err)
		}
		again, replayed, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k3"})
		if err != nil || !replayed || again.ID != first.ID {
			t.Fatalf("retry after the first: %v, replayed %v, %v; want the first replayed", again, replayed, err)
		}
		if n := e.fake.Calls(fake.OpCreate); n != 1 {
			t.Errorf("provider creates = %d, want 1", n)
		}
	})
}

// TestIdempotencyKeyReleasedAfterStoreFailure: an Idempotency-Key claimed by
// a create whose CreateSession failed is released, so a retry with that key
// is not blocked for the claim's 24 h.
func TestIdempotencyKeyReleasedAfterStoreFailure(t *testing.T) {
	w := MustWorld(t)
	var once sync.Once
	w.rec.SetRefuse(func(_ *lifecycle.Session, from lifecycle.State) error {
		var err error
		if from == "" {
			once.Do(func() { err = errors.New("ProvisionedThroughputExceededException (injected)") })
		}
		return err
	})
	in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-store"}
	if _, _, err := w.svc.Create(t.Context(), acct, in); err == nil {
		t.Fatal("first create: want the injected store error")
	}
	// Not 409 "still in progress" until the claim expires: the retry creates.
	sess, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("retry with the same key: %v (code %s)", err, lifecycle.ErrorCode(err))
	}
	if replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("retry: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
	}
	again, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !replayed || again.ID != sess.ID {
		t.Errorf("replay: replayed=%v id=%s, want a replay of %s", replayed, again.ID, sess.ID)
	}
	if got, want := w.fake.Calls(fake.OpCreate), 1; got != want {
		t.Errorf("provider creates = %d, want %d", got, want)
	}
}

// TestIdempotencyKeyReleasedAfterProviderFailure: retrying with the same
// Idempotency-Key a create that answered 503 tries again instead of
// replaying the failed session.
func TestIdempotencyKeyReleasedAfterProviderFailure(t *testing.T) {
	w := MustWorld(t)
	w.fake.FailNext(fake.OpCreate, nil)
	in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-provider"}
	_, _, err := w.svc.Create(t.Context(), acct, in)
	if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
		t.Fatalf("first create: code %s (%v), want %s", got, err, want)
	}
	// A second provider create, not 200 with replayed=true and the failed session.
	sess, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("retry: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
	}
	if got, want := w.fake.Calls(fake.OpCreate), 2; got != want {
		t.Errorf("provider creates = %d, want %d", got, want)
	}
	running := 0
	page, err := w.store.ListSessions(t.Context(), acct, "", lifecycle.MaxListLimit)
	if err != nil {
		t.Fatalf("list sessions: %v", err)
	}
	for _, s := range page.Sessions {
		if s.State == lifecycle.StateRunning {
			running++
		}
	}
	if got, want := running, 1; got != want {
		t.Errorf("running sessions = %d, want %d", got, want)
	}
	if got, want := len(w.fake.Sandboxes()), 1; got != want {
		t.Errorf("provider sandboxes = %d, want %d", got, want)
	}
}
