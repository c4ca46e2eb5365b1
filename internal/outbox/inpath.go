package outbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// InPath returns store with in-path publishing: each committed transition's
// event (lifecycle.NewEvent, the same event and event_id the stream yields)
// is published through pub right after its write returns, on the request's
// path, as the functions did before the outbox. A function that dies
// between the write and the publish loses the event, so production never
// uses it: it is the baseline of `make bench` (request latency with
// publishing in-path vs via the stream) and a way for handler tests to
// observe transitions without reading a stream. A publish failure is
// logged, never returned: the write has committed.
// A store that keeps warm pools (lifecycle.PoolStore) stays one, and a
// claim publishes its session's creation like CreateSession; its
// checkpoints pass through, a checkpoint that becomes ready or failed
// publishing its event.
func InPath(store lifecycle.Store, pub lifecycle.Publisher) lifecycle.Store {
	s := &inPathStore{Store: store, CheckpointStore: lifecycle.CheckpointsOf(store), pub: pub}
	if ps, ok := store.(lifecycle.PoolStore); ok {
		return &inPathPoolStore{inPathStore: s, PoolStore: ps}
	}
	return s
}

type inPathPoolStore struct {
	*inPathStore
	lifecycle.PoolStore
}

func (s *inPathPoolStore) ClaimSpare(ctx context.Context, sp *lifecycle.Spare, sess *lifecycle.Session) error {
	if err := s.PoolStore.ClaimSpare(ctx, sp, sess); err != nil {
		return err
	}
	s.publish(ctx, lifecycle.NewEvent(sess, ""))
	return nil
}

type inPathStore struct {
	lifecycle.Store
	lifecycle.CheckpointStore
	pub lifecycle.Publisher
}

var _ lifecycle.CheckpointStore = (*inPathStore)(nil)

func (s *inPathStore) CreateSession(ctx context.Context, sess *lifecycle.Session) error {
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return err
	}
	s.publish(ctx, lifecycle.NewEvent(sess, ""))
	return nil
}

func (s *inPathStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	// A readiness event (state kept running, readiness now ready or
	// failed) needs the readiness before the write, as the stream's old
	// image has it.
	var before lifecycle.Readiness
	readiness := sess.State == from && from == lifecycle.StateRunning &&
		(sess.Readiness == lifecycle.ReadinessReady || sess.Readiness == lifecycle.ReadinessFailed)
	if readiness {
		if old, err := s.Store.GetSession(ctx, sess.ID); err == nil {
			before = old.Readiness
		}
	}
	if err := s.Store.UpdateSession(ctx, sess, from, guard); err != nil {
		return err
	}
	switch {
	case sess.State != from:
		s.publish(ctx, lifecycle.NewEvent(sess, from))
	case readiness && before != sess.Readiness:
		s.publish(ctx, lifecycle.NewReadinessEvent(sess))
	}
	return nil
}

// FindSessions lists through the wrapped store when it filters
// (lifecycle.SessionFinder). Errors: the store's; internal when it cannot.
func (s *inPathStore) FindSessions(ctx context.Context, q lifecycle.SessionQuery) (lifecycle.SessionPage, error) {
	f, ok := s.Store.(lifecycle.SessionFinder)
	if !ok {
		return lifecycle.SessionPage{}, fmt.Errorf("find sessions: the store %T cannot filter", s.Store)
	}
	return f.FindSessions(ctx, q)
}

func (s *inPathStore) publish(ctx context.Context, ev lifecycle.Event) {
	if err := s.pub.Publish(context.WithoutCancel(ctx), ev); err != nil {
		slog.Default().ErrorContext(ctx, "publish lifecycle event in path", "event_id", ev.EventID, "err", err)
	}
}

// The checkpoints of the store InPath wraps (lifecycle.CheckpointsOf): a
// write that makes a checkpoint ready or failed publishes its checkpoint
// event, as the stream does.

func (s *inPathStore) CreateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint) error {
	if err := s.CheckpointStore.CreateCheckpoint(ctx, c); err != nil {
		return err
	}
	if c.State == lifecycle.CheckpointReady || c.State == lifecycle.CheckpointFailed {
		s.publish(ctx, lifecycle.NewCheckpointEvent(c))
	}
	return nil
}

func (s *inPathStore) UpdateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint, from lifecycle.CheckpointState) error {
	if err := s.CheckpointStore.UpdateCheckpoint(ctx, c, from); err != nil {
		return err
	}
	if c.State != from && (c.State == lifecycle.CheckpointReady || c.State == lifecycle.CheckpointFailed) {
		s.publish(ctx, lifecycle.NewCheckpointEvent(c))
	}
	return nil
}
