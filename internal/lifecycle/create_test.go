package lifecycle_test

import (
	"context"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

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
