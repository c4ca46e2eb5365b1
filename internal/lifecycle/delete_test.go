package lifecycle_test

import (
	"context"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
)

// stormStore lets a snapshot or a resume commit just before each of the
// first n writes of killed, so every such write finds a newer version:
// a delete racing a storm of snapshots and resumes.
type stormStore struct {
	*memstore.Store
	svc *lifecycle.Service
	n   int
}

func (s *stormStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if sess.State == lifecycle.StateKilled && s.n > 0 {
		s.n--
		cur, err := s.Store.GetSession(ctx, sess.ID)
		if err != nil {
			return err
		}
		if cur.State == lifecycle.StatePaused {
			_, err = s.svc.Resume(ctx, cur.AccountID, cur.ID)
		} else {
			_, err = s.svc.PauseNow(ctx, cur.AccountID, cur.ID)
		}
		if err != nil {
			return err
		}
	}
	return s.Store.UpdateSession(ctx, sess, from, guard)
}

// TestDeleteWinsOverTransitionsInFlight: a delete that keeps losing its
// conditional write to snapshots and resumes re-reads and writes again
// until the session is killed (docs/DESIGN.md "Session states"); it never
// answers a conflict, and the sandbox is killed.
func TestDeleteWinsOverTransitionsInFlight(t *testing.T) {
	e := newEnv(t)
	storm := &stormStore{Store: e.store, n: 12}
	e.svc = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(storm, e.events), Provider: e.fake,
		Clock: e.clock, Log: e.svc.Config().Log, Sleep: e.svc.Config().Sleep})
	storm.svc = e.svc
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	got, err := e.svc.Delete(t.Context(), acct, sess.ID)
	if err != nil {
		t.Fatalf("delete during a storm of snapshots and resumes: %v", err)
	}
	if got.State != lifecycle.StateKilled || e.mustGet(t, sess.ID).State != lifecycle.StateKilled {
		t.Errorf("answered %s, stored %s; want killed", got.State, e.mustGet(t, sess.ID).State)
	}
	if storm.n != 0 {
		t.Fatalf("%d interfering transitions left: the storm did not happen", storm.n)
	}
	if st := e.sandboxState(got.SandboxID); st != "gone" {
		t.Errorf("sandbox %s, want gone (killed)", st)
	}
}
