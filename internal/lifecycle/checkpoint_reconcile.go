package lifecycle

import (
	"context"
	"errors"
)

// ReconcileCheckpoint resolves a checkpoint whose lease ran out while it
// was saving (the sweep finds it: CheckpointStore.FindCheckpointsDue): its
// save job died or was lost. A snapshot is looked for by its ref, else by
// its name among its sandbox's (a crash between the provider's snapshot
// and the table write leaves one nobody recorded): ready → the checkpoint
// is ready; still saving → its lease is renewed; failed or none → the
// checkpoint is failed and any snapshot of its name deleted, so none is
// left billed that no checkpoint accounts for. An archive is failed (a
// save that died stored nothing visible) and its key deleted. It returns
// whether c changed. Errors: transient (the next sweep tries again).
func (s *Service) ReconcileCheckpoint(ctx context.Context, c *Checkpoint) (bool, error) {
	ctx = WithCallPriority(ctx, PriorityBackground)
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok || c.State != CheckpointSaving || s.now().Before(c.LeaseExpiresAt) {
		return false, nil
	}
	if c.Kind == KindArchive {
		s.failCheckpoint(ctx, cs, c, "the save did not finish within its lease")
		if c.State == CheckpointFailed {
			s.deleteArchive(ctx, c)
		}
		return c.State == CheckpointFailed, nil
	}
	sn, ok := As[Snapshotter](s.providerFor(c.Provider))
	if !ok {
		s.failCheckpoint(ctx, cs, c, "the "+c.Provider+" provider has no snapshots")
		return c.State == CheckpointFailed, nil
	}
	snap, found, err := s.findSnapshot(ctx, sn, c)
	if err != nil {
		return false, s.providerError(err, "look for the checkpoint's snapshot")
	}
	switch {
	case found && snap.State == SnapshotReady:
		next := c.Clone()
		next.ProviderRef, next.SizeBytes, next.ExpiresAt = snap.Ref, snap.SizeBytes, snap.ExpiresAt
		if snap.Keeps != "" {
			next.Keeps = snap.Keeps
		}
		if err := s.settleReady(ctx, cs, c, next); err != nil {
			return false, err
		}
		return c.State == CheckpointReady, nil
	case found && snap.State == SnapshotSaving:
		next := c.Clone()
		next.ProviderRef, next.UpdatedAt, next.LeaseExpiresAt = snap.Ref, s.now(), s.now().Add(s.checkpointLease())
		if err := cs.UpdateCheckpoint(ctx, next, CheckpointSaving); err != nil {
			return false, raced(err)
		}
		*c = *next
		return true, nil
	}
	s.failCheckpoint(ctx, cs, c, "the save did not finish within its lease")
	if c.State != CheckpointFailed {
		return false, nil
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	refs, err := s.snapshotsNamed(pctx, sn, c)
	if err != nil && !errors.Is(err, ErrSandboxGone) {
		s.log().WarnContext(ctx, "look for the snapshots of a failed checkpoint", "checkpoint_id", c.ID, "err", err)
	}
	for _, ref := range append(refs, snap.Ref) {
		s.deleteSnapshotQuietly(ctx, sn, ref)
	}
	return true, nil
}

// FindCheckpointsDue returns one page of the saving checkpoints whose
// lease expired (CheckpointStore.FindCheckpointsDue): the sweep's work
// list; nothing when the store keeps no checkpoints. Errors: the store's.
func (s *Service) FindCheckpointsDue(ctx context.Context, q CheckpointDueQuery) (CheckpointPage, error) {
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok {
		return CheckpointPage{}, nil
	}
	return cs.FindCheckpointsDue(ctx, q)
}
