package daytonatest

import (
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// SandboxFault is fakekit's: the faults Inject takes, by name ("gone",
// "foreign", "partial", "snapshot_expired", "snapshot_fail",
// "snapshot_slow", "restore_slow").
type SandboxFault = fakekit.SandboxFault

// Inject switches the sandbox fault f on sandbox id (fakekit.Injector; the
// control route POST /_fake/sandboxes/{id}/faults):
//   - gone: the sandbox leaves the fake (404 "Sandbox with ID … not found");
//   - foreign: its files become another session's (fakekit.Foreign);
//   - partial: its identity marker and workspace are removed;
//   - snapshot_expired: every snapshot taken of it is removed (a create
//     from one answers 400 "Snapshot … not found", Daytona's answer for a
//     deleted snapshot; docs/providers/daytona.md "Checkpoints");
//   - snapshot_fail: its captures end with the snapshot in state error
//     (Sandbox.SnapshotFault) until Clear;
//   - snapshot_slow: its captures take delay on the fake's clock
//     (Sandbox.SnapshotTime) until Clear;
//   - restore_slow: a sandbox made from one of its snapshots stays
//     creating for delay on the fake's clock, until Clear.
func (s *Server) Inject(id string, f fakekit.SandboxFault, delay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes.Get(id)
	if !ok {
		return fakekit.NoSandbox(id)
	}
	switch f {
	case fakekit.FaultGone:
		s.sandboxes.Delete(id)
	case fakekit.FaultForeign:
		sb.files = fakekit.Foreign()
	case fakekit.FaultPartial:
		sb.files = fakekit.Partial(sb.fs())
	case fakekit.FaultSnapshotExpired:
		for _, sn := range s.snapshots.All() {
			if sn.SourceSandboxID == id {
				s.dropSnapshot(sn)
			}
		}
	case fakekit.FaultSnapshotFail:
		sb.SnapshotFault = SnapshotFailError
	case fakekit.FaultSnapshotSlow:
		sb.SnapshotTime = delay
	case fakekit.FaultRestoreSlow:
		s.switches.Set(id, f, delay)
	default:
		return fakekit.UnknownFault(f)
	}
	return nil
}

// Clear switches the standing sandbox faults of id off.
func (s *Server) Clear(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb, ok := s.sandboxes.Get(id); ok {
		sb.SnapshotFault, sb.SnapshotTime = "", 0
	}
	s.switches.Clear(id)
}

// restoreTime is how long a sandbox made from the snapshot name takes to
// come up: its source's restore_slow delay, else Config.CreateTime.
// Callers hold mu.
func (s *Server) restoreTime(name string) time.Duration {
	if sn := s.findSnapshot(name); sn != nil {
		if d, ok := s.switches.On(sn.SourceSandboxID, fakekit.FaultRestoreSlow); ok {
			return d
		}
	}
	return s.opts.CreateTime
}
