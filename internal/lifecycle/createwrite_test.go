package lifecycle_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
)

// stallStore makes the first create's write of running answer a timeout:
// after committing it (committed) or without committing it; with readsFail,
// reads of that session time out too (the table is stalled).
type stallStore struct {
	*memstore.Store
	mu         sync.Mutex
	committed  bool
	readsFail  bool
	stalledIDs map[string]bool
}

func errStall() error {
	return &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: "the session store did not answer in time (injected)"}
}

func (s *stallStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	s.mu.Lock()
	stall := from == lifecycle.StateProvisioning && sess.State == lifecycle.StateRunning && len(s.stalledIDs) == 0
	if stall {
		s.stalledIDs[sess.ID] = true
	}
	s.mu.Unlock()
	if !stall {
		return s.Store.UpdateSession(ctx, sess, from, guard)
	}
	if s.committed {
		if err := s.Store.UpdateSession(ctx, sess, from, guard); err != nil {
			return err
		}
	}
	return errStall()
}

func (s *stallStore) GetSession(ctx context.Context, id string) (*lifecycle.Session, error) {
	s.mu.Lock()
	fail := s.readsFail && s.stalledIDs[id]
	s.mu.Unlock()
	if fail {
		return nil, errStall()
	}
	return s.Store.GetSession(ctx, id)
}

func newStallEnv(t *testing.T, committed, readsFail bool) (*env, *stallStore) {
	e := newEnv(t)
	st := &stallStore{Store: e.store, committed: committed, readsFail: readsFail, stalledIDs: map[string]bool{}}
	e.svc = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(st, e.events), Provider: e.fake,
		Clock: e.clock, Log: e.svc.Config().Log, Sleep: e.svc.Config().Sleep})
	return e, st
}

// TestCreateRunningWriteUnknownOutcome: a write of running that answers a
// timeout may have committed. It is not a conflict: the create re-reads
// before it kills anything, and when it cannot tell, it leaves the session
// to its lease and the sweep instead of killing a sandbox the table may
// record as running.
func TestCreateRunningWriteUnknownOutcome(t *testing.T) {
	t.Run("CommittedIsSuccess", func(t *testing.T) {
		e, _ := newStallEnv(t, true, false)
		sess, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k1"})
		if err != nil {
			t.Fatalf("create whose running write committed but timed out: %v", err)
		}
		if sess.State != lifecycle.StateRunning || e.mustGet(t, sess.ID).State != lifecycle.StateRunning {
			t.Errorf("answered %s, stored %s; want running", sess.State, e.mustGet(t, sess.ID).State)
		}
		if st := e.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
			t.Errorf("sandbox %s, want running (a committed create must not kill its sandbox)", st)
		}
	})
	t.Run("NotCommittedKeepsSandboxUntilLease", func(t *testing.T) {
		e, _ := newStallEnv(t, false, false)
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k2"})
		if !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
			t.Fatalf("err %v, want unavailable (the outcome is unknown to the caller)", err)
		}
		sessions := allSessions(t, e.store)
		if len(sessions) != 1 || sessions[0].State != lifecycle.StateProvisioning {
			t.Fatalf("sessions %v, want one provisioning", sessions)
		}
		// The retry with the same key resolves: in progress during the
		// lease, then a new attempt once the lease has settled it failed.
		if _, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k2"}); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("retry during the lease: %v, want conflict (in progress)", err)
		}
		e.clock.Advance(lifecycle.DefaultPolicy().LeaseDuration)
		again, replayed, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k2"})
		if err != nil || replayed || again.State != lifecycle.StateRunning {
			t.Fatalf("retry after the lease: %v replayed=%v, want a new running session", err, replayed)
		}
		if got := e.mustGet(t, sessions[0].ID).State; got != lifecycle.StateFailed {
			t.Errorf("the stalled session is %s, want failed (never expired)", got)
		}
	})
	t.Run("UnreadableLeftToLease", func(t *testing.T) {
		e, _ := newStallEnv(t, true, true)
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k3"})
		if !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
			t.Fatalf("err %v, want unavailable", err)
		}
		sessions := allSessions(t, e.store)
		if len(sessions) != 1 {
			t.Fatalf("%d sessions, want 1", len(sessions))
		}
		got := sessions[0]
		if got.State != lifecycle.StateRunning || e.sandboxState(got.SandboxID) != lifecycle.SandboxRunning {
			t.Errorf("stored %s with sandbox %s; want running with its sandbox alive", got.State, e.sandboxState(got.SandboxID))
		}
	})
}

// allSessions returns acct's sessions in st, newest first.
func allSessions(t *testing.T, st *memstore.Store) []*lifecycle.Session {
	t.Helper()
	page, err := st.ListSessions(t.Context(), acct, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	return page.Sessions
}
