package reliability

import (
	"context"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The checkpoints of a dying process (Crasher.Store, Crasher.Provider):
// every checkpoint write is a step (StepCheckpointWrite), every snapshot
// call too; reads fail once the process is dead.

var _ lifecycle.CheckpointStore = (*crashStore)(nil)

func (s *crashStore) checkpointStep(c *lifecycle.Checkpoint, to lifecycle.CheckpointState) error {
	return s.c.step(Step{Op: StepCheckpointWrite, SessionID: c.SessionID, CheckpointID: c.ID, Checkpoint: to})
}

func (s *crashStore) CreateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint) error {
	if err := s.checkpointStep(c, c.State); err != nil {
		return err
	}
	return s.cs.CreateCheckpoint(ctx, c)
}

func (s *crashStore) UpdateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint, from lifecycle.CheckpointState) error {
	if err := s.checkpointStep(c, c.State); err != nil {
		return err
	}
	return s.cs.UpdateCheckpoint(ctx, c, from)
}

func (s *crashStore) DeleteCheckpoint(ctx context.Context, c *lifecycle.Checkpoint) error {
	if err := s.checkpointStep(c, ""); err != nil {
		return err
	}
	return s.cs.DeleteCheckpoint(ctx, c)
}

func (s *crashStore) GetCheckpoint(ctx context.Context, sessionID, id string) (*lifecycle.Checkpoint, error) {
	if err := s.c.alive(); err != nil {
		return nil, err
	}
	return s.cs.GetCheckpoint(ctx, sessionID, id)
}

func (s *crashStore) ListCheckpoints(ctx context.Context, sessionID, cursor string, limit int) (lifecycle.CheckpointPage, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.CheckpointPage{}, err
	}
	return s.cs.ListCheckpoints(ctx, sessionID, cursor, limit)
}

func (s *crashStore) FindCheckpointsDue(ctx context.Context, q lifecycle.CheckpointDueQuery) (lifecycle.CheckpointPage, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.CheckpointPage{}, err
	}
	return s.cs.FindCheckpointsDue(ctx, q)
}

// crashSnapshotter is the crashProvider of a lifecycle.Snapshotter.
type crashSnapshotter struct {
	*crashProvider
	sn lifecycle.Snapshotter
}

var _ lifecycle.Snapshotter = (*crashSnapshotter)(nil)

func (p *crashSnapshotter) SnapshotCaps() lifecycle.SnapshotCaps { return p.sn.SnapshotCaps() }

func (p *crashSnapshotter) Snapshot(ctx context.Context, sandboxID string, req lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	if err := p.call("snapshot", sandboxID); err != nil {
		return lifecycle.Snapshot{}, err
	}
	return p.sn.Snapshot(ctx, sandboxID, req)
}

func (p *crashSnapshotter) GetSnapshot(ctx context.Context, ref string) (lifecycle.Snapshot, error) {
	if err := p.call("get_snapshot", ""); err != nil {
		return lifecycle.Snapshot{}, err
	}
	return p.sn.GetSnapshot(ctx, ref)
}

func (p *crashSnapshotter) ListSnapshots(ctx context.Context, sandboxID string) ([]lifecycle.Snapshot, error) {
	if err := p.call("list_snapshots", sandboxID); err != nil {
		return nil, err
	}
	return p.sn.ListSnapshots(ctx, sandboxID)
}

func (p *crashSnapshotter) DeleteSnapshot(ctx context.Context, ref string) error {
	if err := p.call("delete_snapshot", ""); err != nil {
		return err
	}
	return p.sn.DeleteSnapshot(ctx, ref)
}

func (p *crashSnapshotter) CreateFromSnapshot(ctx context.Context, ref string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if err := p.call("create_from_snapshot", ""); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return p.sn.CreateFromSnapshot(ctx, ref, req)
}

// crashFiles is the crashSnapshotter of a provider with files too: each
// file call is a step ("write_file", "read_file").
type crashFiles struct {
	*crashSnapshotter
	f lifecycle.Files
}

var _ lifecycle.Files = (*crashFiles)(nil)

func (p *crashFiles) WriteFile(ctx context.Context, sandboxID, path string, data []byte) error {
	if err := p.call("write_file", sandboxID); err != nil {
		return err
	}
	return p.f.WriteFile(ctx, sandboxID, path, data)
}

func (p *crashFiles) ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error) {
	if err := p.call("read_file", sandboxID); err != nil {
		return nil, err
	}
	return p.f.ReadFile(ctx, sandboxID, path)
}
