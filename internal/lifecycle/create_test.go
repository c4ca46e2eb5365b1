package lifecycle_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

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

// cancelAfterCreate cancels the request's context right after the provider
// made the sandbox, as API Gateway's 29 s timeout or a client disconnect
// would.
type cancelAfterCreate struct {
	lifecycle.Provider
	cancel context.CancelFunc
}

func (p *cancelAfterCreate) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	sb, err := p.Provider.Create(ctx, req)
	p.cancel()
	return sb, err
}

// TestCreateRecordsOutcomeAfterCallerCancels: the write recording a
// successful provider create does not run on the request's context, so a
// caller that gives up does not lose the session.
func TestCreateRecordsOutcomeAfterCallerCancels(t *testing.T) {
	w := MustWorld(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w.rewire(t, func(c *lifecycle.Config) { c.Provider = &cancelAfterCreate{Provider: c.Provider, cancel: cancel} })
	// The running write does not fail with "context canceled" (which would kill
	// the sandbox and answer 500).
	sess, _, err := w.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"})
	if ctx.Err() == nil {
		t.Fatal("the request context was not cancelled: the test did not test anything")
	}
	if err != nil {
		t.Fatalf("create: %v (code %s)", err, lifecycle.ErrorCode(err))
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateRunning || got.SandboxID == "" {
		t.Errorf("stored %s with sandbox %q, want running with its sandbox", got.State, got.SandboxID)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
		t.Errorf("provider sandbox %s, want running", st)
	}
	w.MustHistory(t, sess.ID)
}
